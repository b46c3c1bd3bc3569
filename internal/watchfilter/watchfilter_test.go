package watchfilter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func pod(name string) *v1.Pod { return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }

func TestKeepsOnlyWhatKeepAccepts(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := watch.NewFakeWithChanSize(3, false)
	w := New(in, func(ev watch.Event) bool { return ev.Object.(*v1.Pod).Name != "drop" })
	in.Add(pod("a"))
	in.Add(pod("drop"))
	in.Delete(pod("b"))
	in.Stop()
	var got []string
	for ev := range w.ResultChan() {
		got = append(got, string(ev.Type)+" "+ev.Object.(*v1.Pod).Name)
	}
	assert.Equal(t, []string{"ADDED a", "DELETED b"}, got)
	w.Stop()
}

func TestStopEndsTheGoroutineWithNobodyReading(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := watch.NewFakeWithChanSize(2, false)
	w := New(in, func(watch.Event) bool { return true })
	in.Add(pod("a")) // taken by the goroutine, which then waits for a reader
	in.Add(pod("b"))
	w.Stop()
	w.Stop()
	for range w.ResultChan() {
	}
}
