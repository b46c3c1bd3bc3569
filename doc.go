// Package cache is openinformer: a drop-in replacement for
// k8s.io/client-go/tools/cache, the machinery that keeps a controller's
// in-memory copy of Kubernetes objects in step with the API server.
//
// # The pipeline
//
//	ListerWatcher ──► Reflector ──► queue ──► controller ──► Indexer (the cache)
//	                 list, watch,  RealFIFO   processLoop        │
//	                 relist, backoff                              ▼
//	                                                  sharedProcessor ──► handlers
//
// A Reflector lists and watches one resource through a ListerWatcher and
// writes what it sees into a queue. The controller pops the queue in order,
// applies each change to a thread-safe Indexer, and hands a notification to
// every registered ResourceEventHandler. A SharedIndexInformer bundles all of
// this behind one object that many handlers share.
//
// # Drop-in
//
// Interfaces, function types and plain data are type aliases of client-go's
// (see types.go), so values built here satisfy client-go's interfaces and can
// be used wherever client-go's are expected.
package cache
