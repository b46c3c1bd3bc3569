package form

import "github.com/openinformer/cache/internal/compact"

// HotCacheOf is f's hot cache, nil when it is off: the external tests
// (hot_store_test.go), which drive a store.Map in form f, check what it
// keeps. They are external because internal/store imports this package.
func HotCacheOf(f *Compact) *compact.HotCache[any] { return f.hot }
