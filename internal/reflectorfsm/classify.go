package reflectorfsm

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Class is the only thing the machine needs to know about an error: which
// recovery it calls for.
type Class int

// The error classes, in the order Classify tests them.
const (
	// ClassNone is a nil error.
	ClassNone Class = iota
	// ClassExpired is 410 Gone or a ResourceExpired status: the resource
	// version asked for is no longer held by the server.
	ClassExpired
	// ClassTooLargeRV is a request for a resource version the server has
	// not reached yet.
	ClassTooLargeRV
	// ClassTooManyRequests is 429: the server is shedding load.
	ClassTooManyRequests
	// ClassConnectionRefused means the server is not reachable at all.
	ClassConnectionRefused
	// ClassInternal is a 500 InternalError status.
	ClassInternal
	// ClassOther is everything else.
	ClassOther
)

// Classify maps an error to its class.
func Classify(err error) Class {
	switch {
	case err == nil:
		return ClassNone
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return ClassExpired
	case isTooLargeResourceVersion(err):
		return ClassTooLargeRV
	case apierrors.IsTooManyRequests(err):
		return ClassTooManyRequests
	case utilnet.IsConnectionRefused(err):
		return ClassConnectionRefused
	case apierrors.IsInternalError(err):
		return ClassInternal
	default:
		return ClassOther
	}
}

// retriable reports whether the same request may simply be sent again after
// a backoff: the server is overloaded or unreachable, so a relist would only
// add load.
func (c Class) retriable() bool {
	return c == ClassTooManyRequests || c == ClassConnectionRefused
}

// rvUnusable reports whether the resource version sent was rejected, so the
// next request must ask for the latest state instead.
func (c Class) rvUnusable() bool {
	return c == ClassExpired || c == ClassTooLargeRV
}

// tooLargeRVMessage is how servers older than 1.18.6 phrase the error that
// newer ones mark with the ResourceVersionTooLarge cause.
const tooLargeRVMessage = "Too large resource version"

func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status == nil {
		return false
	}
	st := status.Status()
	if st.Details == nil {
		return false
	}
	for _, cause := range st.Details.Causes {
		if cause.Message == tooLargeRVMessage {
			return true
		}
	}
	return strings.Contains(st.Message, tooLargeRVMessage)
}
