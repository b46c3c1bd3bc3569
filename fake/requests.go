package fake

import (
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
