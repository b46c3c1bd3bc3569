package form

import "sync"

// Box is a held value on its way to a handler, read back by the first
// listener to reach it (see the fan-out's boxed adds): once read, every
// caller gets the same object, or false when it could not be read back
// (the form's view reported it).
//
// Its once is held across the form's view, which takes only the hot
// cache's shard lock: a caller waiting on another's read of the same box
// waits for nothing that can wait on it. A read object goes into the hot
// cache only if the key has no entry there, and an entry is valid for its
// bytes alone, so a box read after its key was updated or deleted can
// never be read as the key's current object.
type Box struct {
	key  string
	held any
	form Form
	once sync.Once
	obj  any
	ok   bool
}

// Fill makes b the box of key's held value, read back through f.
func (b *Box) Fill(key string, held any, f Form) {
	b.key, b.held, b.form = key, held, f
}

// Key is the store key of the boxed value.
func (b *Box) Key() string { return b.key }

// Object is the box's object, read back by the first caller; the others
// wait for it and get the same.
func (b *Box) Object() (any, bool) {
	b.once.Do(func() { b.obj, b.ok = View(b.form, b.key, b.held, keepsBoxed(b.form)) })
	return b.obj, b.ok
}

// keepsBoxed reports whether a box's object goes into f's hot cache. Boxes
// carry initial lists, each object read once by the handlers; under a
// memory budget their decodes are kept out of it, so that the room the
// budget counts for the hot cache stays free while the handlers' initial
// lists are in flight beside the store, uncounted (docs/MEMORY.md, "The
// budget's live heap, profiled").
func keepsBoxed(f Form) bool {
	c, ok := f.(*Compact)
	return !ok || c.budgetOf() == nil
}
