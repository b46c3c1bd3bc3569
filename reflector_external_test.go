package cache_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	cache "github.com/openinformer/cache"
)

type reflectorNameTestStore struct{}

func (reflectorNameTestStore) Add(interface{}) error               { return nil }
func (reflectorNameTestStore) Update(interface{}) error            { return nil }
func (reflectorNameTestStore) Delete(interface{}) error            { return nil }
func (reflectorNameTestStore) Replace([]interface{}, string) error { return nil }
func (reflectorNameTestStore) Resync() error                       { return nil }

func TestF2_DefaultNameIsCallerLine(t *testing.T) {
	r := cache.NewReflector(&cache.ListWatch{}, nil, reflectorNameTestStore{}, 0)
	assert.True(t, strings.HasSuffix(r.Name(), "reflector_external_test.go:21"), r.Name())
	assert.False(t, strings.HasPrefix(r.Name(), "/"), "no build machine path: %s", r.Name())
}
