package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openinformer/cache/internal/fixtures"
)

// startResult is one informer start of a restart round, as the harness saw
// it and the child reported it.
type startResult struct {
	sync   startReport
	verify verifyReport
	stop   stopReport
	load   loadResult
	// stopSent is when the harness told the child to stop.
	stopSent time.Time
}

// restartRound is one round of -mode=restart.
type restartRound struct {
	clientGo, cold, warm startResult
	changes              changeResult
	// downtime is from the cold informer's stop (its watch ends) to the
	// warm informer's Run.
	downtime time.Duration
	load     string
}

// runRestart runs the restart rounds: in each, client-go's informer cold,
// ours cold (then stopped, its snapshot written), the downtime's changes,
// and ours warm from the snapshot, each start in its own process with the
// status patches of -rate flowing until its handler synced.
func runRestart(ctx context.Context, c config, cl *cluster, loadStart string) error {
	snapDir := filepath.Join(cl.dir, "snapshots")
	path := filepath.Join(snapDir, "pods.snap")
	var rounds []restartRound
	next, created := 0, c.pods
	for r := range c.rounds {
		var rr restartRound
		var err error
		if rr.clientGo, err = runStart(ctx, c, cl, "client-go", "", &next); err != nil {
			return fmt.Errorf("round %d, client-go cold: %w", r+1, err)
		}
		// Ours must start cold: no snapshot, no journal.
		if err := os.RemoveAll(snapDir); err != nil {
			return err
		}
		if err := os.MkdirAll(snapDir, 0o755); err != nil {
			return err
		}
		if rr.cold, err = runStart(ctx, c, cl, "ours", path, &next); err != nil {
			return fmt.Errorf("round %d, ours cold: %w", r+1, err)
		}
		if rr.changes, err = changeWhileDown(ctx, c, cl, r, &created); err != nil {
			return fmt.Errorf("round %d, changes while down: %w", r+1, err)
		}
		fmt.Printf("  while down: %d updated, %d deleted, %d created in %.1fs\n",
			rr.changes.updated, rr.changes.deleted, rr.changes.created, rr.changes.took.Seconds())
		if rr.warm, err = runStart(ctx, c, cl, "ours", path, &next); err != nil {
			return fmt.Errorf("round %d, ours warm: %w", r+1, err)
		}
		rr.downtime = time.Unix(0, rr.warm.sync.RunAt).Sub(rr.cold.stopSent)
		rr.load = loadAvg()
		fmt.Printf("round %d done: downtime %.1fs (load %s)\n", r+1, rr.downtime.Seconds(), rr.load)
		rounds = append(rounds, rr)
	}
	printRestartTables(os.Stdout, c, rounds, loadStart, loadAvg())
	return nil
}

// runStart starts one informer process, drives the status patches until
// its handler synced, collects its check, then stops it.
func runStart(ctx context.Context, c config, cl *cluster, variant, path string, next *int) (startResult, error) {
	var res startResult
	var extra []string
	if path != "" {
		extra = append(extra, "-snapshot="+path)
	}
	ch, err := spawn(cl.srv, "restart", variant, extra...)
	if err != nil {
		return res, err
	}
	defer func() {
		ch.in.Close()
		_ = ch.cmd.Process.Kill()
		_ = ch.cmd.Wait()
	}()
	stopLoad := make(chan struct{})
	loadDone := make(chan loadResult, 1)
	refs := cl.refs
	go func() { loadDone <- driveUntil(ctx, cl.cs, refs, next, c.rate, stopLoad) }()
	err = ch.read(&res.sync)
	close(stopLoad)
	res.load = <-loadDone
	if err != nil {
		return res, fmt.Errorf("sync: %w", err)
	}
	if err := ch.read(&res.verify); err != nil {
		return res, fmt.Errorf("check: %w", err)
	}
	res.stopSent = time.Now()
	fmt.Fprintln(ch.in, "stop")
	if err := ch.read(&res.stop); err != nil {
		return res, fmt.Errorf("stop: %w", err)
	}
	printStart(res)
	return res, nil
}

func printStart(r startResult) {
	s, v := r.sync, r.verify
	name := s.Variant
	if s.Outcome != "" {
		name += " (" + s.Outcome + ")"
	}
	fmt.Printf("  %-22s %d pods: informer synced %.2fs (CPU %.2fs), handler %.2fs (CPU %.2fs, sys %.2fs), read %.1f MiB"+
		" (wire %.1f MiB), requests %s, peak live %.0f MiB (heap %.0f MiB), steady %.0f MiB; stop %.2fs",
		name, s.Pods, s.Informer.WallSec, s.Informer.CPUSec, s.Handler.WallSec, s.Handler.CPUSec, s.Handler.SysSec,
		mbi(s.Handler.Requests.Payload), mbi(s.Handler.Requests.Wire), requestsString(s.Handler.Requests),
		mb(s.PeakLive), mb(s.PeakHeap), mb(s.SteadyLive), r.stop.StopSec)
	if r.stop.SnapshotBytes > 0 {
		fmt.Printf(" (snapshot %.0f MiB, %d objects, saved in %.2fs)", mbi(r.stop.SnapshotBytes), r.stop.SnapshotObjects, r.stop.SaveSec)
	}
	fmt.Printf("; load %d patches (%d failed, %d skipped)\n", r.load.sent, r.load.failed, r.load.skipped)
	fmt.Printf("  %-22s initial list %d, exact LIST at %s: %d; equal %v, late initial adds %d, other notifications %d %s\n",
		"", v.Initial, v.RV, v.Listed, v.Equal, v.Late, v.Others, v.Err)
}

// changeResult is what changeWhileDown did.
type changeResult struct {
	updated, deleted, created int
	took                      time.Duration
}

// changeWhileDown changes -changed of the pods while ours is down: half of
// them updated (an annotation, as a controller writes it), a quarter
// deleted (no grace period: no kubelet confirms), a quarter created the
// way createPods does; the creates come last, so that the newest version
// of the state is a pod's (see verifyInitial). cl.refs follows.
func changeWhileDown(ctx context.Context, c config, cl *cluster, round int, created *int) (changeResult, error) {
	began := time.Now()
	n := len(cl.refs)
	k := max(int(float64(n)*c.changed), 4)
	res := changeResult{updated: k / 2, deleted: k / 4}
	res.created = k - res.updated - res.deleted
	touched := res.updated + res.deleted
	stride := max(n/touched, 1)
	err := forEach(c.workers, touched, func(i int) error {
		ref := cl.refs[(i*stride)%n]
		pods := cl.cs.CoreV1().Pods(ref.namespace)
		if i < res.updated {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench.openinformer.io/changed":"r%d-%d"}}}`, round+1, i)
			return retry(func() error {
				_, err := pods.Patch(ctx, ref.name, types.MergePatchType, []byte(patch),
					metav1.PatchOptions{FieldManager: "kube-controller-manager"})
				return err
			})
		}
		now := int64(0)
		return retry(func() error {
			err := pods.Delete(ctx, ref.name, metav1.DeleteOptions{GracePeriodSeconds: &now})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
	if err != nil {
		return res, err
	}
	deleted := map[int]bool{}
	for i := res.updated; i < touched; i++ {
		deleted[(i*stride)%n] = true
	}
	src := fixtures.NewPodSource(1)
	fresh := make([]podRef, res.created)
	pods := make([]*corev1.Pod, res.created)
	for i := range pods {
		pods[i] = src.Pod(*created + i)
		fresh[i] = podRef{pods[i].Namespace, pods[i].Name}
	}
	err = forEach(c.workers, res.created, func(i int) error { return createPod(ctx, cl.cs, pods[i]) })
	if err != nil {
		return res, err
	}
	*created += res.created
	kept := cl.refs[:0:0]
	for i, ref := range cl.refs {
		if !deleted[i] {
			kept = append(kept, ref)
		}
	}
	cl.refs = append(kept, fresh...)
	res.took = time.Since(began)
	return res, nil
}
