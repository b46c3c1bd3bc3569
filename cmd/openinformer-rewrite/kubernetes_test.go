package main

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinformer/cache/internal/importmap"
)

// kubernetes is where the swap met client-go's generated constructors in
// practice: kube-scheduler and kube-controller-manager.
const kubernetes = "k8s.io/kubernetes@v1.37.2"

// TestKubernetesSchedulerInformerNameIsReported: pkg/scheduler passes its
// InformerName, openinformer's after the swap, to client-go's
// coreinformers.NewPodInformerWithOptions. The command reports that line
// with what to do instead of writing code that does not compile.
func TestKubernetesSchedulerInformerNameIsReported(t *testing.T) {
	dir := moduleDir(t, kubernetes)
	_, _, found, err := rewriteFile(filepath.Join(dir, "pkg/scheduler/scheduler.go"), importmap.Paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !found[0].conflict || found[0].pos.Line != 658 || found[0].call != "coreinformers.NewPodInformerWithOptions" {
		t.Fatalf("findings %v, want scheduler.go:658's coreinformers.NewPodInformerWithOptions as a conflict", found)
	}
	if msg := found[0].String(); !strings.Contains(msg, "would not compile") || !strings.Contains(msg, "cache.NewSharedIndexInformerWithOptions") {
		t.Errorf("the report does not say what breaks and what to do: %s", msg)
	}
}

// TestKubernetesControllersHaveNoConflict: every file of pkg/controller
// rewrites without a conflict, and the three informers the
// ClusterTrustBundle publisher builds with client-go's generated
// constructors (kube-controller-manager's only ones) are listed.
func TestKubernetesControllersHaveNoConflict(t *testing.T) {
	dir := moduleDir(t, kubernetes)
	files, listed := 0, 0
	err := filepath.WalkDir(filepath.Join(dir, "pkg/controller"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		r, _, found, err := rewriteFile(path, importmap.Paths)
		if err != nil {
			return err
		}
		if r != nil {
			files++
		}
		for _, f := range found {
			if filepath.Base(f.pos.Filename) == "publisher.go" && strings.HasSuffix(f.call, ".NewFilteredClusterTrustBundleInformer") {
				listed++
			}
			if f.conflict {
				t.Errorf("conflict: %v", f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if listed != 3 {
		t.Errorf("%d of the publisher's three NewFilteredClusterTrustBundleInformer calls listed", listed)
	}
	if files == 0 {
		t.Error("no file of pkg/controller would change; the swap found nothing")
	}
}
