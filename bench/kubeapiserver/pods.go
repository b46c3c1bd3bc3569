package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// createPods creates the namespaces and n of internal/fixtures' realistic
// pods the way a cluster writes them: kube-controller-manager creates the
// pod (metadata and spec), the kubelet then writes its status through the
// status subresource. The server records both managers' managedFields.
func createPods(ctx context.Context, cs kubernetes.Interface, n, workers int) ([]podRef, error) {
	for i := range fixtures.Namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtures.NamespaceName(i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create namespace: %w", err)
		}
	}
	src := fixtures.NewPodSource(1)
	refs := make([]podRef, n)
	err := forEach(workers, n, func(j int) error {
		p := src.Pod(j)
		refs[j] = podRef{p.Namespace, p.Name}
		return createPod(ctx, cs, p)
	})
	return uniqueRefs(refs), err
}

// uniqueRefs drops repeated names: the fixtures draw each pod's name suffix
// at random, as a ReplicaSet does, and 100k pods give two of one name (the
// second create found the first), so the server holds one pod fewer than
// were drawn.
func uniqueRefs(refs []podRef) []podRef {
	seen := make(map[podRef]bool, len(refs))
	out := refs[:0]
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// createPod writes one fixture pod as its two managers would. A request
// that fails on the way (a lost connection on a loaded machine) is tried
// again; a create that reached the server before is found by name, and its
// status written if it has none yet.
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
	if kubeletWrote(got) {
		return nil
	}
	got.Status = status
	err = retry(func() error {
		_, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kubelet"})
		if !apierrors.IsConflict(err) {
			return err
		}
		// An earlier try may have written it before its answer was lost.
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || kubeletWrote(cur) {
			return err
		}
		cur.Status = status
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})
	if err != nil {
		return fmt.Errorf("status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// kubeletWrote tells whether p's status is the kubelet's: the server sets
// a phase on create, the container statuses come only from the kubelet.
func kubeletWrote(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) > 0 }

// retry calls fn up to 5 times while it fails with anything but an API
// status other than a timeout, throttling or server error, backing off.
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

// podSizes are the protobuf sizes of pods as the server serves them.
type podSizes struct {
	count                    int
	meanBytes, medianBytes   int
	managedFieldsShare       float64
	fixtureBytes             int
	fixtureManagedFieldShare float64
}

// measureSizes reads up to 500 pods back from the server and measures
// their protobuf encoding and the part of it that is managedFields.
func measureSizes(ctx context.Context, cs kubernetes.Interface) (podSizes, error) {
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 500})
	if err != nil {
		return podSizes{}, err
	}
	var s podSizes
	var total, withoutMF int
	sizes := make([]int, 0, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		full := p.Size()
		mf := p.ManagedFields
		p.ManagedFields = nil
		withoutMF += p.Size()
		p.ManagedFields = mf
		total += full
		sizes = append(sizes, full)
	}
	if len(sizes) == 0 {
		return s, fmt.Errorf("no pods served")
	}
	sort.Ints(sizes)
	s.count = len(sizes)
	s.meanBytes = total / len(sizes)
	s.medianBytes = sizes[len(sizes)/2]
	s.managedFieldsShare = 1 - float64(withoutMF)/float64(total)
	f := fixtures.NewPodSource(1).Pod(0)
	s.fixtureBytes = f.Size()
	mf := f.ManagedFields
	f.ManagedFields = nil
	s.fixtureManagedFieldShare = 1 - float64(f.Size())/float64(s.fixtureBytes)
	f.ManagedFields = mf
	return s, nil
}

// loadResult is what the load generator achieved in one steady phase.
type loadResult struct {
	sent, failed, skipped int64
	elapsed               time.Duration
}

// drive patches pod status at rate updates per second for d, cycling
// through refs from *next (see driveUntil).
func drive(ctx context.Context, cs kubernetes.Interface, refs []podRef, next *int, rate int, d time.Duration) loadResult {
	stop := make(chan struct{})
	t := time.AfterFunc(d, func() { close(stop) })
	defer t.Stop()
	return driveUntil(ctx, cs, refs, next, rate, stop)
}

// driveUntil patches pod status at rate updates per second until stop
// closes, cycling through refs from *next, as the kubelet does: a
// strategic merge patch of the status subresource under the "kubelet"
// field manager, here moving the Ready condition's lastProbeTime.
func driveUntil(ctx context.Context, cs kubernetes.Interface, refs []podRef, next *int, rate int, stop <-chan struct{}) loadResult {
	jobs := make(chan podRef, rate)
	var res loadResult
	var wg sync.WaitGroup
	var sent, failed atomic.Int64
	for range 64 {
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
	// Send what is due by the clock, so that late ticks on a loaded
	// machine do not lower the rate; skip only when the workers lag by a
	// second's worth.
loop:
	for issued := int64(0); ; {
		var now time.Time
		select {
		case <-stop:
			break loop
		case now = <-tick.C:
		}
		for due := int64(now.Sub(start).Seconds() * float64(rate)); issued < due; issued++ {
			select {
			case jobs <- refs[*next%len(refs)]:
				*next++
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
