package fake

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verbs recorded in Request.Verb.
const (
	VerbList  = "list"
	VerbWatch = "watch"
)

// Request is one LIST or WATCH the server received, failed ones included.
type Request struct {
	// Verb is VerbList or VerbWatch.
	Verb string
	// Namespace is the namespace of a NamespaceView request, "" for all namespaces.
	Namespace string
	// Options are the request's options as received.
	Options metav1.ListOptions
}

// Requests returns a copy of every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = r
		out[i].Options = *r.Options.DeepCopy()
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) recordLocked(verb, ns string, o metav1.ListOptions) {
	s.requests = append(s.requests, Request{Verb: verb, Namespace: ns, Options: *o.DeepCopy()})
}

// OpenWatches returns how many watches are open, so a test can wait for a client to be watching
// before it injects a fault.
func (s *Server) OpenWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// RequestKind says what a request costs the server, so that a test can assert, say, that a
// restarted informer made no full LIST.
type RequestKind int

// The kinds of request.
const (
	// FullList is a LIST that reads the collection: no continue token and a limit other than 1,
	// or resourceVersion "0" (whose limit the server ignores). A paginated full list is one
	// FullList followed by ListPages.
	FullList RequestKind = iota
	// ListPage is a LIST continuing a paginated one.
	ListPage
	// ProbeList is a LIST with limit=1 and no continue token, such as a warm restart's probe of
	// the current resourceVersion.
	ProbeList
	// InitialWatch is a WATCH that streams the current state first: a watch-list
	// (sendInitialEvents=true) or a legacy watch from "" or "0".
	InitialWatch
	// ResumedWatch is a WATCH without initial events: from a resourceVersion, or from now.
	ResumedWatch
)

// String names the kind.
func (k RequestKind) String() string {
	switch k {
	case FullList:
		return "full list"
	case ListPage:
		return "list page"
	case ProbeList:
		return "probe list"
	case InitialWatch:
		return "initial watch"
	case ResumedWatch:
		return "resumed watch"
	}
	return fmt.Sprintf("RequestKind(%d)", int(k))
}

// Kind classifies the request.
func (r Request) Kind() RequestKind {
	o := r.Options
	if r.Verb == VerbWatch {
		unversioned := o.ResourceVersion == "" || o.ResourceVersion == "0"
		if (o.SendInitialEvents != nil && *o.SendInitialEvents) || (o.SendInitialEvents == nil && unversioned) {
			return InitialWatch
		}
		return ResumedWatch
	}
	switch {
	case o.Continue != "":
		return ListPage
	case o.Limit == 1 && o.ResourceVersion != "0":
		return ProbeList
	}
	return FullList
}

// RequestCounts is how many requests of each kind the server received.
type RequestCounts struct {
	FullLists, ListPages, ProbeLists, InitialWatches, ResumedWatches int
}

// FullSyncs is how many requests read the whole collection: full lists and initial watches.
func (c RequestCounts) FullSyncs() int { return c.FullLists + c.InitialWatches }

// RequestCounts counts the requests received since the last ResetRequests, failed ones included.
func (s *Server) RequestCounts() RequestCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	var c RequestCounts
	for _, r := range s.requests {
		switch r.Kind() {
		case FullList:
			c.FullLists++
		case ListPage:
			c.ListPages++
		case ProbeList:
			c.ProbeLists++
		case InitialWatch:
			c.InitialWatches++
		case ResumedWatch:
			c.ResumedWatches++
		}
	}
	return c
}
