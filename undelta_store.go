package cache

// UndeltaStore is a Store that, after every successful write, hands its
// whole content to PushFunc. It turns a stream of changes into a stream of
// complete states, for consumers that only understand "here is everything".
// Reads, Resync and failed writes push nothing. Concurrent writers may push
// the same state twice, and a pushed list may already include a later
// write; each push reflects the store at some moment after its write.
type UndeltaStore struct {
	Store
	PushFunc func([]interface{})
}

var _ Store = &UndeltaStore{}

// Add adds obj and pushes the content.
func (u *UndeltaStore) Add(obj interface{}) error {
	return u.pushAfter(u.Store.Add(obj))
}

// Update updates obj and pushes the content.
func (u *UndeltaStore) Update(obj interface{}) error {
	return u.pushAfter(u.Store.Update(obj))
}

// Delete deletes obj and pushes the content.
func (u *UndeltaStore) Delete(obj interface{}) error {
	return u.pushAfter(u.Store.Delete(obj))
}

// Replace replaces the content and pushes it.
func (u *UndeltaStore) Replace(list []interface{}, resourceVersion string) error {
	return u.pushAfter(u.Store.Replace(list, resourceVersion))
}

// pushAfter pushes the content unless the write failed.
func (u *UndeltaStore) pushAfter(err error) error {
	if err != nil {
		return err
	}
	if u.PushFunc != nil {
		u.PushFunc(u.Store.List())
	}
	return nil
}

// NewUndeltaStore returns an UndeltaStore over a new Store keyed by keyFunc.
func NewUndeltaStore(pushFunc func([]interface{}), keyFunc KeyFunc) *UndeltaStore {
	return &UndeltaStore{Store: NewStore(keyFunc), PushFunc: pushFunc}
}
