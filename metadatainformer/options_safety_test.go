package metadatainformer

import (
	"context"
	"path/filepath"
	"testing"

	cache "github.com/openinformer/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// reportedErrors collects what utilruntime.HandleError is told until the
// test ends.
func reportedErrors(t *testing.T) *[]error {
	var got []error
	old := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...any) {
		got = append(got, err)
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = old })
	return &got
}

// Issue 39 item 6: a nil WithInformerOptions function adjusts nothing, as
// client-go's nil tweak, instead of a nil dereference; an empty or missing
// snapshot directory is reported once when the factory is made, whose
// informers then have no snapshot.
func TestOptionsThatCannotWork(t *testing.T) {
	defer goleak.VerifyNone(t)
	reported := reportedErrors(t)
	var seen []*cache.SnapshotOptions
	see := WithInformerOptions(func(_ schema.GroupVersionResource, opts *cache.SharedIndexInformerOptions) {
		seen = append(seen, opts.Snapshot)
	})
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "absent")} {
		f := NewSharedInformerFactoryWithOptions(metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), 0, WithInformerOptions(nil), WithSnapshots(dir, "v1"), see)
		f.ForResource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Informer()
	}
	require.Len(t, *reported, 2)
	assert.ErrorContains(t, (*reported)[0], "metadatainformer.WithSnapshots: snapshot directory is empty; snapshots turned off")
	assert.ErrorContains(t, (*reported)[1], "no such file or directory")
	assert.Equal(t, []*cache.SnapshotOptions{nil, nil}, seen)
}
