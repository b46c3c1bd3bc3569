package cache

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/openinformer/cache/internal/reflectorfsm"
)

// A compact informer's LIST holds each listed object in the store's form
// (internal/store/prehold.go) as it is taken out of its response, the way its
// watch-list stream does, so that the decoded list never lives whole beside
// the encodings: a paged list's pages are held as they arrive and dropped,
// and a list in one response (the watch cache's, the common case) has each
// item cleared once it is held. The peak is then the decoded response at
// most, client-go's own, instead of that plus the encodings.
//
// What client-go's path does is kept: the pager's requests (limit,
// continue, the resourceVersion left off after the first page, the full
// list when a continuation expired), its errors, the list's
// resourceVersion, one transform per object, each object an
// ExtractListWithAlloc copy. One difference: a paged list that fails after
// some pages has run the transformer on those pages' objects, which
// client-go's never transforms (its objects are transformed by the queue's
// Replace); the objects themselves go nowhere and no failure among them is
// reported.

// listHolder holds the objects of one LIST for a preholding queue.
type listHolder struct {
	queue     *pretransformed
	transform TransformFunc
	prehold   preholdFunc
	items     []interface{}
	// leftOut are the objects whose transform or hold failed, reported
	// when the list is handed to the queue: a list that fails later
	// reports none of them, as client-go's Replace is never reached.
	leftOut []leftOutObject
}

type leftOutObject struct {
	obj interface{}
	err error
}

// newListHolder returns the holder for a LIST into store, nil when the
// store does not hold objects ahead (not a compact informer's queue).
func newListHolder(q *pretransformed, prehold preholdFunc) *listHolder {
	if q == nil || prehold == nil {
		return nil
	}
	return &listHolder{queue: q, transform: q.transform, prehold: prehold}
}

// hold transforms obj and holds it as the store will, or sets it aside
// as left out.
func (h *listHolder) hold(obj runtime.Object) error {
	held, err := holdForQueue(h.transform, h.prehold, obj)
	if err != nil {
		h.leftOut = append(h.leftOut, leftOutObject{obj, err})
		return nil
	}
	h.items = append(h.items, held)
	return nil
}

// drain holds every item of list, clearing each in list once it is held
// so that what the item alone referred to can go. The list is checked
// whole first, so that a list EachListItem refuses is refused before any
// item is held or cleared.
func (h *listHolder) drain(list runtime.Object) error {
	if err := meta.EachListItem(list, func(runtime.Object) error { return nil }); err != nil {
		return err
	}
	clearItem := listItemClearer(list)
	h.items = slices.Grow(h.items, meta.LenList(list))
	i := 0
	return meta.EachListItemWithAlloc(list, func(obj runtime.Object) error {
		err := h.hold(obj)
		clearItem(i)
		i++
		return err
	})
}

// listItemClearer returns the function that clears list's i-th item:
// EachListItemWithAlloc hands each item once, in order, so the count of
// calls is the item's position.
func listItemClearer(list runtime.Object) func(i int) {
	ptr, err := meta.GetItemsPtr(list)
	if err != nil {
		return func(int) {}
	}
	items := reflect.ValueOf(ptr).Elem()
	return func(i int) { items.Index(i).SetZero() }
}

// replace hands the held objects to the queue in one Replace, after
// reporting those left out.
func (h *listHolder) replace(rv string) error {
	for _, l := range h.leftOut {
		h.queue.leaveOut(l.obj, l.err)
	}
	items := h.items
	h.items, h.leftOut = nil, nil
	return h.queue.replace(items, rv)
}

// holdForQueue returns obj transformed by transform (when set) and held by
// prehold, or the failure that leaves it out.
func holdForQueue(transform TransformFunc, prehold preholdFunc, obj runtime.Object) (interface{}, error) {
	var out interface{} = obj
	if transform != nil {
		var err error
		if out, err = transform(obj); err != nil {
			return nil, err
		}
	}
	return prehold(out)
}

// heldPager lists as client-go's pager.ListPager.ListWithAlloc does, with
// FullListIfExpired, but hands a paged list's items to holder page by
// page: the list it returns then has the first page's metadata and no
// items. A list that came in one response (or the full list that replaces
// an expired paged one) is returned as it came, for holder.drain.
type heldPager struct {
	pageSize int64
	pageFn   func(metav1.ListOptions) (runtime.Object, error)
	holder   *listHolder
}

func (p *heldPager) list(options metav1.ListOptions) (runtime.Object, bool, error) {
	if options.Limit == 0 {
		options.Limit = p.pageSize
	}
	requestedRV, requestedMatch := options.ResourceVersion, options.ResourceVersionMatch
	var list *metainternalversion.List
	paginated := false
	for {
		obj, err := p.pageFn(options)
		if err != nil {
			if !apierrors.IsResourceExpired(err) || options.Continue == "" {
				return nil, paginated, err
			}
			// The pages held so far are superseded by the full list.
			p.holder.items, p.holder.leftOut = nil, nil
			options.Limit, options.Continue = 0, ""
			options.ResourceVersion, options.ResourceVersionMatch = requestedRV, requestedMatch
			obj, err = p.pageFn(options)
			return obj, paginated, err
		}
		m, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, paginated, fmt.Errorf("returned object must be a list: %v", err)
		}
		if m.GetContinue() == "" && list == nil {
			return obj, paginated, nil
		}
		if list == nil {
			list = &metainternalversion.List{}
			list.ResourceVersion, list.SelfLink = m.GetResourceVersion(), m.GetSelfLink()
		}
		if err := p.holder.drain(obj); err != nil {
			return nil, paginated, err
		}
		if m.GetContinue() == "" {
			return list, paginated, nil
		}
		options.Continue = m.GetContinue()
		options.ResourceVersion, options.ResourceVersionMatch = "", ""
		paginated = true
	}
}

// listPages is the LIST request of run's reflector, through holder's pager
// when there is a holder and client-go's otherwise.
func (run *reflectorRun) listPages(holder *listHolder, pageSize int64, options metav1.ListOptions) (runtime.Object, bool, error) {
	lw, ctx := run.r.listerWatcher, run.ctx
	pageFn := func(opts metav1.ListOptions) (runtime.Object, error) { return lw.ListWithContext(ctx, opts) }
	if holder != nil {
		p := &heldPager{pageSize: pageSize, pageFn: pageFn, holder: holder}
		return p.list(options)
	}
	p := pager.New(pager.SimplePageFunc(pageFn))
	p.PageSize = pageSize
	return p.ListWithAlloc(context.Background(), options)
}

// replaceHeld holds what of list is not held yet and hands it all to the
// holder's queue, with client-go's errors.
func replaceHeld(holder *listHolder, list runtime.Object, rv string) reflectorfsm.Replaced {
	if err := holder.drain(list); err != nil {
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to understand list result %#v (%v)", list, err)}
	}
	if err := holder.replace(rv); err != nil {
		return reflectorfsm.Replaced{Err: fmt.Errorf("unable to sync list result: %v", err)}
	}
	return reflectorfsm.Replaced{}
}
