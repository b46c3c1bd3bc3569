package crcache

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	cache "github.com/openinformer/cache"
	"github.com/openinformer/cache/sharding"
	"k8s.io/apimachinery/pkg/runtime"
)

// membershipInformer is a Lease-sharded informer as controller-runtime's
// Informer, whose AddEventHandler returns the registration and names the
// handler apart (handlernames.go); every generation's registration carries
// that name.
type membershipInformer struct {
	*sharding.MembershipInformer
	names *handlerNames
}

// AddEventHandlerWithOptions implements crcache.Informer.
func (m membershipInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, o cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return m.MembershipInformer.AddEventHandlerWithOptions(m.names.name(h), o)
}

// AddEventHandler implements crcache.Informer.
func (m membershipInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod implements crcache.Informer.
func (m membershipInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, period time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return m.AddEventHandlerWithOptions(h, cache.HandlerOptions{ResyncPeriod: &period})
}

// newMembershipInformer builds the Lease-sharded informer of scope s, in
// the group derived for it, naming its handlers by names.
func newMembershipInformer(lw cache.ListerWatcher, obj runtime.Object, opts cache.SharedIndexInformerOptions, s listWatchScope, m sharding.MembershipOptions, names *handlerNames) (membershipInformer, error) {
	m.Group = leaseGroup(m.Group, s)
	mi, err := sharding.NewMembershipInformerWithOptions(lw, obj, opts, m)
	if err != nil {
		return membershipInformer{}, err
	}
	return membershipInformer{MembershipInformer: mi, names: names}, nil
}

// maxLabelValue is the longest label value the API server accepts; the
// group is the value of the Leases' group label.
const maxLabelValue = 63

// leaseGroup is the group of scope s's informer: base, the resource, and
// the representation and namespace when they are not the usual ones, so
// that every informer of every replica agrees on it and no two informers
// of one replica share it. A group too long for a label value keeps its
// readable start and ends in a digest of the whole.
func leaseGroup(base string, s listWatchScope) string {
	parts := []string{base, s.mapping.Resource.GroupResource().String()}
	if s.rep != repTyped {
		parts = append(parts, s.rep.String())
	}
	if s.namespace != "" {
		parts = append(parts, s.namespace)
	}
	group := strings.Join(parts, "-")
	if len(group) <= maxLabelValue {
		return group
	}
	sum := sha256.Sum256([]byte(group))
	digest := hex.EncodeToString(sum[:4])
	return strings.TrimRight(group[:maxLabelValue-len(digest)-1], "-.") + "-" + digest
}
