package cache

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"
)

// firstHalf selects the lower half of the uid hash space.
var firstHalf = sharding.NewSelector(sharding.ShardRangeRequirement{
	Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"})

func shardPods(n int) []v1.Pod {
	pods := make([]v1.Pod, n)
	for i := range pods {
		pods[i].ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), UID: types.UID(fmt.Sprintf("%d-uid", i)), ResourceVersion: "1"}
	}
	return pods
}

// shardedOutcome is what a sharded ListerWatcher did in one scenario, in a
// form two implementations can be compared by.
type shardedOutcome struct {
	Sent      []string // the ShardSelector of every request that reached the server
	Names     []string // the list's items, or the watch's events as "TYPE name"
	Remaining *int64
	Err       string
}

// shardedScenarios drives newLW, a NewShardedListWatch, through each of
// upstream's rules and reports what it did.
func shardedScenarios(t *testing.T, newLW func(ListerWatcher, sharding.Selector) ListerWatcher) map[string]shardedOutcome {
	t.Helper()
	out := map[string]shardedOutcome{}
	list := func(name string, info *metav1.ShardInfo, opts metav1.ListOptions) {
		var o shardedOutcome
		base := &ListWatch{ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
			o.Sent = append(o.Sent, options.ShardSelector)
			return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", RemainingItemCount: ptr.To[int64](90), ShardInfo: info}, Items: shardPods(10)}, nil
		}}
		obj, err := newLW(base, firstHalf).List(opts)
		if err != nil {
			o.Err = err.Error()
		} else {
			l := obj.(*v1.PodList)
			o.Remaining = l.RemainingItemCount
			for _, p := range l.Items {
				o.Names = append(o.Names, p.Name)
			}
		}
		out[name] = o
	}
	list("list/server applied", &metav1.ShardInfo{Selector: firstHalf.String()}, metav1.ListOptions{})
	list("list/server ignored", nil, metav1.ListOptions{})
	list("list/server applied another", &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"}, metav1.ListOptions{})
	list("list/caller asked for the same", nil, metav1.ListOptions{ShardSelector: firstHalf.String()})
	list("list/caller asked for another", nil, metav1.ListOptions{ShardSelector: "x"})

	watchScenario := func(name string, opts metav1.ListOptions) {
		var o shardedOutcome
		fw := watch.NewFakeWithChanSize(20, false)
		base := &ListWatch{WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) {
			o.Sent = append(o.Sent, options.ShardSelector)
			return fw, nil
		}}
		w, err := newLW(base, firstHalf).Watch(opts)
		if err != nil {
			o.Err = err.Error()
			out[name] = o
			return
		}
		pods := shardPods(6)
		for i := range pods {
			fw.Add(&pods[i])
		}
		fw.Modify(&pods[0])
		fw.Delete(&pods[1])
		fw.Action(watch.Bookmark, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bookmark", ResourceVersion: "9"}})
		fw.Error(&metav1.Status{Message: "boom"})
		fw.Add(&metav1.Status{Message: "not an object"}) // the selector cannot read it
		fw.Stop()
		for ev := range w.ResultChan() {
			name := "?"
			if m, ok := ev.Object.(metav1.Object); ok {
				name = m.GetName()
			} else if s, ok := ev.Object.(*metav1.Status); ok {
				name = s.Message
			}
			o.Names = append(o.Names, string(ev.Type)+" "+name)
		}
		w.Stop()
		out[name] = o
	}
	watchScenario("watch", metav1.ListOptions{})
	watchScenario("watch/caller asked for another", metav1.ListOptions{ShardSelector: "x"})

	out["fallback logged once"] = shardedOutcome{Err: fmt.Sprint(fallbackLogs(t, newLW))}

	plain := &ListWatch{}
	out["empty selector keeps lw"] = shardedOutcome{Err: fmt.Sprint(newLW(plain, sharding.Everything()) == ListerWatcher(plain), newLW(plain, nil) == ListerWatcher(plain))}
	unsupported := ToListWatcherWithWatchListSemantics(plain, fakeNoWatchListClient{})
	out["watch-list support forwarded"] = shardedOutcome{Err: fmt.Sprint(
		watchlist.DoesClientNotSupportWatchListSemantics(newLW(unsupported, firstHalf)),
		watchlist.DoesClientNotSupportWatchListSemantics(newLW(plain, firstHalf)))}
	return out
}

// fakeNoWatchListClient is a client that says it cannot stream lists.
type fakeNoWatchListClient struct{}

func (fakeNoWatchListClient) IsWatchListSemanticsUnSupported() bool { return true }

func TestNewShardedListWatchFollowsUpstreamRules(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var kept []string
	for _, p := range shardPods(10) {
		if ok, _ := firstHalf.Matches(&p); ok {
			kept = append(kept, p.Name)
		}
	}
	require.NotEmpty(t, kept)
	require.Less(t, len(kept), 10)
	var keptEvents []string
	for _, p := range shardPods(6) {
		if ok, _ := firstHalf.Matches(&p); ok {
			keptEvents = append(keptEvents, "ADDED "+p.Name)
		}
	}
	for _, ev := range []string{"MODIFIED p0", "DELETED p1"} {
		if ok, _ := firstHalf.Matches(&shardPods(2)[ev[len(ev)-1]-'0']); ok {
			keptEvents = append(keptEvents, ev)
		}
	}
	keptEvents = append(keptEvents, "BOOKMARK bookmark", "ERROR boom")
	sel := firstHalf.String()
	all := make([]string, 10)
	for i := range all {
		all[i] = fmt.Sprintf("p%d", i)
	}
	want := map[string]shardedOutcome{
		"list/server applied":            {Sent: []string{sel}, Names: all, Remaining: ptr.To[int64](90)},
		"list/server ignored":            {Sent: []string{sel}, Names: kept},
		"list/server applied another":    {Sent: []string{sel}, Err: `server applied shard selector "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')", expected "` + sel + `"`},
		"list/caller asked for the same": {Sent: []string{sel}, Names: kept},
		"list/caller asked for another":  {Err: `conflicting shard selector "x", expected "` + sel + `"`},
		"watch":                          {Sent: []string{sel}, Names: keptEvents},
		"watch/caller asked for another": {Err: `conflicting shard selector "x", expected "` + sel + `"`},
		"empty selector keeps lw":        {Err: "true true"},
		"fallback logged once":           {Err: "1"},
		"watch-list support forwarded":   {Err: "true false"},
	}
	got := shardedScenarios(t, NewShardedListWatch)
	for name, w := range want {
		assert.Equal(t, w, got[name], name)
	}
	assert.Len(t, got, len(want))
}

func TestNewShardedListWatchNilListerWatcherStaysNil(t *testing.T) {
	assert.Nil(t, NewShardedListWatch(nil, firstHalf))
}

func TestSharedIndexInformerShardSelectorReachesRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, viaSetter := range []bool{false, true} {
		t.Run(fmt.Sprint("setter=", viaSetter), func(t *testing.T) {
			sent := make(chan string, 10)
			lw := &ListWatch{
				ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
					sent <- options.ShardSelector
					return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: shardPods(10)}, nil
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}
			opts := SharedIndexInformerOptions{}
			if !viaSetter {
				opts.ShardSelector = firstHalf
			}
			inf := NewSharedIndexInformerWithOptions(ToListWatcherWithWatchListSemantics(lw, fakeNoWatchListClient{}), &v1.Pod{}, opts)
			if viaSetter {
				require.NoError(t, inf.(interface{ SetShardSelector(sharding.Selector) error }).SetShardSelector(firstHalf))
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			assert.Equal(t, firstHalf.String(), <-sent)
			require.True(t, WaitForCacheSync(ctx.Done(), inf.HasSynced))
			for _, key := range inf.GetStore().ListKeys() {
				obj, _, _ := inf.GetStore().GetByKey(key)
				ok, err := firstHalf.Matches(obj.(*v1.Pod))
				assert.True(t, ok && err == nil, key)
			}
			assert.NotEmpty(t, inf.GetStore().ListKeys())
			err := inf.(interface{ SetShardSelector(sharding.Selector) error }).SetShardSelector(nil)
			assert.EqualError(t, err, "informer has already started")
			cancel()
			<-done
		})
	}
}

// fallbackLogs counts the fallback lines logged through the context over two
// unsharded LISTs and a watch with events outside the shard.
func fallbackLogs(t *testing.T, newLW func(ListerWatcher, sharding.Selector) ListerWatcher) int {
	t.Helper()
	var buf bytes.Buffer
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf), textlogger.Verbosity(2))))
	fw := watch.NewFakeWithChanSize(10, false)
	lw := ToListerWatcherWithContext(newLW(&ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: shardPods(10)}, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}, firstHalf))
	for range 2 {
		_, err := lw.ListWithContext(ctx, metav1.ListOptions{})
		require.NoError(t, err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	pods := shardPods(10)
	for i := range pods {
		fw.Add(&pods[i])
	}
	fw.Stop()
	for range w.ResultChan() {
	}
	return strings.Count(buf.String(), `"Server did not apply shard selector; falling back to client-side filtering" selector="`+firstHalf.String()+`"`)
}
