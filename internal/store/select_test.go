package store

import (
	"bytes"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/internal/form"
	"github.com/openinformer/cache/internal/snapshot"
)

// countingForm counts its form's views; with the hot cache off each is a
// decode.
type countingForm struct {
	form.Form
	views atomic.Int64
}

func (c *countingForm) View(key string, held any, keep bool) (any, error) {
	c.views.Add(1)
	return c.Form.View(key, held, keep)
}

// selectStore is a compact store (no hot cache) of n pods in namespaces
// a and b, every 100th of namespace a labelled pick=yes, the others
// sharing one of two label sets.
func selectStore(t *testing.T, n int) (*Map, *countingForm) {
	t.Helper()
	views := &countingForm{Form: form.NewCompact(-1)}
	m := New(clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc},
		Config{Form: views, IsNamespaceIndex: isNamespaceIndex})
	for i := range n {
		pod := selectPod(i)
		m.Add(pod.Namespace+"/"+pod.Name, pod)
	}
	return m, views
}

func selectPod(i int) *v1.Pod {
	ns := []string{"a", "b"}[i%2]
	lbls := map[string]string{"app": "web", "tier": []string{"front", "back"}[i/2%2]}
	if ns == "a" && i%100 == 0 {
		lbls = map[string]string{"app": "web", "pick": "yes"}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%04d", i), Labels: lbls, ResourceVersion: "1"}}
}

func names(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(*v1.Pod).Name)
	}
	sort.Strings(out)
	return out
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	require.NoError(t, err)
	return sel
}

// A compact store's selecting reads decode the objects they return and no
// other: labels were kept when each object was written, and follow its
// updates and deletes.
func TestSelectDecodesOnlyMatches(t *testing.T) {
	const n = 1000
	m, views := selectStore(t, n)
	pick := mustSelector(t, "pick=yes")
	want := []string{"p0000", "p0100", "p0200", "p0300", "p0400", "p0500", "p0600", "p0700", "p0800", "p0900"}

	got, err := m.IndexSelect(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "a"}, pick)
	require.NoError(t, err)
	assert.Equal(t, want, names(got))
	assert.Equal(t, int64(len(want)), views.views.Swap(0), "decodes of a namespace's list")

	got, err = m.ListSelect(pick)
	require.NoError(t, err)
	assert.Equal(t, want, names(got))
	assert.Equal(t, int64(len(want)), views.views.Swap(0), "decodes of a whole list")

	got, err = m.IndexSelect(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "b"}, pick)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Zero(t, views.views.Swap(0), "a namespace without matches decodes nothing")

	moved := selectPod(100)
	moved.Labels = map[string]string{"app": "web"}
	m.Update("a/p0100", moved)
	m.Delete("a/p0200")
	added := selectPod(1)
	added.Namespace, added.Labels = "a", map[string]string{"pick": "yes"}
	m.Add("a/p0001", added)
	views.views.Store(0)
	got, err = m.ListSelect(pick)
	require.NoError(t, err)
	assert.Equal(t, []string{"p0000", "p0001", "p0300", "p0400", "p0500", "p0600", "p0700", "p0800", "p0900"}, names(got))
	assert.Equal(t, int64(9), views.views.Load(), "updated labels are matched, not decoded")
}

// An empty selector selects everything, reading no labels.
func TestSelectEverything(t *testing.T) {
	m, _ := selectStore(t, 10)
	got, err := m.ListSelect(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, got, 10)
	got, err = m.IndexSelect(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "a"}, labels.Everything())
	require.NoError(t, err)
	assert.Len(t, got, 5)
}

// countingSelector counts the label sets it is asked to match.
type countingSelector struct {
	labels.Selector
	matches int
}

func (c *countingSelector) Matches(l labels.Labels) bool {
	c.matches++
	return c.Selector.Matches(l)
}

// Objects sharing their labels (a ReplicaSet's pods) are matched once
// between them.
func TestSelectMatchesEachLabelSetOnce(t *testing.T) {
	m, _ := selectStore(t, 400)
	sel := &countingSelector{Selector: mustSelector(t, "tier=front")}
	got, err := m.ListSelect(sel)
	require.NoError(t, err)
	assert.Len(t, got, 200-4, "the tier=front half but namespace a's four picked pods")
	assert.Equal(t, 3, sel.matches, "three distinct label sets")
}

// Objects adopted from a restart snapshot come without their labels: the
// first selecting read decodes each once and learns them, the next reads
// decode only what they return.
func TestSelectLearnsLabelsOfAdoptedObjects(t *testing.T) {
	const n = 400
	src, _ := selectStore(t, n)
	m, views := selectStore(t, 0)
	_, dropped := m.ReplaceList(HandOver(snapshotRoundTrip(t, src, m)), "5", nil, false)
	require.Empty(t, dropped)
	require.Zero(t, views.views.Load(), "adopted as they were held")

	pick := mustSelector(t, "pick=yes")
	got, err := m.ListSelect(pick)
	require.NoError(t, err)
	assert.Len(t, got, 4)
	assert.Equal(t, int64(n), views.views.Swap(0), "the first read decodes every object once")
	got, err = m.IndexSelect(clientcache.NamespaceIndex, &metav1.ObjectMeta{Namespace: "a"}, pick)
	require.NoError(t, err)
	assert.Len(t, got, 4)
	assert.Equal(t, int64(4), views.views.Load(), "then only the matches")
}

// snapshotRoundTrip writes src's snapshot and reads it back staged for
// dst, as a restart does.
func snapshotRoundTrip(t *testing.T, src, dst *Map) map[string]any {
	t.Helper()
	staged, err := trySnapshotRoundTrip(t, src, dst)
	require.NoError(t, err)
	return staged
}

// trySnapshotRoundTrip is snapshotRoundTrip, returning the read's error.
func trySnapshotRoundTrip(t *testing.T, src, dst *Map) (map[string]any, error) {
	t.Helper()
	st, err := NewSnapshots(src, &v1.Pod{}, "")
	require.NoError(t, err)
	f := src.Freeze()
	var buf bytes.Buffer
	w, err := snapshot.NewWriter(&buf, snapshot.Header{Resource: "pods", Encoding: st.Encoding(f.Set()),
		Dictionary: st.Dictionary(), ResourceVersion: "5", Count: f.Len()})
	require.NoError(t, err)
	require.NoError(t, st.Write(w, f))
	r, err := snapshot.NewReader(&buf, -1, nil)
	require.NoError(t, err)
	reader, err := NewSnapshots(dst, &v1.Pod{}, "")
	require.NoError(t, err)
	staged := map[string]any{}
	_, err = reader.Read(r, staged)
	return staged, err
}

// An index that is missing or fails is an IndexLookupError, before any
// object is read.
func TestIndexSelectLookupErrors(t *testing.T) {
	for _, f := range []form.Form{form.Plain{}, form.NewCompact(-1)} {
		failing := func(any) ([]string, error) { return nil, fmt.Errorf("index function failed") }
		m := New(clientcache.Indexers{"failing": failing}, Config{Form: f})
		m.Add("a/p", selectPod(0))
		for name, err := range map[string]error{
			"missing": func() error { _, err := m.IndexSelect("missing", selectPod(0), labels.Everything()); return err }(),
			"failing": func() error { _, err := m.IndexSelect("failing", selectPod(0), labels.Everything()); return err }(),
		} {
			var lookup *IndexLookupError
			require.ErrorAs(t, err, &lookup, "%T %s", f, name)
		}
	}
}
