package cache

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// undeltaTestPushes records every list pushed by an UndeltaStore.
type undeltaTestPushes struct {
	mu    sync.Mutex
	lists [][]interface{}
}

func (p *undeltaTestPushes) push(list []interface{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lists = append(p.lists, list)
}

func TestM6_EverySuccessfulWritePushesTheWholeContent(t *testing.T) {
	pushes := &undeltaTestPushes{}
	s := NewUndeltaStore(pushes.push, MetaNamespaceKeyFunc)
	a, b := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "1")
	a2 := newTestPod("ns", "a", "2")

	require.NoError(t, s.Add(a))
	require.NoError(t, s.Add(b))
	require.NoError(t, s.Update(a2))
	require.NoError(t, s.Delete(b))
	require.NoError(t, s.Replace([]interface{}{b}, "5"))

	require.Len(t, pushes.lists, 5)
	assert.ElementsMatch(t, []interface{}{a}, pushes.lists[0])
	assert.ElementsMatch(t, []interface{}{a, b}, pushes.lists[1])
	assert.ElementsMatch(t, []interface{}{a2, b}, pushes.lists[2])
	assert.ElementsMatch(t, []interface{}{a2}, pushes.lists[3])
	assert.ElementsMatch(t, []interface{}{b}, pushes.lists[4])
}

func TestM6_ReadsResyncAndFailedWritesDoNotPush(t *testing.T) {
	pushes := &undeltaTestPushes{}
	s := NewUndeltaStore(pushes.push, MetaNamespaceKeyFunc)
	pod := newTestPod("ns", "a", "1")
	require.NoError(t, s.Add(pod))
	pushes.lists = nil

	_ = s.List()
	_ = s.ListKeys()
	_, _, _ = s.Get(pod)
	_, _, _ = s.GetByKey("ns/a")
	require.NoError(t, s.Resync())
	assert.Error(t, s.Add("no meta"))
	assert.Error(t, s.Update("no meta"))
	assert.Error(t, s.Delete("no meta"))
	assert.Error(t, s.Replace([]interface{}{"no meta"}, "1"))
	assert.Empty(t, pushes.lists)
}

func TestM6_FailingBackingStoreDoesNotPush(t *testing.T) {
	boom := errors.New("boom")
	pushed := 0
	s := &UndeltaStore{
		Store: &FakeCustomStore{
			AddFunc:     func(interface{}) error { return boom },
			ReplaceFunc: func([]interface{}, string) error { return nil },
		},
		PushFunc: func([]interface{}) { pushed++ },
	}
	assert.Equal(t, boom, s.Add(newTestPod("ns", "a", "1")))
	assert.Equal(t, 0, pushed)
	require.NoError(t, s.Replace(nil, ""))
	assert.Equal(t, 1, pushed)
}

func TestM6_NilPushFuncIsSkipped(t *testing.T) {
	s := NewUndeltaStore(nil, MetaNamespaceKeyFunc)
	assert.NoError(t, s.Add(newTestPod("ns", "a", "1")))
}

func TestM6_ConcurrentWritersEachPush(t *testing.T) {
	pushes := &undeltaTestPushes{}
	s := NewUndeltaStore(pushes.push, MetaNamespaceKeyFunc)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, pod := range newTestPods(25, 1, "1") {
				_ = s.Update(pod)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, pushes.lists, 100, "one push per successful write")
	assert.Len(t, s.List(), 25)
}
