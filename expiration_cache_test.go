package cache

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
	clientcache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// newExpirationTestStore returns a TTL store on a fake clock.
func newExpirationTestStore(ttl time.Duration) (Store, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	return NewExpirationStore(MetaNamespaceKeyFunc, &TTLPolicy{TTL: ttl, Clock: clk}), clk
}

func expirationTestKeys(s Store) []string {
	keys := s.ListKeys()
	sort.Strings(keys)
	return keys
}

func TestM5_TTLPolicy(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	entry := &TimestampedEntry{Obj: "x", Timestamp: clk.Now()}
	p := &TTLPolicy{TTL: time.Minute, Clock: clk}

	clk.Step(time.Minute)
	assert.False(t, p.IsExpired(entry), "an entry exactly TTL old is alive")
	clk.Step(time.Nanosecond)
	assert.True(t, p.IsExpired(entry), "older than TTL is expired")

	assert.False(t, (&TTLPolicy{TTL: 0, Clock: clk}).IsExpired(entry), "TTL 0 never expires")
	assert.False(t, (&TTLPolicy{TTL: -time.Second, Clock: clk}).IsExpired(entry), "a negative TTL never expires")

	noClock := &TTLPolicy{TTL: time.Hour}
	assert.True(t, noClock.IsExpired(&TimestampedEntry{Timestamp: time.Now().Add(-2 * time.Hour)}), "a nil Clock is the real clock")
	assert.False(t, noClock.IsExpired(&TimestampedEntry{Timestamp: time.Now()}))
}

func TestM5_ExpiredEntriesAreRemovedOnRead(t *testing.T) {
	s, clk := newExpirationTestStore(time.Minute)
	a, b := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")
	require.NoError(t, s.Add(a))
	clk.Step(30 * time.Second)
	require.NoError(t, s.Add(b))

	got, exists, err := s.Get(a)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Same(t, a, got)

	clk.Step(31 * time.Second)
	assert.Equal(t, []string{"ns/a", "ns/b"}, expirationTestKeys(s), "ListKeys ignores expiry")
	_, exists, err = s.GetByKey("ns/a")
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Equal(t, []string{"ns/b"}, expirationTestKeys(s), "the expired entry was removed by the read")

	clk.Step(30 * time.Second)
	assert.Empty(t, s.List(), "List removes expired entries too")
	assert.Empty(t, s.ListKeys())
}

func TestM5_UpdateRefreshesLifetime(t *testing.T) {
	s, clk := newExpirationTestStore(time.Minute)
	pod := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(pod))
	clk.Step(50 * time.Second)
	newer := newTestPod("ns", "a", "2")
	require.NoError(t, s.Update(newer))
	clk.Step(50 * time.Second)

	got, exists, err := s.Get(pod)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Same(t, newer, got)
}

func TestM5_ListReturnsObjectsNotEntries(t *testing.T) {
	s, _ := newExpirationTestStore(time.Minute)
	a, b := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")
	require.NoError(t, s.Add(a))
	require.NoError(t, s.Add(b))
	assert.ElementsMatch(t, []interface{}{a, b}, s.List())
}

func TestM5_ReplaceStampsAllEntriesAtOnce(t *testing.T) {
	s, clk := newExpirationTestStore(time.Minute)
	require.NoError(t, s.Add(newTestPod("ns", "old", "1")))
	clk.Step(30 * time.Second)
	a, b := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")
	require.NoError(t, s.Replace([]interface{}{a, b}, "7"))
	assert.Equal(t, []string{"ns/a", "ns/b"}, expirationTestKeys(s))
	assert.Equal(t, "7", s.LastStoreSyncResourceVersion())

	clk.Step(time.Minute)
	assert.ElementsMatch(t, []interface{}{a, b}, s.List())
	clk.Step(time.Nanosecond)
	assert.Empty(t, s.List(), "both entries expire together")
}

func TestM5_ReplaceWithBadKeyChangesNothing(t *testing.T) {
	s, _ := newExpirationTestStore(time.Minute)
	a := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(a))
	err := s.Replace([]interface{}{newTestPod("ns", "b", "1"), "no meta"}, "9")
	var keyErr KeyError
	require.ErrorAs(t, err, &keyErr)
	assert.Equal(t, "no meta", keyErr.Obj)
	assert.Equal(t, []interface{}{a}, s.List())
}

func TestM5_KeyErrors(t *testing.T) {
	s, _ := newExpirationTestStore(time.Minute)
	var keyErr KeyError
	assert.ErrorAs(t, s.Add("x"), &keyErr)
	assert.ErrorAs(t, s.Update("x"), &keyErr)
	assert.ErrorAs(t, s.Delete("x"), &keyErr)
	_, _, err := s.Get("x")
	assert.ErrorAs(t, err, &keyErr)
	assert.Empty(t, s.ListKeys())
}

func TestM5_DeleteAndResync(t *testing.T) {
	s, _ := newExpirationTestStore(time.Minute)
	pod := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(pod))
	require.NoError(t, s.Delete(pod))
	require.NoError(t, s.Delete(pod), "deleting an absent object is no error")
	assert.Empty(t, s.ListKeys())
	assert.NoError(t, s.Resync())
}

// TestM5_ResourceVersionMatchesClientGo compares the store's resource
// version with client-go's after the same writes.
func TestM5_ResourceVersionMatchesClientGo(t *testing.T) {
	ours := NewTTLStore(MetaNamespaceKeyFunc, time.Hour)
	theirs := clientcache.NewTTLStore(MetaNamespaceKeyFunc, time.Hour)
	steps := []func(s Store){
		func(s Store) { _ = s.Add(newTestPod("ns", "a", "5")) },
		func(s Store) { _ = s.Replace([]interface{}{newTestPod("ns", "a", "6")}, "10") },
		func(s Store) { _ = s.Update(newTestPod("ns", "a", "11")) },
		func(s Store) { s.Bookmark("12") },
		func(s Store) { _ = s.Delete(newTestPod("ns", "a", "13")) },
		func(s Store) { _ = s.Delete(newTestPod("ns", "gone", "14")) },
	}
	for i, step := range steps {
		step(ours)
		step(theirs)
		assert.Equal(t, theirs.LastStoreSyncResourceVersion(), ours.LastStoreSyncResourceVersion(), "step %d", i)
		assert.ElementsMatch(t, theirs.List(), ours.List(), "step %d", i)
	}
}

func TestM5_NilPolicyNeverExpires(t *testing.T) {
	s := NewExpirationStore(MetaNamespaceKeyFunc, nil)
	pod := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(pod))
	assert.Equal(t, []interface{}{pod}, s.List())
}

func TestM5_FakeExpirationStoreReportsDeletedKeys(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	deleted := make(chan string, 2)
	policy := &FakeExpirationPolicy{
		NeverExpire: sets.New[string]("ns/keep"),
		RetrieveKeyFunc: func(obj interface{}) (string, error) {
			return MetaNamespaceKeyFunc(obj.(*TimestampedEntry).Obj)
		},
	}
	s := NewFakeExpirationStore(MetaNamespaceKeyFunc, deleted, policy, clk)
	keep, drop := newTestPod("ns", "keep", "1"), newTestPod("ns", "drop", "1")
	require.NoError(t, s.Add(keep))
	require.NoError(t, s.Add(drop))

	assert.Equal(t, []interface{}{keep}, s.List())
	require.Len(t, deleted, 1)
	assert.Equal(t, "ns/drop", <-deleted)
	assert.Equal(t, []string{"ns/keep"}, s.ListKeys())
}

func TestM5_FakeExpirationStoreWithoutChannelHidesButKeeps(t *testing.T) {
	policy := &FakeExpirationPolicy{NeverExpire: sets.New[string]()}
	s := NewFakeExpirationStore(MetaNamespaceKeyFunc, nil, policy, clocktesting.NewFakeClock(time.Unix(0, 0)))
	pod := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(pod))
	_, exists, err := s.Get(pod)
	require.NoError(t, err)
	assert.False(t, exists, "expired entries are hidden")
	assert.Equal(t, []string{"ns/a"}, s.ListKeys(), "but not removed without a channel")
}

func TestM5_FakeExpirationPolicyDefaultKey(t *testing.T) {
	p := &FakeExpirationPolicy{NeverExpire: sets.New[string]("ns/a")}
	assert.False(t, p.IsExpired(&TimestampedEntry{Obj: newTestPod("ns", "a", "1")}))
	assert.True(t, p.IsExpired(&TimestampedEntry{Obj: newTestPod("ns", "b", "1")}))
	assert.True(t, p.IsExpired(nil))
}

// TestM5_FakeExpirationStoreMatchesClientGo runs the same operations on our
// fake and client-go's, with a TTL policy on one fake clock.
func TestM5_FakeExpirationStoreMatchesClientGo(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	policy := &TTLPolicy{TTL: time.Minute, Clock: clk}
	oursDeleted, theirsDeleted := make(chan string, 10), make(chan string, 10)
	ours := NewFakeExpirationStore(MetaNamespaceKeyFunc, oursDeleted, policy, clk)
	theirs := clientcache.NewFakeExpirationStore(MetaNamespaceKeyFunc, theirsDeleted, policy, clk)

	steps := []func(s Store){
		func(s Store) { _ = s.Add(newTestPod("ns", "a", "1")) },
		func(Store) { clk.Step(40 * time.Second) },
		func(s Store) { _ = s.Add(newTestPod("ns", "b", "1")) },
		func(Store) { clk.Step(30 * time.Second) },
		func(s Store) { _, _, _ = s.GetByKey("ns/a") },
		func(s Store) { _ = s.Update(newTestPod("ns", "b", "2")) },
		func(Store) { clk.Step(50 * time.Second) },
		func(s Store) {
			_ = s.Replace([]interface{}{newTestPod("ns", "c", "1"), newTestPod("ns", "b", "3")}, "9")
		},
		func(Store) { clk.Step(61 * time.Second) },
	}
	for i, step := range steps {
		step(ours)
		step(theirs)
		assert.ElementsMatch(t, theirs.ListKeys(), ours.ListKeys(), "step %d", i)
		assert.ElementsMatch(t, theirs.List(), ours.List(), "step %d", i)
		assert.ElementsMatch(t, expirationTestDrain(theirsDeleted), expirationTestDrain(oursDeleted), "step %d", i)
	}
}

func TestM5_ExpirationStoreIsConcurrencySafe(t *testing.T) {
	s, clk := newExpirationTestStore(time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			_ = s.Add(newTestPod("ns", "a", "1"))
			clk.Step(10 * time.Millisecond)
		}
	}()
	for i := 0; i < 200; i++ {
		_ = s.List()
		_, _, _ = s.GetByKey("ns/a")
	}
	<-done
	_, exists, err := s.GetByKey("ns/a")
	require.NoError(t, err)
	assert.True(t, exists, "the last write is fresh")
}

// expirationTestDrain returns the keys waiting in ch; the order of expiries
// within one List follows the store's unspecified iteration order.
func expirationTestDrain(ch chan string) []string {
	var keys []string
	for len(ch) > 0 {
		keys = append(keys, <-ch)
	}
	return keys
}
