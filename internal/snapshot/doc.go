// Package snapshot reads and writes the file an informer's cache is saved to
// so that a restarted controller can resume from it (docs/RESTART.md).
//
// A file is a header naming what was cached (resource, scope, selectors,
// shard, value encoding) and at which resourceVersion, then one record per
// object (its key and its encoded bytes, opaque to this package), then a
// trailer with a CRC-32C of everything before it:
//
//	magic "OISNAP\r\n"                      8 bytes
//	uvarint format version                  (FormatVersion)
//	uvarint header length, header fields    each a uvarint length and bytes
//	uvarint record count
//	count records                           uvarint key length, key, uvarint value length, value
//	"END\n" and the CRC-32C (Castagnoli)    little-endian, of every byte before "END\n"
//
// Writer streams a file to a temporary name beside the final one and makes
// it visible only once complete, synced and renamed, so a reader finds the
// previous snapshot or the new one, never a part. Reader checks the header
// against what the caller expects before it reads a record, and the
// checksum after the last: records it hands out are only trustworthy once
// Next has returned io.EOF. Every refusal is an *Error naming its Reason.
//
// A journal (journal.go) records the changes applied after a snapshot, one
// checksummed frame each, so that a restart after a crash resumes from the
// last change; a reader stops at a torn tail, since any prefix of the
// changes is a state the server had.
//
// The package knows nothing of Kubernetes objects: the store decides what a
// value holds (a compact encoding, or an object encoded the same way).
package snapshot
