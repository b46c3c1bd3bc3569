package cache

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/klog/v2"
)

// mutationDetectionEnabled is read once, like client-go, so that a process
// decides at start whether every informer pays for deep copies.
var mutationDetectionEnabled, _ = strconv.ParseBool(os.Getenv("KUBE_CACHE_MUTATION_DETECTOR"))

// NewCacheMutationDetector returns a detector that panics when an object
// handed to event handlers is later modified in place. It is a no-op unless
// the environment variable KUBE_CACHE_MUTATION_DETECTOR was true when the
// process started: checking keeps deep copies for minutes and is meant for
// tests and CI, not production.
func NewCacheMutationDetector(name string) MutationDetector {
	if !mutationDetectionEnabled {
		return noopMutationDetector{}
	}
	klog.Warningln("Mutation detector is enabled, this will result in memory leakage.")
	return newCacheMutationChecker(name, time.Second, 2*time.Minute)
}

type noopMutationDetector struct{}

func (noopMutationDetector) AddObject(interface{}) {}
func (noopMutationDetector) Run(<-chan struct{})   {}

// mutationPair is an object as handed out and the copy taken at that time.
type mutationPair struct {
	live, copied runtime.Object
}

// cacheMutationChecker compares handed-out objects with their deep copies
// every period. Pairs live in two generations so each is watched for at
// least retain before being forgotten.
type cacheMutationChecker struct {
	name           string
	period, retain time.Duration
	// fail reports a mutation; it panics outside tests, because a cache
	// that handlers corrupted cannot be trusted any more.
	fail func(msg string)

	mu    sync.Mutex
	added []mutationPair

	// current, previous and rotated are only touched by the Run goroutine.
	current, previous []mutationPair
	rotated           time.Time
}

func newCacheMutationChecker(name string, period, retain time.Duration) *cacheMutationChecker {
	return &cacheMutationChecker{name: name, period: period, retain: retain, fail: func(msg string) { panic(msg) }}
}

// AddObject deep-copies obj for later comparison. Only runtime.Objects can be
// copied; tombstones and other values are ignored.
func (d *cacheMutationChecker) AddObject(obj interface{}) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return
	}
	pair := mutationPair{live: o, copied: o.DeepCopyObject()}
	d.mu.Lock()
	d.added = append(d.added, pair)
	d.mu.Unlock()
}

// Run compares every period until stopCh closes. It deliberately does not
// recover panics: a detected mutation must fail loudly.
func (d *cacheMutationChecker) Run(stopCh <-chan struct{}) {
	ticker := time.NewTicker(d.period)
	defer ticker.Stop()
	for {
		d.check(time.Now())
		select {
		case <-stopCh:
			return
		case <-ticker.C:
		}
	}
}

// check ages out the older generation once retain has passed, then compares.
func (d *cacheMutationChecker) check(now time.Time) {
	if d.rotated.IsZero() {
		d.rotated = now
	} else if now.Sub(d.rotated) > d.retain {
		d.previous, d.current = d.current, nil
		d.rotated = now
	}
	d.compare()
}

// compare checks all retained pairs and reports any that differ.
func (d *cacheMutationChecker) compare() {
	d.mu.Lock()
	d.current = append(d.current, d.added...)
	d.added = nil
	d.mu.Unlock()

	altered := false
	for _, gen := range [][]mutationPair{d.current, d.previous} {
		for i, p := range gen {
			if !reflect.DeepEqual(p.live, p.copied) {
				fmt.Printf("CACHE %s[%d] ALTERED!\n%v\n", d.name, i, diff.ObjectGoPrintSideBySide(p.live, p.copied))
				altered = true
			}
		}
	}
	if altered {
		d.fail(fmt.Sprintf("cache %s modified", d.name))
	}
}

// detectorOn is d, or nil when d is the no-op detector: the fan-out then
// needs no object, and a compact informer's initial adds may reach the
// listeners encoded, since no detector is there to see every object
// handed out.
func detectorOn(d MutationDetector) interface{ AddObject(obj any) } {
	if _, off := d.(noopMutationDetector); off {
		return nil
	}
	return d
}
