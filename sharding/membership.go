package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// shardGroupLabel marks the Leases of one group of replicas.
const shardGroupLabel = "sharding.openinformer.io/group"

// MembershipOptions configure a Membership.
type MembershipOptions struct {
	// Client reaches the coordination.k8s.io Lease API.
	Client kubernetes.Interface
	// Namespace holds the group's Leases.
	Namespace string
	// Group names the set of replicas sharing a collection; each replica's Lease is
	// "<Group>-<Identity>" and carries the group in a label.
	Group string
	// Identity is this replica's unique name, for example its pod name.
	Identity string
	// Field is the hashed field of the shards handed out (ByUID when empty).
	Field string
	// LeaseDuration is how long a replica that stops renewing still counts as a member: the
	// bound on how long a crashed replica's objects stay unowned. Defaults to 15s.
	LeaseDuration time.Duration
	// RenewInterval is how often a replica renews its Lease and rereads the group. Defaults to
	// LeaseDuration/3.
	RenewInterval time.Duration
	// Handover is how long a replica keeps its previous ranges besides its new ones after the
	// group changes, so that every object keeps an owner while the others catch up. Defaults
	// to 2*RenewInterval and must be at least RenewInterval.
	Handover time.Duration
	// OnChange receives the shard this replica must own from now on; a replica restarts its
	// informers on it. It is called from Run's goroutine, first once the replica has joined.
	OnChange func(Shard)
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// Membership keeps a replica's share of a collection as replicas join and leave. Each replica
// renews its own Lease; every RenewInterval it lists the group's Leases, takes the live ones
// (renewed within their lease duration) in identity order, and owns the even range of its
// position. When its range changes it owns the old and the new ranges together for Handover
// before dropping the old ones.
type Membership struct {
	opts MembershipOptions

	target        Range     // the even range of this replica's current position
	owned         []Range   // what OnChange last handed out
	handoverUntil time.Time // when owned shrinks to target; zero when not handing over
}

// NewMembership checks opts and fills in defaults.
func NewMembership(opts MembershipOptions) (*Membership, error) {
	if opts.OnChange == nil {
		return nil, errors.New("membership: Client, Namespace, Group, Identity and OnChange are required")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Membership{opts: opts.withDefaults()}, nil
}

// Validate reports what NewMembership would refuse in opts besides a missing OnChange, which
// whoever runs the Membership sets: so a configuration can be checked before the informer
// that follows it exists.
func (opts MembershipOptions) Validate() error {
	var missing []string
	for name, absent := range map[string]bool{"Client": opts.Client == nil, "Namespace": opts.Namespace == "",
		"Group": opts.Group == "", "Identity": opts.Identity == ""} {
		if absent {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("membership: Client, Namespace, Group, Identity and OnChange are required; missing %s", strings.Join(missing, ", "))
	}
	if _, err := (Shard{Count: 1, Field: opts.Field}).requirements(); err != nil {
		return fmt.Errorf("membership: %w", err)
	}
	opts = opts.withDefaults()
	if opts.Handover < opts.RenewInterval || opts.RenewInterval >= opts.LeaseDuration {
		return errors.New("membership: need RenewInterval <= Handover and RenewInterval < LeaseDuration")
	}
	return nil
}

// withDefaults fills in the durations and the clock left unset.
func (opts MembershipOptions) withDefaults() MembershipOptions {
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = opts.LeaseDuration / 3
	}
	if opts.Handover <= 0 {
		opts.Handover = 2 * opts.RenewInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return opts
}

// Run takes part in the group until ctx ends, then deletes the replica's Lease and keeps its
// shard for Handover more, so the others take over its objects before Run returns.
func (m *Membership) Run(ctx context.Context) {
	ticker := m.opts.Clock.NewTicker(m.opts.RenewInterval)
	defer ticker.Stop()
	for {
		m.step(ctx)
		select {
		case <-ctx.Done():
			m.leave(context.WithoutCancel(ctx))
			return
		case <-ticker.C():
		}
	}
}

// step renews the Lease, rereads the group and moves the shard on.
func (m *Membership) step(ctx context.Context) {
	now := m.opts.Clock.Now()
	logger := klog.FromContext(ctx)
	if err := m.renew(ctx, now); err != nil {
		logger.Error(err, "Renewing shard membership Lease", "group", m.opts.Group, "identity", m.opts.Identity)
		return
	}
	members, err := m.liveMembers(ctx, now)
	if err != nil {
		logger.Error(err, "Listing shard membership Leases", "group", m.opts.Group)
		return
	}
	index := slices.Index(members, m.opts.Identity)
	if index < 0 { // our own Lease, just renewed, is not visible yet
		return
	}
	target, _ := EvenRange(index, len(members)) // 0 <= index < len(members)
	m.advance(target, now, len(members))
}

// advance hands out the ranges to own: the union during a handover, the target after it.
func (m *Membership) advance(target Range, now time.Time, members int) {
	switch {
	case m.owned == nil:
		m.owned = []Range{target}
	case target != m.target:
		if !slices.Contains(m.owned, target) {
			m.owned = append(slices.Clip(m.owned), target)
		}
		m.handoverUntil = now.Add(m.opts.Handover)
	case !m.handoverUntil.IsZero() && !now.Before(m.handoverUntil):
		m.owned = []Range{target}
		m.handoverUntil = time.Time{}
	default:
		return
	}
	m.target = target
	klog.Background().V(2).Info("Shard membership changed", "group", m.opts.Group, "identity", m.opts.Identity,
		"members", members, "ranges", m.owned)
	m.opts.OnChange(Shard{Field: m.opts.Field, Ranges: slices.Clone(m.owned)})
}

func (m *Membership) leaseName() string { return m.opts.Group + "-" + m.opts.Identity }

// renew creates or updates the replica's Lease.
func (m *Membership) renew(ctx context.Context, now time.Time) error {
	leases := m.opts.Client.CoordinationV1().Leases(m.opts.Namespace)
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(m.opts.Identity),
		LeaseDurationSeconds: ptr.To(int32((m.opts.LeaseDuration + time.Second - 1) / time.Second)),
		RenewTime:            &metav1.MicroTime{Time: now},
	}
	lease, err := leases.Get(ctx, m.leaseName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: m.leaseName(), Namespace: m.opts.Namespace, Labels: map[string]string{shardGroupLabel: m.opts.Group}},
			Spec:       spec,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec = spec
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// liveMembers returns the identities of the group's unexpired Leases, sorted.
func (m *Membership) liveMembers(ctx context.Context, now time.Time) ([]string, error) {
	list, err := m.opts.Client.CoordinationV1().Leases(m.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shardGroupLabel + "=" + m.opts.Group})
	if err != nil {
		return nil, err
	}
	var members []string
	for _, l := range list.Items {
		s := l.Spec
		if s.HolderIdentity == nil || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
			continue
		}
		if now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)) {
			members = append(members, *s.HolderIdentity)
		}
	}
	slices.Sort(members)
	return members, nil
}

// leave deletes the Lease, then keeps the shard for Handover while the others take it over.
func (m *Membership) leave(ctx context.Context) {
	err := m.opts.Client.CoordinationV1().Leases(m.opts.Namespace).Delete(ctx, m.leaseName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Releasing shard membership Lease; the others take over when it expires", "group", m.opts.Group)
		return
	}
	<-m.opts.Clock.After(m.opts.Handover)
}
