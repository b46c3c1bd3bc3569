package fake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/sharding"
)

// Messages the API server uses for expired lists (k8s.io/apiserver storage/etcd3/errors.go).
const (
	listTooOldMessage          = "The resourceVersion for the provided list is too old."
	inconsistentContinueReason = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

// query is a parsed request scope: namespace and selectors.
type query struct {
	ns     string
	labels labels.Selector
	fields fields.Selector
	shard  sharding.Selector
}

func (s *Server) list(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(VerbList, ns, o)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := takeFault(&s.listFaults); err != nil {
		return nil, err
	}
	o.Watch = false
	q, err := s.parseQuery(ns, o)
	if err != nil {
		return nil, err
	}
	at, start, limit, err := s.listPointLocked(o)
	if err != nil {
		return nil, err
	}
	return s.buildListLocked(q, at, start, limit), nil
}

// parseQuery validates options the way the API server's request handler does and parses the
// selectors.
func (s *Server) parseQuery(ns string, o metav1.ListOptions) (query, error) {
	var in metainternalversion.ListOptions
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&o, &in, nil); err != nil {
		return query{}, apierrors.NewBadRequest(err.Error())
	}
	if errs := validation.ValidateListOptions(&in, !s.opts.WatchListUnsupported); len(errs) > 0 {
		return query{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	for _, r := range in.FieldSelector.Requirements() {
		if !s.fieldSupported(r.Field) {
			return query{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	shard, err := s.shardSelectorFor(o)
	if err != nil {
		return query{}, err
	}
	return query{ns: ns, labels: in.LabelSelector, fields: in.FieldSelector, shard: shard}, nil
}

func (s *Server) fieldSupported(name string) bool {
	if name == "metadata.name" || (name == "metadata.namespace" && !s.opts.ClusterScoped) {
		return true
	}
	_, ok := s.fields[name]
	return ok
}

func (q query) matches(s *Server, obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m := metaOf(obj)
	if (q.ns != "" && m.GetNamespace() != q.ns) || !shardMatches(q.shard, obj) {
		return false
	}
	if !q.labels.Empty() && !q.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if q.fields.Empty() {
		return true
	}
	set := fields.Set{"metadata.name": m.GetName()}
	if !s.opts.ClusterScoped {
		set["metadata.namespace"] = m.GetNamespace()
	}
	for name, get := range s.fields {
		set[name] = get(obj)
	}
	return q.fields.Matches(set)
}

func (q query) unfiltered() bool { return q.labels.Empty() && q.fields.Empty() && q.shard == nil }

// listPointLocked picks the snapshot a LIST is served from, following the API server's
// resourceVersion semantics for LIST (docs "Resource versions", and the watch cache's
// shouldDelegateList): "" is a consistent read of the latest state; "0" is any state, served
// from the cache with the limit ignored; Exact, or a legacy RV with a limit, needs that exact
// snapshot; NotOlderThan (or a legacy RV without limit) needs at least that RV.
func (s *Server) listPointLocked(o metav1.ListOptions) (at uint64, start string, limit int64, err error) {
	limit = o.Limit
	if o.Continue != "" {
		return s.continuePointLocked(o)
	}
	switch o.ResourceVersion {
	case "":
		return s.rv, "", limit, nil
	case "0":
		return s.rv, "", 0, nil
	}
	n, err := parseRV(o.ResourceVersion)
	if err != nil {
		return 0, "", 0, err
	}
	exact := o.ResourceVersionMatch == metav1.ResourceVersionMatchExact || (o.ResourceVersionMatch == "" && limit > 0)
	switch {
	case exact && n < s.floor:
		return 0, "", 0, apierrors.NewResourceExpired(listTooOldMessage)
	case exact && n > s.rv:
		return 0, "", 0, tooLargeRV(n, s.rv, 0)
	case exact:
		return n, "", limit, nil
	case n > s.rv:
		// The watch cache waits up to 3s for a future RV and then gives up with this error;
		// the fake answers at once.
		return 0, "", 0, tooLargeRV(n, s.rv, 1)
	}
	return s.rv, "", limit, nil
}

func (s *Server) continuePointLocked(o metav1.ListOptions) (uint64, string, int64, error) {
	if o.ResourceVersion != "" && o.ResourceVersion != "0" {
		return 0, "", 0, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	tok, err := decodeContinue(o.Continue)
	if err != nil {
		return 0, "", 0, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	switch {
	case tok.RV == -1: // an inconsistent token handed out with a 410: continue from the latest state
		return s.rv, tok.Start, o.Limit, nil
	case tok.RV < int64(s.floor):
		expired := apierrors.NewResourceExpired(inconsistentContinueReason)
		expired.ErrStatus.ListMeta.Continue = encodeContinue(-1, tok.Start)
		return 0, "", 0, expired
	case tok.RV > int64(s.rv):
		return 0, "", 0, tooLargeRV(uint64(tok.RV), s.rv, 0)
	}
	return uint64(tok.RV), tok.Start, o.Limit, nil
}

// buildListLocked returns the matching objects of the snapshot at rv whose keys are >= start,
// ordered by key like etcd, at most limit of them (0 = all).
func (s *Server) buildListLocked(q query, at uint64, start string, limit int64) runtime.Object {
	state := s.stateAtLocked(at)
	keys := sortedKeys(state)
	i := sort.SearchStrings(keys, start)
	items := []runtime.Object{}
	last := ""
	for ; i < len(keys); i++ {
		if limit > 0 && int64(len(items)) == limit {
			break
		}
		if obj := state[keys[i]]; q.matches(s, obj) {
			items = append(items, obj.DeepCopyObject())
			last = keys[i]
		}
	}
	list := s.kind.newList()
	_ = meta.SetList(list, items) // cannot fail: newList is a list of the served kind
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(formatRV(at))
	echoShardInfo(q.shard, list)
	if i < len(keys) {
		lm.SetContinue(encodeContinue(int64(at), last+"\x00"))
		if q.unfiltered() {
			// Like etcd, the count is only known (and only sent) when nothing is filtered out.
			remaining := int64(0)
			for _, k := range keys[i:] {
				if q.matches(s, state[k]) {
					remaining++
				}
			}
			lm.SetRemainingItemCount(&remaining)
		}
	}
	return list
}

// continueToken has the shape of the API server's token (storage.EncodeContinue): base64url of
// {"v":"meta.k8s.io/v1","rv":...,"start":...}.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

func encodeContinue(rv int64, start string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", RV: rv, Start: start})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return continueToken{}, fmt.Errorf("continue key is not valid: %v", err)
	}
	var tok continueToken
	if err := json.Unmarshal(data, &tok); err != nil {
		return continueToken{}, fmt.Errorf("continue key is not valid: %v", err)
	}
	if tok.APIVersion != "meta.k8s.io/v1" || tok.RV == 0 || (tok.RV < 0 && tok.RV != -1) {
		return continueToken{}, fmt.Errorf("continue key is not valid: unsupported version or resource version")
	}
	return tok, nil
}

func parseRV(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q: %v", s, err))
	}
	return n, nil
}

func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }
