package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/fixtures"
)

// cluster is the fake API server with its pods, and the wire informers
// reach it through.
type cluster struct {
	srv   *fake.Server
	wire  *wire
	names []string // live pods as namespace/name, in creation order
	used  map[string]bool
	pods  *fixtures.PodSource
	next  int
}

func newCluster(cfg config) (*cluster, error) {
	c := &cluster{used: map[string]bool{}}
	if cfg.realistic {
		c.pods = fixtures.NewPodSource(1)
	}
	objs := make([]runtime.Object, 0, cfg.pods)
	for range cfg.pods {
		objs = append(objs, c.newPod())
	}
	// The window holds every round's changes, as a real server's holds at
	// least 75 s of them: a restart inside it resumes.
	srv, err := fake.New(fake.Options{Object: &corev1.Pod{}, Objects: objs, HistorySize: max(1024, 2*cfg.changes)})
	if err != nil {
		return nil, err
	}
	c.srv, c.wire = srv, newWire(srv)
	return c, nil
}

// newPod returns the next pod and remembers its name.
func (c *cluster) newPod() *corev1.Pod {
	i := c.next
	c.next++
	var p *corev1.Pod
	if c.pods != nil {
		p = c.pods.Pod(i)
		p.ResourceVersion, p.UID = "", ""
		if c.used[p.Namespace+"/"+p.Name] {
			// The fixtures' five-letter suffixes repeat among 100k pods.
			p.Name += "-" + strconv.Itoa(i)
		}
	} else {
		p = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-" + strconv.Itoa(i%5), Name: "pod-" + strconv.Itoa(i), Labels: map[string]string{"app": "demo"}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	c.names = append(c.names, p.Namespace+"/"+p.Name)
	c.used[p.Namespace+"/"+p.Name] = true
	return p
}

// round is one restart: our informer syncs cold and saves its snapshot;
// pods change while it is down; client-go's informer syncs cold; ours
// restarts warm; the restart's parts restart from the same state.
func (c *cluster) round(ctx context.Context, path string, cfg config) ([]start, error) {
	// The cold start finds no file: a previous round's would make it warm.
	for _, p := range []string{path, path + ".journal", componentsPath(path)} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	cold, err := runOne(ctx, oursCold, c.srv, c.wire, path)
	if err != nil {
		return nil, err
	}
	if err := c.changeWhileDown(cfg.changes); err != nil {
		return nil, err
	}
	if cfg.compactHistory {
		c.srv.Compact()
	}
	clientGo, err := runOne(ctx, clientGoCold, c.srv, c.wire, path)
	if err != nil {
		return nil, err
	}
	warm, err := runOne(ctx, oursWarm, c.srv, c.wire, path)
	if err != nil {
		return nil, err
	}
	components, err := runComponents(ctx, c.srv, c.wire, componentsPath(path))
	if err != nil {
		return nil, err
	}
	return []start{clientGo, cold, warm, components}, nil
}

// changeWhileDown updates half of n pods, deletes a quarter and creates a
// quarter, spread over the collection.
func (c *cluster) changeWhileDown(n int) error {
	updates, deletes := n/2, n/4
	creates := n - updates - deletes
	step := max(len(c.names)/max(updates+deletes, 1), 1)
	for i := range updates + deletes {
		key := c.names[(i*step)%len(c.names)]
		if i < updates {
			if err := c.touch(key); err != nil {
				return err
			}
			continue
		}
		if err := c.remove(key); err != nil {
			return err
		}
	}
	for range creates {
		if _, err := c.srv.Create(c.newPod()); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) touch(key string) error {
	ns, name := split(key)
	obj, err := c.srv.Get(ns, name)
	if err != nil {
		return err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["restarted"] = strconv.Itoa(c.next)
	_, err = c.srv.Update(p)
	return err
}

func (c *cluster) remove(key string) error {
	ns, name := split(key)
	if _, err := c.srv.Delete(ns, name); err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	for i, n := range c.names {
		if n == key {
			c.names = append(c.names[:i], c.names[i+1:]...)
			break
		}
	}
	return nil
}

func split(key string) (namespace, name string) {
	namespace, name, _ = strings.Cut(key, "/")
	return namespace, name
}
