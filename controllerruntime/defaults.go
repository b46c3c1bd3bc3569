package crcache

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// defaultOptions fills what the manager left unset (HTTP client, scheme,
// mapper) and resolves every per-type and per-namespace Config against
// the cache-wide defaults, with controller-runtime v0.25.3's precedence:
// ByObject, then DefaultNamespaces[namespace], then the Default* fields.
func defaultOptions(cfg *rest.Config, opts crcache.Options) (crcache.Options, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if opts.HTTPClient == nil {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return crcache.Options{}, fmt.Errorf("could not create HTTP client from config: %w", err)
		}
		opts.HTTPClient = hc
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		mapper, err := apiutil.NewDynamicRESTMapper(cfg, opts.HTTPClient)
		if err != nil {
			return crcache.Options{}, fmt.Errorf("could not create RESTMapper from config: %w", err)
		}
		opts.Mapper = mapper
	}
	global := globalConfig(&opts)
	opts.ByObject = maps.Clone(opts.ByObject)
	opts.DefaultNamespaces = maps.Clone(opts.DefaultNamespaces)
	for obj, by := range opts.ByObject {
		namespaced, err := apiutil.IsObjectNamespaced(obj, opts.Scheme, opts.Mapper)
		if err != nil {
			return opts, fmt.Errorf("failed to determine if %T is namespaced: %w", obj, err)
		}
		if !namespaced && by.Namespaces != nil {
			return opts, fmt.Errorf("type %T is not namespaced, but its ByObject.Namespaces setting is not nil", obj)
		}
		opts.ByObject[obj] = defaultByObject(by, namespaced, opts.DefaultNamespaces, global)
	}
	// DefaultNamespaces are resolved last: ByObject above falls through to
	// their undefaulted settings before the global ones.
	for ns, c := range opts.DefaultNamespaces {
		opts.DefaultNamespaces[ns] = excludeOthers(ns, opts.DefaultNamespaces, fillConfig(c, global))
	}
	return opts, nil
}

// defaultByObject resolves one type's settings.
func defaultByObject(by crcache.ByObject, namespaced bool, defaultNamespaces map[string]crcache.Config, global crcache.Config) crcache.ByObject {
	if namespaced && by.Namespaces == nil {
		by.Namespaces = maps.Clone(defaultNamespaces)
	} else {
		by.Namespaces = maps.Clone(by.Namespaces)
	}
	typeLevel := byObjectConfig(by)
	for ns, c := range by.Namespaces {
		c = fillConfig(c, typeLevel)
		if nsDefault, ok := defaultNamespaces[ns]; ok {
			c = fillConfig(c, nsDefault)
		}
		by.Namespaces[ns] = excludeOthers(ns, by.Namespaces, fillConfig(c, global))
	}
	if !namespaced || len(by.Namespaces) == 0 {
		c := fillConfig(typeLevel, global)
		by.Label, by.Field, by.Transform = c.LabelSelector, c.FieldSelector, c.Transform
		by.UnsafeDisableDeepCopy, by.EnableWatchBookmarks, by.SyncPeriod = c.UnsafeDisableDeepCopy, c.EnableWatchBookmarks, c.SyncPeriod
	}
	return by
}

// globalConfig is the cache-wide Default* settings as one Config.
func globalConfig(o *crcache.Options) crcache.Config {
	return crcache.Config{
		LabelSelector:         o.DefaultLabelSelector,
		FieldSelector:         o.DefaultFieldSelector,
		Transform:             o.DefaultTransform,
		UnsafeDisableDeepCopy: o.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks:  o.DefaultEnableWatchBookmarks,
		SyncPeriod:            o.SyncPeriod,
	}
}

// byObjectConfig is a ByObject's type-level settings as one Config.
func byObjectConfig(b crcache.ByObject) crcache.Config {
	return crcache.Config{
		LabelSelector:         b.Label,
		FieldSelector:         b.Field,
		Transform:             b.Transform,
		UnsafeDisableDeepCopy: b.UnsafeDisableDeepCopy,
		EnableWatchBookmarks:  b.EnableWatchBookmarks,
		SyncPeriod:            b.SyncPeriod,
	}
}

// fillConfig sets c's nil settings from from's.
func fillConfig(c, from crcache.Config) crcache.Config {
	if c.LabelSelector == nil {
		c.LabelSelector = from.LabelSelector
	}
	if c.FieldSelector == nil {
		c.FieldSelector = from.FieldSelector
	}
	if c.Transform == nil {
		c.Transform = from.Transform
	}
	if c.UnsafeDisableDeepCopy == nil {
		c.UnsafeDisableDeepCopy = from.UnsafeDisableDeepCopy
	}
	if c.EnableWatchBookmarks == nil {
		c.EnableWatchBookmarks = from.EnableWatchBookmarks
	}
	if c.SyncPeriod == nil {
		c.SyncPeriod = from.SyncPeriod
	}
	return c
}

// excludeOthers narrows the AllNamespaces entry's field selector so that
// it leaves out the namespaces that have an entry of their own (each of
// which has its own informer); other entries are returned as they are.
func excludeOthers(ns string, all map[string]crcache.Config, c crcache.Config) crcache.Config {
	if ns != metav1.NamespaceAll {
		return c
	}
	names := slices.Sorted(maps.Keys(all))
	sel := make([]fields.Selector, 0, len(names))
	for _, other := range names {
		if other != metav1.NamespaceAll {
			sel = append(sel, fields.OneTermNotEqualSelector("metadata.namespace", other))
		}
	}
	if c.FieldSelector != nil {
		sel = append(sel, c.FieldSelector)
	}
	c.FieldSelector = fields.AndSelectors(sel...)
	return c
}
