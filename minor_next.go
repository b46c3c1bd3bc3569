package cache

import (
	"reflect"

	clientcache "k8s.io/client-go/tools/cache"
)

// clientGoV038 reports whether this binary is built with client-go v0.38 or
// later, whose SharedIndexInformer has SetShardSelector. The few behaviours
// that changed between v0.37 and v0.38 in a way v0.37 users can observe
// follow it, so that the package mirrors whichever minor the user's go.mod
// selects without a build tag.
var clientGoV038 = func() bool {
	_, ok := reflect.TypeFor[clientcache.SharedIndexInformer]().MethodByName("SetShardSelector")
	return ok
}()
