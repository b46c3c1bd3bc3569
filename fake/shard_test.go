package fake

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/pager"
)

const (
	lowerHalf = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	upperHalf = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
)

func TestShardSelectorParsing(t *testing.T) {
	accepted := map[string]string{
		lowerHalf: lowerHalf,
		"  shardRange(object.metadata.namespace,\"0x0000000000000000\",'0x10000000000000000')  ": "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')",
		"(" + lowerHalf + ") || " + upperHalf:                                                    lowerHalf + " || " + upperHalf,
	}
	for expr, want := range accepted {
		sel, err := parseShardSelector(expr)
		require.NoError(t, err, expr)
		assert.Equal(t, want, sel.String())
	}
	rejected := map[string]string{
		"   ": "empty shard selector is not allowed",
		"shardRange(object.metadata.uid, '0x0', '0x10000000000000000')":                                      `hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`,
		"shardRange(object.metadata.uid, '0000000000000000', '0x10000000000000000')":                         "hexStart must have '0x' prefix",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')":                       "17-digit hex value must be '0x10000000000000000'",
		"shardRange(object.metadata.uid, '0x000000000000000G', '0x10000000000000000')":                       "invalid hex character",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')":                        "must be less than end",
		"shardRange(object.metadata.name, '0x0000000000000000', '0x10000000000000000')":                      `unsupported field path "object.metadata.name"`,
		"shardRange(object.metadata.uid, '0x0000000000000000')":                                              "requires exactly 3 arguments, got 2",
		"shardRange(object.metadata.uid, 0, '0x10000000000000000')":                                          "hexStart must be a string literal",
		"hashRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')":                        `unsupported function "hashRange"`,
		lowerHalf + " || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')": "all shard ranges must use the same field",
		lowerHalf + " " + upperHalf: "CEL parse error",
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000'": "CEL parse error",
	}
	for expr, want := range rejected {
		_, err := parseShardSelector(expr)
		require.Error(t, err, expr)
		assert.Contains(t, err.Error(), want, expr)
	}
}

// shardFakeTestServer serves n pods in two namespaces.
func shardFakeTestServer(t *testing.T, n int, support ShardSelectorSupport) *Server {
	t.Helper()
	s, _ := newFakeTestServer(t, Options{ShardSelectors: support})
	for i := range n {
		mustCreate(t, s, fakeTestPod(fmt.Sprintf("ns%d", i%2), fmt.Sprintf("p%02d", i)))
	}
	return s
}

func inShard(t *testing.T, expr string, obj runtime.Object) bool {
	t.Helper()
	sel, err := parseShardSelector(expr)
	require.NoError(t, err)
	ok, err := sel.Matches(obj)
	require.NoError(t, err)
	return ok
}

func TestShardedListSplitsTheCollection(t *testing.T) {
	s := shardFakeTestServer(t, 40, ShardSelectorsApplied)
	all, err := s.List(metav1.ListOptions{})
	require.NoError(t, err)
	assert.Nil(t, all.(*corev1.PodList).ShardInfo, "an unsharded list carries no shardInfo")
	var union []string
	for _, expr := range []string{lowerHalf, upperHalf} {
		obj, err := s.List(metav1.ListOptions{ShardSelector: expr})
		require.NoError(t, err)
		list := obj.(*corev1.PodList)
		require.NotNil(t, list.ShardInfo)
		assert.Equal(t, expr, list.ShardInfo.Selector)
		assert.NotEmpty(t, list.Items)
		for i := range list.Items {
			assert.True(t, inShard(t, expr, &list.Items[i]))
		}
		union = append(union, listNames(t, obj)...)
	}
	assert.ElementsMatch(t, listNames(t, all), union, "the halves partition the collection")
}

func TestShardedListPages(t *testing.T) {
	s := shardFakeTestServer(t, 40, ShardSelectorsApplied)
	whole, err := s.List(metav1.ListOptions{ShardSelector: upperHalf})
	require.NoError(t, err)
	first, err := s.List(metav1.ListOptions{ShardSelector: upperHalf, Limit: 3})
	require.NoError(t, err)
	assert.Nil(t, first.(*corev1.PodList).RemainingItemCount, "a filtered list does not count what remains")
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return s.ListWithContext(ctx, o)
	})
	p.PageSize = 3
	paged, _, err := p.List(context.Background(), metav1.ListOptions{ShardSelector: upperHalf})
	require.NoError(t, err)
	var got []string
	for _, item := range paged.(*metainternalversion.List).Items {
		got = append(got, metaOf(item).GetNamespace()+"/"+metaOf(item).GetName())
	}
	assert.Equal(t, listNames(t, whole), got)
}

func TestShardedWatchAndWatchList(t *testing.T) {
	s := shardFakeTestServer(t, 20, ShardSelectorsApplied)
	wl := startWatch(t, s, metav1.ListOptions{ShardSelector: lowerHalf, SendInitialEvents: ptrTo(true),
		AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	w := startWatch(t, s, metav1.ListOptions{ShardSelector: lowerHalf, ResourceVersion: s.ResourceVersion()})
	want, err := s.List(metav1.ListOptions{ShardSelector: lowerHalf})
	require.NoError(t, err)
	var initial []string
	for ev := nextEvent(t, wl); ev.Type != watch.Bookmark; ev = nextEvent(t, wl) {
		initial = append(initial, metaOf(ev.Object).GetNamespace()+"/"+metaOf(ev.Object).GetName())
	}
	assert.Equal(t, listNames(t, want), initial, "watch-list streams only the shard's objects")
	created := 0
	for i := range 20 {
		obj := mustCreate(t, s, fakeTestPod("new", fmt.Sprintf("n%02d", i)))
		if inShard(t, lowerHalf, obj) {
			created++
			assert.Equal(t, obj.(*corev1.Pod).Name, metaOf(nextEvent(t, w).Object).GetName())
			assert.Equal(t, obj.(*corev1.Pod).Name, metaOf(nextEvent(t, wl).Object).GetName())
		}
	}
	assert.NotZero(t, created)
}

func TestShardSelectorsIgnoredOrRejected(t *testing.T) {
	ignoring := shardFakeTestServer(t, 10, ShardSelectorsIgnored)
	obj, err := ignoring.List(metav1.ListOptions{ShardSelector: lowerHalf})
	require.NoError(t, err)
	assert.Len(t, obj.(*corev1.PodList).Items, 10)
	assert.Nil(t, obj.(*corev1.PodList).ShardInfo)
	_, err = ignoring.List(metav1.ListOptions{ShardSelector: "not a selector"})
	assert.NoError(t, err, "a server without the gate does not even parse the selector")

	rejecting := shardFakeTestServer(t, 10, ShardSelectorsRejected)
	_, err = rejecting.List(metav1.ListOptions{ShardSelector: lowerHalf})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	_, err = rejecting.Watch(metav1.ListOptions{ShardSelector: lowerHalf})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	obj, err = rejecting.List(metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, obj.(*corev1.PodList).Items, 10)
}

func TestInvalidShardSelectorIsAnInternalError(t *testing.T) {
	s := shardFakeTestServer(t, 1, ShardSelectorsApplied)
	_, err := s.List(metav1.ListOptions{ShardSelector: "shardRange(object.metadata.uid, '0x0', '0x1')"})
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, int32(http.StatusInternalServerError), status.Status().Code)
	assert.Contains(t, status.Status().Message, "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value")
}

func TestUIDsSpreadOverShards(t *testing.T) {
	counts := [4]int{}
	seen := map[string]bool{}
	for n := range uint64(4000) {
		uid := string(uidFor(n + 1))
		require.False(t, seen[uid], "duplicate uid %s", uid)
		seen[uid] = true
		top, err := strconv.ParseUint(sharding.HashField(uid)[:1], 16, 8)
		require.NoError(t, err)
		counts[top/4]++
	}
	for i, c := range counts {
		assert.InDelta(t, 1000, c, 150, "quarter %d", i)
	}
}
