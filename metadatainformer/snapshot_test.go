package metadatainformer

import (
	"path/filepath"
	"testing"

	cache "github.com/openinformer/cache"
	build "github.com/openinformer/cache/internal/informerbuild"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// WithSnapshots gives the resource's informer its file in the directory,
// named for the resource and the factory's scope.
func TestWithSnapshotsGivesEachInformerItsFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var got *cache.SnapshotOptions
	f := NewSharedInformerFactoryWithOptions(metadatafake.NewSimpleMetadataClient(scheme),
		0, WithSnapshots(dir, ""),
		WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) { got = opts.Snapshot }))
	f.ForResource(pods)
	want := filepath.Join(dir, build.SnapshotFileName(pods, cache.SnapshotScope{}, "", ""))
	if got == nil || got.Path != want || *got.Scope != (cache.SnapshotScope{}) {
		t.Errorf("snapshot %+v, want path %q and the whole collection's scope", got, want)
	}
}
