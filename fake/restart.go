package fake

// AdvanceResourceVersion moves the server's resourceVersion on by n without changing an object,
// as writes to other resources of the same etcd move a real server's: a quiet resource's
// bookmarks and consistent lists then carry a version no event of its own has. A warm restart's
// catch-up on a quiet resource waits for such a bookmark (docs/RESTART.md); a test reproduces
// that with AdvanceResourceVersion and a step of the fake clock. The history window is unchanged.
func (s *Server) AdvanceResourceVersion(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv += n
}
