// Package testing shows how to unit-test a controller built on openinformer
// against the fake API server in github.com/openinformer/cache/fake: no
// cluster, no mocks of client-go, and faults (dropped watches, 410 relists,
// slow handlers) on demand. The controller here is deliberately small; the
// interesting part is controller_test.go, whose tests run in testing/synctest
// bubbles: stacked faults that cost seconds of backoff on the real clock
// converge in milliseconds, with the same requests on every run.
package testing

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	cache "github.com/openinformer/cache"
)

// PhaseCounter is a tiny controller: it keeps, per namespace, how many pods
// are in each phase, driven only by informer notifications.
type PhaseCounter struct {
	mu     sync.Mutex
	phases map[string]corev1.PodPhase // pod key → last seen phase
}

// NewPhaseCounter registers a PhaseCounter on informer.
func NewPhaseCounter(informer cache.SharedInformer) (*PhaseCounter, cache.ResourceEventHandlerRegistration, error) {
	c := &PhaseCounter{phases: map[string]corev1.PodPhase{}}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.set,
		UpdateFunc: func(_, obj interface{}) { c.set(obj) },
		DeleteFunc: c.forget,
	})
	return c, reg, err
}

func (c *PhaseCounter) set(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phases[pod.Namespace+"/"+pod.Name] = pod.Status.Phase
}

// forget handles deletes, including the DeletedFinalStateUnknown tombstones
// an informer delivers when it learns of a deletion only through a relist.
func (c *PhaseCounter) forget(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.phases, key)
}

// Count returns how many known pods are in phase.
func (c *PhaseCounter) Count(phase corev1.PodPhase) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.phases {
		if p == phase {
			n++
		}
	}
	return n
}

// Known returns how many pods the controller knows.
func (c *PhaseCounter) Known() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.phases)
}
