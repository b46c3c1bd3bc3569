package main

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func TestInOrderHandsOverInOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	identity := func(i int) int { return i }
	var got []int
	require.NoError(t, inOrder(10, []func(int) int{identity, identity, identity}, func(i int) error {
		got = append(got, i)
		return nil
	}))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
}

func TestInOrderStopsAtTheFirstErrorAndItsProducersExit(t *testing.T) {
	defer goleak.VerifyNone(t)
	stop := errors.New("stop")
	identity := func(i int) int { return i }
	consumed := 0
	err := inOrder(1000, []func(int) int{identity, identity}, func(i int) error {
		consumed++
		if i == 5 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 6, consumed)
}

// The rows decode the parent's objects file into the same objects that
// making each one in turn gives.
func TestEachFromTheObjectsFileMakesTheSameObjects(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, kind := range []string{"pods", "custom", "small"} {
		t.Run(kind, func(t *testing.T) {
			const n = 7
			name, err := writeObjects(kind, n)
			require.NoError(t, err)
			defer os.Remove(name)
			src, err := newSource(kind)
			require.NoError(t, err)
			objectsFile = name
			defer func() { objectsFile = "" }()
			var got []kruntime.Object
			require.NoError(t, src.each(n, func(obj kruntime.Object) error {
				got = append(got, obj)
				return nil
			}))
			require.Len(t, got, n)
			for i, obj := range got {
				assert.Equal(t, src.wire(i), obj, "object %d", i)
			}
		})
	}
}
