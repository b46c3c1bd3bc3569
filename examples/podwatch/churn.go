package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/fake"
)

const (
	churnNamespaces = 5
	// churnInterval paces the writes: fast enough to keep handlers busy, slow
	// enough that the demo's output stays readable.
	churnInterval = 2 * time.Millisecond
	// convergeTimeout bounds how long the final check waits for the cache.
	convergeTimeout = 15 * time.Second
)

// churner owns the embedded fake API server and changes pods on it.
type churner struct {
	server *fake.Server
	rng    *rand.Rand
	names  []string // live pods as "namespace/name"
	next   int
}

// churnPlan says when, counted from the start of the run, the churn drops
// the watch, forces a relist, and stops.
type churnPlan struct {
	dropWatchAt, compactAt, stopAt time.Duration
}

func newChurner(objects int) (*churner, error) {
	c := &churner{rng: rand.New(rand.NewPCG(1, 2))}
	initial := make([]runtime.Object, 0, objects)
	for range objects {
		initial = append(initial, c.newPod())
	}
	server, err := fake.New(fake.Options{Object: &corev1.Pod{}, Objects: initial, HistorySize: 4 * objects})
	if err != nil {
		return nil, err
	}
	c.server = server
	return c, nil
}

// newPod returns a fresh pod and remembers its name.
func (c *churner) newPod() *corev1.Pod {
	ns := "team-" + strconv.Itoa(c.next%churnNamespaces)
	name := "pod-" + strconv.Itoa(c.next)
	c.next++
	c.names = append(c.names, ns+"/"+name)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "demo"}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// run writes until the plan's stop time or ctx ends, injecting the faults on
// schedule.
func (c *churner) run(ctx context.Context, plan churnPlan, out io.Writer, start time.Time) {
	stop := time.NewTimer(max(plan.stopAt-time.Since(start), 0))
	defer stop.Stop()
	tick := time.NewTicker(churnInterval)
	defer tick.Stop()
	dropped, compacted := false, false
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop.C:
			fmt.Fprintf(out, "%6.1fs churn stopped; waiting for the cache to converge\n", time.Since(start).Seconds())
			return
		case <-tick.C:
		}
		elapsed := time.Since(start)
		switch {
		case !dropped && elapsed >= plan.dropWatchAt:
			dropped = true
			fmt.Fprintf(out, "%6.1fs fault: dropping %d watch connection(s)\n", elapsed.Seconds(), c.server.CloseWatches())
		case !compacted && elapsed >= plan.compactAt:
			compacted = true
			fmt.Fprintf(out, "%6.1fs fault: %s\n", elapsed.Seconds(), c.forceRelist())
		}
		if err := c.step(); err != nil {
			fmt.Fprintf(out, "%6.1fs churn error: %v\n", elapsed.Seconds(), err)
		}
	}
}

// forceRelist makes the informer's next watch start from a resource version
// that is no longer in the server's history, so it gets 410 Gone and must
// relist: events are held back while a few changes are made, the history is
// compacted, and the watches are dropped before they saw those changes.
func (c *churner) forceRelist() string {
	release := c.server.HoldEvents()
	defer release()
	for range 5 {
		if err := c.step(); err != nil {
			return "could not force a relist: " + err.Error()
		}
	}
	c.server.Compact()
	return fmt.Sprintf("history compacted under %d watch(es) that had not caught up; the informer must relist after 410 Gone",
		c.server.CloseWatches())
}

// step makes one random change: mostly updates, some creates and deletes.
func (c *churner) step() error {
	switch r := c.rng.IntN(10); {
	case r < 2 || len(c.names) == 0:
		_, err := c.server.Create(c.newPod())
		return err
	case r < 4:
		i := c.rng.IntN(len(c.names))
		ns, name, _ := cache.SplitMetaNamespaceKey(c.names[i])
		c.names[i] = c.names[len(c.names)-1]
		c.names = c.names[:len(c.names)-1]
		_, err := c.server.Delete(ns, name)
		return err
	default:
		ns, name, _ := cache.SplitMetaNamespaceKey(c.names[c.rng.IntN(len(c.names))])
		obj, err := c.server.Get(ns, name)
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		pod.Status.Phase = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded}[c.rng.IntN(3)]
		_, err = c.server.Update(pod)
		return err
	}
}

// compare waits until the informer's cache holds exactly the server's pods at
// the server's resource versions, and describes the result.
func (c *churner) compare(ctx context.Context, indexer cache.Indexer) (string, error) {
	want, err := c.serverVersions()
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(convergeTimeout)
	for {
		diff := versionDiff(want, indexer)
		if diff == "" {
			return fmt.Sprintf("cache matches the fake server exactly (%d pods)", len(want)), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("cache did not converge to the fake server's contents: %s", diff)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *churner) serverVersions() (map[string]string, error) {
	obj, err := c.server.List(metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	want := map[string]string{}
	for _, p := range obj.(*corev1.PodList).Items {
		want[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return want, nil
}

// versionDiff describes the first difference between want and the cache, or
// returns "" when there is none.
func versionDiff(want map[string]string, indexer cache.Indexer) string {
	if n := len(indexer.ListKeys()); n != len(want) {
		return fmt.Sprintf("%d pods cached, %d on the server", n, len(want))
	}
	for _, key := range sortedKeys(want) {
		obj, ok, _ := indexer.GetByKey(key)
		if !ok {
			return key + " missing from the cache"
		}
		if rv := obj.(*corev1.Pod).ResourceVersion; rv != want[key] {
			return fmt.Sprintf("%s at resourceVersion %s, server has %s", key, rv, want[key])
		}
	}
	return ""
}
