package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openinformer/cache/internal/store"
)

// A preholding buffer keeps no keys of its own while each preheld item's
// store key is its name's key, and switches to keeping every item's key
// (its name's, which deletes and out-of-order events are matched by) once
// a store keys an item otherwise.
func TestWatchListBufferPreheldKeys(t *testing.T) {
	pod := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	for _, tc := range []struct {
		name     string
		storeKey func(p *v1.Pod) string
		keysKept bool
	}{
		{"store keys by name", func(p *v1.Pod) string { return p.Namespace + "/" + p.Name }, false},
		{"store keys otherwise", func(p *v1.Pod) string {
			if p.Name == "a" {
				return p.Namespace + "/" + p.Name
			}
			return "other:" + p.Name
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newWatchListBuffer(nil)
			b.prehold = func(obj any) (store.Preheld, error) {
				p := obj.(*v1.Pod)
				return testPreheld(tc.storeKey(p), p), nil
			}
			for _, n := range []string{"a", "b", "c"} {
				require.NoError(t, b.add(pod(n)))
			}
			assert.Equal(t, tc.keysKept, b.keys != nil)
			if tc.keysKept {
				assert.Equal(t, []string{"ns/a", "ns/b", "ns/c"}, b.keys)
			}
			require.NoError(t, b.delete(pod("b")))
			require.NoError(t, b.update(pod("a")))
			var names []string
			for _, obj := range b.finish() {
				names = append(names, obj.(store.Preheld).Held().(*v1.Pod).Name)
			}
			assert.Equal(t, []string{"a", "c"}, names)
		})
	}
}
