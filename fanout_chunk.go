package cache

import "github.com/openinformer/cache/internal/store"

// preheldChunk is notificationChunk for notifications whose objects a
// compact informer's watch-list held encoded: each chunk's objects are
// decoded together and live until its listeners are done with them, so a
// chunk of 1024 small custom resources (about 10 KB each decoded) kept
// 11.5 MB alive beside a 26 MB compact store at the height of the sync
// (docs/MEMORY.md, "Initial sync peak"). 64 bounds that at about 0.7 MB
// for them and 1.5 MB for pods, while a chunk still amortises the
// listeners' locks over many notifications.
const preheldChunk = 64

// chunkFor is how many of ns to hand out at once.
func chunkFor(ns []notification) int {
	if _, ok := ns[0].newObj.(store.Preheld); ok {
		return min(len(ns), preheldChunk)
	}
	return min(len(ns), notificationChunk)
}
