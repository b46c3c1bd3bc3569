package fake

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster serves the Kubernetes REST API for a set of Servers, one per resource, so that a
// controller's clientset and its informers talk to one fake API server: its writes reach the
// same Servers its informers list and watch, with their resourceVersions, 410s, paging,
// bookmarks, watch-list streams, faults and request records.
//
// A Cluster is an http.Handler (for httptest.NewServer) and an http.RoundTripper that serves
// requests in memory, without sockets; RESTConfig and Clientset build clients over the latter.
// Any generated clientset works with RESTConfig, custom resources' included. All methods are
// safe for concurrent use.
type Cluster struct {
	mu        sync.Mutex
	resources map[schema.GroupVersionResource]*Server
	calls     []Call
	faults    map[callKey][]faultRun
}

// Call is one request a Cluster served, in the API server's audit terms.
type Call struct {
	// Verb is get, list, watch, create, update, patch, delete or deletecollection.
	Verb string
	// Resource is the resource of the request's URL.
	Resource schema.GroupVersionResource
	// Namespace, Name and Subresource come from the URL; empty when it has none.
	Namespace, Name, Subresource string
	// Code is the HTTP status sent, 0 when the request failed without a response (an injected
	// ConnectionRefused, for instance).
	Code int
}

// callKey selects the calls FailNext applies to.
type callKey struct{ verb, resource string }

// NewCluster serves the given Servers. Each serves the resource named by its kind's group and
// version and Options.Resource; two Servers for one resource are an error.
func NewCluster(servers ...*Server) (*Cluster, error) {
	c := &Cluster{resources: map[schema.GroupVersionResource]*Server{}, faults: map[callKey][]faultRun{}}
	return c, c.Add(servers...)
}

// MustNewCluster is NewCluster for tests: it panics on a configuration error.
func MustNewCluster(servers ...*Server) *Cluster {
	c, err := NewCluster(servers...)
	if err != nil {
		panic(err)
	}
	return c
}

// Add serves more resources.
func (c *Cluster) Add(servers ...*Server) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range servers {
		gvr := s.GroupVersionResource()
		if _, dup := c.resources[gvr]; dup {
			return fmt.Errorf("fake: two servers for %v", gvr)
		}
		c.resources[gvr] = s
	}
	return nil
}

// GroupVersionResource returns the resource a Cluster serves this Server as.
func (s *Server) GroupVersionResource() schema.GroupVersionResource {
	return s.kind.gvk.GroupVersion().WithResource(s.kind.resource.Resource)
}

// RESTConfig returns a client configuration whose requests this Cluster serves in memory. It
// turns client-side rate limiting off, so that a test's writes are not throttled by the real
// clock; set QPS and Burst on the copy to test throttling.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{Host: "http://fake-cluster.invalid", Transport: c, QPS: -1}
}

// Clientset returns client-go's clientset over RESTConfig.
func (c *Cluster) Clientset() kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		// NewForConfig fails only on TLS or rate-limit settings, and RESTConfig sets neither.
		panic(fmt.Sprintf("fake: clientset for an in-memory cluster: %v", err))
	}
	return cs
}

// FailNext makes the next n requests with verb (create, update, patch, delete, ...; "*" for
// any) on resource (its plural name, "*" for any) fail with err before they reach a Server;
// a nil err means DefaultFault(). An error that is not an API status, such as
// ConnectionRefused(), fails the request without a response. Calls add up. Use the Server's
// FailNextLists and FailNextWatches for reads, so that its request records include them.
func (c *Cluster) FailNext(verb, resource string, n int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := callKey{verb, resource}
	c.faults[k] = appendFaults(c.faults[k], n, err)
}

// takeFaultFor returns the injected failure for a call, if any; specific keys go first.
func (c *Cluster) takeFaultFor(verb, resource string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range []callKey{{verb, resource}, {verb, "*"}, {"*", resource}, {"*", "*"}} {
		if faults := c.faults[k]; len(faults) > 0 {
			err := takeFault(&faults)
			c.faults[k] = faults
			return err
		}
	}
	return nil
}

// Calls returns every request served so far, oldest first.
func (c *Cluster) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// CountCalls counts the calls served so far with verb on resource (plural name), whatever
// their outcome; "*" matches any verb or resource.
func (c *Cluster) CountCalls(verb, resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, call := range c.calls {
		if (verb == "*" || call.Verb == verb) && (resource == "*" || call.Resource.Resource == resource) {
			n++
		}
	}
	return n
}

// ResetCalls forgets the recorded calls.
func (c *Cluster) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = nil
}

func (c *Cluster) record(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

func (c *Cluster) server(gvr schema.GroupVersionResource) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resources[gvr]
}

// The Cluster is both ends of an HTTP connection.
var (
	_ http.Handler      = (*Cluster)(nil)
	_ http.RoundTripper = (*Cluster)(nil)
)
