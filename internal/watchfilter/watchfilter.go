// Package watchfilter passes on the events of a watch that a function keeps.
// Unlike apimachinery's watch.Filter, its goroutine also ends when Stop is
// called while nobody reads the result channel any more.
package watchfilter

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// New returns a watch of in's events for which keep returns true. keep runs
// on the watch's goroutine, which the watch owns: it ends when in closes or
// Stop is called.
func New(in watch.Interface, keep func(watch.Event) bool) watch.Interface {
	w := &filtered{in: in, out: make(chan watch.Event), keep: keep, stop: make(chan struct{})}
	go w.run()
	return w
}

type filtered struct {
	in   watch.Interface
	out  chan watch.Event
	keep func(watch.Event) bool
	stop chan struct{}
	once sync.Once
}

// ResultChan returns the kept events; it is closed when the watch ends.
func (w *filtered) ResultChan() <-chan watch.Event { return w.out }

// Stop ends the watch and the wrapped one; it may be called more than once.
func (w *filtered) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.in.Stop()
	})
}

func (w *filtered) run() {
	defer close(w.out)
	in := w.in.ResultChan()
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			if !w.keep(ev) {
				continue
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}
