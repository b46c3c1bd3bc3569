package cache

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestM10_FakeCustomStoreZeroValuesWithoutFuncs(t *testing.T) {
	var f FakeCustomStore
	pod := newTestPod("ns", "a", "1")

	assert.NoError(t, f.Add(pod))
	assert.NoError(t, f.Update(pod))
	assert.NoError(t, f.Delete(pod))
	assert.Nil(t, f.List())
	assert.Nil(t, f.ListKeys())
	item, exists, err := f.Get(pod)
	assert.Nil(t, item)
	assert.False(t, exists)
	assert.NoError(t, err)
	item, exists, err = f.GetByKey("ns/a")
	assert.Nil(t, item)
	assert.False(t, exists)
	assert.NoError(t, err)
	assert.NoError(t, f.Replace([]interface{}{pod}, "5"))
	assert.NoError(t, f.Resync())
	f.Bookmark("7")
	assert.Equal(t, "", f.LastStoreSyncResourceVersion())
}

func TestM10_FakeCustomStoreForwardsToFuncs(t *testing.T) {
	pod := newTestPod("ns", "a", "1")
	errAdd, errUpdate, errDelete := errors.New("add"), errors.New("update"), errors.New("delete")
	errGet, errGetByKey := errors.New("get"), errors.New("getbykey")
	errReplace, errResync := errors.New("replace"), errors.New("resync")
	var calls []string
	record := func(name string, arg interface{}) { calls = append(calls, name); assert.Equal(t, pod, arg, name) }
	f := &FakeCustomStore{
		AddFunc:    func(obj interface{}) error { record("add", obj); return errAdd },
		UpdateFunc: func(obj interface{}) error { record("update", obj); return errUpdate },
		DeleteFunc: func(obj interface{}) error { record("delete", obj); return errDelete },
		ListFunc:   func() []interface{} { calls = append(calls, "list"); return []interface{}{pod} },
		ListKeysFunc: func() []string {
			calls = append(calls, "listkeys")
			return []string{"ns/a"}
		},
		GetFunc: func(obj interface{}) (interface{}, bool, error) { record("get", obj); return pod, true, errGet },
		GetByKeyFunc: func(key string) (interface{}, bool, error) {
			calls = append(calls, "getbykey:"+key)
			return pod, true, errGetByKey
		},
		ReplaceFunc: func(list []interface{}, rv string) error {
			calls = append(calls, "replace:"+rv)
			assert.Equal(t, []interface{}{pod}, list)
			return errReplace
		},
		ResyncFunc:                       func() error { calls = append(calls, "resync"); return errResync },
		BookmarkFunc:                     func(rv string) { calls = append(calls, "bookmark:"+rv) },
		LastStoreSyncResourceVersionFunc: func() string { calls = append(calls, "lastrv"); return "42" },
	}

	assert.Equal(t, errAdd, f.Add(pod))
	assert.Equal(t, errUpdate, f.Update(pod))
	assert.Equal(t, errDelete, f.Delete(pod))
	assert.Equal(t, []interface{}{pod}, f.List())
	assert.Equal(t, []string{"ns/a"}, f.ListKeys())
	item, exists, err := f.Get(pod)
	assert.Equal(t, pod, item)
	assert.True(t, exists)
	assert.Equal(t, errGet, err)
	item, exists, err = f.GetByKey("ns/a")
	assert.Equal(t, pod, item)
	assert.True(t, exists)
	assert.Equal(t, errGetByKey, err)
	assert.Equal(t, errReplace, f.Replace([]interface{}{pod}, "9"))
	assert.Equal(t, errResync, f.Resync())
	f.Bookmark("10")
	assert.Equal(t, "42", f.LastStoreSyncResourceVersion())

	assert.Equal(t, []string{"add", "update", "delete", "list", "listkeys", "get", "getbykey:ns/a",
		"replace:9", "resync", "bookmark:10", "lastrv"}, calls)
}
