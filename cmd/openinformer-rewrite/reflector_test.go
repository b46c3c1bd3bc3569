package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openinformer/cache/internal/importmap"
)

const handlerSource = `package app

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

func setHandlers(informer cache.SharedIndexInformer) error {
	if err := informer.SetWatchErrorHandler(func(r *cache.Reflector, err error) {}); err != nil {
		return err
	}
	return informer.SetWatchErrorHandlerWithContext(logWatchError)
}

func logWatchError(ctx context.Context, r *cache.Reflector, err error) { _ = r.Name() }

func keep(r *cache.Reflector) *cache.Reflector { return r }
`

const handlerRewritten = `package app

import (
	"context"

	"github.com/openinformer/cache"
	clientcache "k8s.io/client-go/tools/cache"
)

func setHandlers(informer cache.SharedIndexInformer) error {
	if err := informer.SetWatchErrorHandler(func(r *clientcache.Reflector, err error) {}); err != nil {
		return err
	}
	return informer.SetWatchErrorHandlerWithContext(logWatchError)
}

func logWatchError(ctx context.Context, r *clientcache.Reflector, err error) { _ = r.Name() }

func keep(r *cache.Reflector) *cache.Reflector { return r }
`

// A watch error handler's *cache.Reflector parameter stays client-go's
// (the handler types are client-go's), literal or declared; other uses of
// the Reflector become ours.
func TestWatchErrorHandlersKeepClientGoReflector(t *testing.T) {
	file := filepath.Join(t.TempDir(), "app.go")
	if err := os.WriteFile(file, []byte(handlerSource), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _, _, err := rewriteFile(file, importmap.Paths)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || string(r.src) != handlerRewritten {
		t.Errorf("rewritten:\n%s\nwant:\n%s", r.src, handlerRewritten)
	}
}
