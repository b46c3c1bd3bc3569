package main

import (
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	cache "github.com/openinformer/cache"
)

// auditHandler counts notifications and checks that each pod's resource
// versions never go backwards, which is the per-key ordering the informer
// promises every handler.
type auditHandler struct {
	mu     sync.Mutex
	c      auditCounts
	lastRV map[string]uint64
}

type auditCounts struct {
	adds, updates, deletes, regressions int
}

func newAuditHandler() *auditHandler { return &auditHandler{lastRV: map[string]uint64{}} }

func (a *auditHandler) OnAdd(obj interface{}, _ bool) {
	a.observe(obj, func(c *auditCounts) { c.adds++ })
}

func (a *auditHandler) OnUpdate(_, obj interface{}) {
	a.observe(obj, func(c *auditCounts) { c.updates++ })
}

func (a *auditHandler) OnDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok && t.Obj != nil {
		obj = t.Obj
	}
	a.observe(obj, func(c *auditCounts) { c.deletes++ })
}

func (a *auditHandler) observe(obj interface{}, count func(*auditCounts)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	count(&a.c)
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rv, err := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	key := pod.Namespace + "/" + pod.Name
	if rv < a.lastRV[key] {
		a.c.regressions++
	}
	a.lastRV[key] = rv
}

func (a *auditHandler) counts() auditCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.c
}
