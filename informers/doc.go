// Package informers is client-go's typed shared informer factory
// (k8s.io/client-go/informers) building openinformer's informers: change
// the factory's import path and every informer it hands out, for every
// built-in resource, is github.com/openinformer/cache's.
//
// The constructors return client-go's interface types
// (informers.SharedInformerFactory, GenericInformer), and the group
// accessors return client-go's generated group packages built on this
// factory, so code that names client-go's types keeps compiling. Each
// group, version and resource accessor is wrapped (generated, in
// zz_generated.go) only so that Lister() returns a lister of ours
// implementing client-go's lister interface: its List and namespace List
// go through this module's ListAll and ListAllByNamespace, which let a
// compact store match the label selector before it decodes (client-go's
// would decode every object of the namespace first). Get and the
// listers' expansion methods (GetPodReplicaSets and the like) are
// client-go's, reading our indexer. Those packages ask the
// factory for an informer through InformerFor with client-go's generated
// constructor; the factory recognises it and builds openinformer's
// informer for the same resource instead, with the same list and watch,
// namespace index, resync, transform and metrics identity. Typed accessors
// (Core().V1().Pods().Informer()) return client-go's typed wrapper around
// that informer, which adds the type-safe handler and indexer methods and
// passes everything else straight to it.
//
// The informers it builds list and watch in the factory's namespace with
// the factory's list-options tweak, which is what client-go's group
// accessors pass on; a group package built directly on the factory with
// another namespace (core.New(f, "ns", nil)) still gets the factory's.
//
// Each resource's list and watch calls come from a table generated from
// client-go's informers (make generate), one function per API group that
// the group's accessor registers with the factory, so a binary links the
// clientset calls of the groups it uses only. InformerFor called directly
// with a generated constructor of a group whose accessor this factory has
// not served yet, or of a resource newer than the table, builds client-go's
// informer and reports it through utilruntime.HandleError.
//
// WithInformerOptions and WithShard add openinformer's options, for the
// whole factory or per resource; without them the informers behave as
// client-go's do.
package informers
