package cache

import "fmt"

// TypedIndexerFuncToIndexerFunc turns a typed index function into an
// IndexFunc. An object that is not a T yields an error instead of
// client-go's panic.
func TypedIndexerFuncToIndexerFunc[T any](indexer TypedIndexFunc[T]) IndexFunc {
	return func(obj interface{}) ([]string, error) {
		typed, ok := obj.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("index function expects %T, got %T", want, obj)
		}
		return indexer(typed)
	}
}

// TypedIndexersToIndexers converts every typed index function.
func TypedIndexersToIndexers[T any](indexers TypedIndexers[T]) Indexers {
	out := make(Indexers, len(indexers))
	for name, fn := range indexers {
		out[name] = TypedIndexerFuncToIndexerFunc(fn)
	}
	return out
}
