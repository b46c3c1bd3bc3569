package cache

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// informerNames holds every InformerName that is currently reserved, so that
// two informers never publish metrics under the same name.
var informerNames = struct {
	sync.Mutex
	byName map[string]*InformerName
}{byName: map[string]*InformerName{}}

// InformerName is a unique, registered name under which informers publish
// metrics. Metrics are only emitted for identities derived from one.
type InformerName struct {
	name     string
	reserved atomic.Bool

	mu   sync.Mutex
	gvrs map[schema.GroupVersionResource]*atomic.Bool
}

// NewInformerName registers name. It fails for an empty name and for a name
// that is still registered; a released name may be registered again.
func NewInformerName(name string) (*InformerName, error) {
	if name == "" {
		return nil, errors.New("informer name cannot be empty")
	}
	informerNames.Lock()
	defer informerNames.Unlock()
	if old, ok := informerNames.byName[name]; ok && old.reserved.Load() {
		return nil, fmt.Errorf("informer name %q is already registered", name)
	}
	n := &InformerName{name: name, gvrs: map[schema.GroupVersionResource]*atomic.Bool{}}
	n.reserved.Store(true)
	informerNames.byName[name] = n
	return n, nil
}

// WithResource returns the identity of this name's informer for gvr. Only
// the first identity per resource is reserved (publishes metrics); later ones
// for the same resource, and any from a nil or released name, are not.
func (n *InformerName) WithResource(gvr schema.GroupVersionResource) InformerNameAndResource {
	if n == nil {
		return InformerNameAndResource{gvr: gvr}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	id := InformerNameAndResource{name: n.name, gvr: gvr, reserved: &atomic.Bool{}}
	if !n.reserved.Load() {
		return id
	}
	if _, dup := n.gvrs[gvr]; dup {
		klog.TODO().Error(nil, "Duplicate informer registration - metrics will not be published",
			"informerName", n.name, "group", gvr.Group, "version", gvr.Version, "resource", gvr.Resource)
		return id
	}
	id.reserved.Store(true)
	n.gvrs[gvr] = id.reserved
	return id
}

// Release unregisters the name and unreserves every identity derived from
// it, so that their metrics stop and the name can be registered again.
func (n *InformerName) Release() {
	if n == nil {
		return
	}
	n.mu.Lock()
	for _, r := range n.gvrs {
		r.Store(false)
	}
	n.gvrs = map[schema.GroupVersionResource]*atomic.Bool{}
	n.reserved.Store(false)
	n.mu.Unlock()

	informerNames.Lock()
	defer informerNames.Unlock()
	if informerNames.byName[n.name] == n {
		delete(informerNames.byName, n.name)
	}
}

// Name returns the registered name ("" for a nil receiver).
func (n *InformerName) Name() string {
	if n == nil {
		return ""
	}
	return n.name
}

// InformerNameAndResource identifies one informer: a registered name and the
// resource it serves. The zero value is a valid, unreserved identity.
type InformerNameAndResource struct {
	name     string
	gvr      schema.GroupVersionResource
	reserved *atomic.Bool
}

// Reserved reports whether this identity may publish metrics.
func (n InformerNameAndResource) Reserved() bool {
	return n.reserved != nil && n.reserved.Load()
}

// Name returns the informer name.
func (n InformerNameAndResource) Name() string {
	return n.name
}

// GroupVersionResource returns the resource.
func (n InformerNameAndResource) GroupVersionResource() schema.GroupVersionResource {
	return n.gvr
}

// ResetInformerNamesForTesting releases every registered name.
func ResetInformerNamesForTesting() {
	informerNames.Lock()
	names := make([]*InformerName, 0, len(informerNames.byName))
	for _, n := range informerNames.byName {
		names = append(names, n)
	}
	informerNames.Unlock()
	for _, n := range names {
		n.Release()
	}
}
