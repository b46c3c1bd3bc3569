package snapshot

import (
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// FormatVersion is the version of the file layout this package writes and
// the only one it reads. Any change to the layout or to the header's fields
// increments it: a file of another version is refused (FormatVersionReason),
// and the informer falls back to a fresh sync. Version 2 added the
// cluster to the header and the header's own checksum.
const FormatVersion = 2

// magic opens every snapshot file; the CR LF catches text-mode mangling.
const magic = "OISNAP\r\n"

// trailerMark precedes the checksum, so that a file cut anywhere is told
// apart from one whose last record is merely short.
const trailerMark = "END\n"

// Bounds on lengths read from a file, so that a corrupt length is refused
// rather than allocated. A key is a namespace and a name (at most 253
// bytes each); the API server refuses objects of more than a few MiB.
const (
	maxKey    = 1 << 12
	maxValue  = 1 << 30
	maxHeader = 1 << 24
)

// castagnoli is the CRC-32C table, computed in hardware on amd64 and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header says what a snapshot holds. The identity fields (Resource through
// Encoding) must equal the reader's expectation byte for byte: the caller
// passes them canonical (a selector as labels.Selector.String() prints it).
type Header struct {
	// Resource names the cached resource, as schema.GroupVersionResource's
	// String prints it.
	Resource string
	// Namespace is the watched namespace, "" for all.
	Namespace string
	// LabelSelector and FieldSelector are the list options' selectors.
	LabelSelector, FieldSelector string
	// Shard is the shard selector, "" when not sharded.
	Shard string
	// Encoding names what each value holds (for example "compact/protobuf"),
	// so that a store never decodes bytes of another encoding.
	Encoding string
	// Cluster identifies the cluster the objects were read from, when the
	// informer was told one ("" otherwise): a snapshot of another cluster
	// is refused before its records are read.
	Cluster string
	// Dictionary is the compression dictionary of compressed values, kept
	// with them since they cannot be read without it; not compared.
	Dictionary []byte
	// ResourceVersion is the version the objects were all current at: the
	// store's last synced version when the snapshot was frozen. Never "".
	ResourceVersion string
	// WrittenAt is when the snapshot was frozen, for logs and metrics.
	WrittenAt time.Time
	// Count is the number of records.
	Count int
}

// identity lists the fields Reader compares, with their names for errors.
func (h *Header) identity() [7]struct{ name, value string } {
	return [7]struct{ name, value string }{
		{"resource", h.Resource},
		{"namespace", h.Namespace},
		{"label selector", h.LabelSelector},
		{"field selector", h.FieldSelector},
		{"shard", h.Shard},
		{"encoding", h.Encoding},
		{"cluster", h.Cluster},
	}
}

// Reason is why a snapshot was refused.
type Reason int

// The reasons a snapshot is refused; each is logged once by the informer,
// which then syncs as if there were no snapshot.
const (
	// MissingReason: there is no file (a first start).
	MissingReason Reason = iota + 1
	// NotSnapshotReason: the file does not start with the magic bytes.
	NotSnapshotReason
	// FormatVersionReason: the file is of another FormatVersion.
	FormatVersionReason
	// MismatchReason: the file caches another resource, namespace,
	// selector, shard or encoding (Error.Field says which).
	MismatchReason
	// TruncatedReason: the file ends before its trailer.
	TruncatedReason
	// CorruptReason: a length, the trailer or the checksum is wrong.
	CorruptReason
	// IOReason: reading or writing failed for another cause (Error.Err).
	IOReason
	// UnsafeReason: the name is not a file this package could have made
	// (a link, another user's file, a mode wider than 0600), so it is
	// neither read, written, replaced nor removed.
	UnsafeReason
)

// String names the reason the way logs print it.
func (r Reason) String() string {
	switch r {
	case MissingReason:
		return "no snapshot"
	case NotSnapshotReason:
		return "not a snapshot"
	case FormatVersionReason:
		return "another format version"
	case MismatchReason:
		return "another scope"
	case TruncatedReason:
		return "truncated"
	case CorruptReason:
		return "corrupt"
	case IOReason:
		return "i/o error"
	case UnsafeReason:
		return "not a file of ours"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Error is a refused snapshot. Its text never holds bytes read from a
// file but the header's names, which are checksummed before they are
// compared: a damaged file's contents stay out of logs.
type Error struct {
	Reason Reason
	// Path is the file, when known.
	Path string
	// Field, Want and Got say what differs, for MismatchReason and
	// FormatVersionReason; Detail says more for the other reasons.
	Field, Want, Got string
	Detail           string
	// Err is the underlying error, if any.
	Err error
}

// Error describes the refusal in one line.
func (e *Error) Error() string {
	msg := "snapshot"
	if e.Path != "" {
		msg += " " + e.Path
	}
	msg += ": " + e.Reason.String()
	if e.Field != "" {
		msg += fmt.Sprintf(": %s is %q, want %q", e.Field, e.Got, e.Want)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of an *Error in err's chain, 0 for others.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return 0
}
