package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/openinformer/cache/internal/fixtures"
)

// podRef names one created pod.
type podRef struct{ namespace, name string }

// namespaceName is the i-th of the workload's namespaces.
func namespaceName(i, namespaces int) string { return fmt.Sprintf("team-%02d", i%namespaces) }

// createPods creates the namespaces and n of internal/fixtures' realistic
// pods, spread over namespaces (a deployment's pods share one namespace when
// namespaces divides fixtures.Deployments), the way a cluster writes them:
// kube-controller-manager creates the pod, the kubelet writes its status.
func createPods(ctx context.Context, cs kubernetes.Interface, n, namespaces, workers int) ([]podRef, error) {
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(i, namespaces)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create namespace: %w", err)
		}
	}
	src := fixtures.NewPodSource(1)
	var mu sync.Mutex // PodSource is not safe for concurrent use
	refs := make([]podRef, n)
	err := forEach(workers, n, func(j int) error {
		mu.Lock()
		p := src.Pod(j)
		mu.Unlock()
		p.Namespace = namespaceName(j%fixtures.Deployments, namespaces)
		p.Labels["team"] = p.Namespace
		refs[j] = podRef{p.Namespace, p.Name}
		return createPod(ctx, cs, p)
	})
	return refs, err
}

// createPod writes one fixture pod as its two managers would, trying a
// request that failed on the way again; a create that reached the server
// before is found by name.
func createPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	status := p.Status
	p = p.DeepCopy()
	p.ResourceVersion, p.UID, p.CreationTimestamp, p.ManagedFields = "", "", metav1.Time{}, nil
	p.Status = corev1.PodStatus{}
	pods := cs.CoreV1().Pods(p.Namespace)
	var got *corev1.Pod
	err := retry(func() (err error) {
		got, err = pods.Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if apierrors.IsAlreadyExists(err) {
			got, err = pods.Get(ctx, p.Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if len(got.Status.ContainerStatuses) > 0 {
		return nil
	}
	got.Status = status
	err = retry(func() error {
		_, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kubelet"})
		if apierrors.IsConflict(err) {
			cur, gerr := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if gerr != nil || len(cur.Status.ContainerStatuses) > 0 {
				return gerr
			}
			cur.Status = status
			_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: "kubelet"})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// retry calls fn up to 5 times while it fails with a transient error.
func retry(fn func() error) error {
	var err error
	for i := range 5 {
		if err = fn(); err == nil || !transient(err) {
			return err
		}
		time.Sleep(time.Duration(1<<i) * 200 * time.Millisecond)
	}
	return err
}

func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// loadResult is what the load generator achieved.
type loadResult struct {
	sent, failed, skipped int64
	elapsed               time.Duration
}

// drive patches pod status at rate updates per second for d, cycling
// through refs, as the kubelet does (a strategic merge patch of the status
// subresource moving the Ready condition's lastProbeTime). Updates due while
// all workers are busy are skipped, not queued, so the phase ends on time.
func drive(ctx context.Context, cs kubernetes.Interface, refs []podRef, rate int, d time.Duration) loadResult {
	jobs := make(chan podRef, rate)
	var res loadResult
	var wg sync.WaitGroup
	var sent, failed atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range jobs {
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","lastProbeTime":%q}]}}`,
					time.Now().UTC().Format(time.RFC3339))
				_, err := cs.CoreV1().Pods(ref.namespace).Patch(ctx, ref.name, types.StrategicMergePatchType,
					[]byte(patch), metav1.PatchOptions{FieldManager: "kubelet"}, "status")
				if err != nil {
					failed.Add(1)
				} else {
					sent.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	next := 0
	for issued := int64(0); time.Since(start) < d; {
		now := <-tick.C
		for due := int64(now.Sub(start).Seconds() * float64(rate)); issued < due; issued++ {
			select {
			case jobs <- refs[next%len(refs)]:
				next++
			default:
				res.skipped++
			}
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	res.elapsed = time.Since(start)
	res.sent, res.failed = sent.Load(), failed.Load()
	return res
}

// forEach runs fn(0..n-1) on workers goroutines and returns the first
// error; after one it starts no more.
func forEach(workers, n int, fn func(i int) error) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := fn(j); err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for j := 0; j < n && firstErr.Load() == nil; j++ {
		jobs <- j
	}
	close(jobs)
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return *err
	}
	return nil
}
