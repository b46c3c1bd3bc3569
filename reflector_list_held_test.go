package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/openinformer/cache/internal/store"
)

// pagerScript answers a pager's requests from a list of responses, in
// order, and records the options of each.
type pagerScript struct {
	answers []pagerAnswer
	calls   []string
}

type pagerAnswer struct {
	obj runtime.Object
	err error
}

func (s *pagerScript) page(o metav1.ListOptions) (runtime.Object, error) {
	s.calls = append(s.calls, fmt.Sprintf("limit=%d continue=%q rv=%q match=%q", o.Limit, o.Continue, o.ResourceVersion, o.ResourceVersionMatch))
	if len(s.calls) > len(s.answers) {
		return nil, errors.New("script used up")
	}
	a := s.answers[len(s.calls)-1]
	return a.obj, a.err
}

// pagerOutcome is what a LIST gave the reflector: its requests, error,
// whether paginated, the list's resourceVersion and the objects the store
// gets.
type pagerOutcome struct {
	calls     []string
	err       string
	paginated bool
	rv        string
	names     []string
}

func podNames(objs []interface{}) []string {
	names := []string{}
	for _, obj := range objs {
		names = append(names, obj.(*v1.Pod).Name)
	}
	return names
}

// listTheirs is client-go's reflector's list: the pager, then
// ExtractListWithAlloc.
func listTheirs(answers []pagerAnswer, pageSize int64, opts metav1.ListOptions) pagerOutcome {
	s := &pagerScript{answers: answers}
	p := pager.New(pager.SimplePageFunc(s.page))
	p.PageSize = pageSize
	list, paginated, err := p.ListWithAlloc(context.Background(), opts)
	out := pagerOutcome{paginated: paginated}
	if err == nil {
		out.rv, out.names, err = extractedNames(list)
	}
	out.calls = s.calls
	if err != nil {
		out.err = err.Error()
	}
	return out
}

func extractedNames(list runtime.Object) (string, []string, error) {
	m, err := meta.ListAccessor(list)
	if err != nil {
		return "", nil, err
	}
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return "", nil, err
	}
	objs := make([]interface{}, len(items))
	for i := range items {
		objs[i] = items[i]
	}
	return m.GetResourceVersion(), podNames(objs), nil
}

// listOurs is the held path: heldPager, then the holder's drain, with a
// preholder that keeps each object as it is (to compare the objects).
func listOurs(answers []pagerAnswer, pageSize int64, opts metav1.ListOptions) (pagerOutcome, *listHolder) {
	s := &pagerScript{answers: answers}
	h := &listHolder{prehold: func(obj any) (store.Preheld, error) { return testPreheld("", obj), nil }}
	p := &heldPager{pageSize: pageSize, pageFn: s.page, holder: h}
	list, paginated, err := p.list(opts)
	out := pagerOutcome{paginated: paginated}
	if err == nil {
		var m metav1.ListInterface
		if m, err = meta.ListAccessor(list); err == nil {
			out.rv = m.GetResourceVersion()
			err = h.drain(list)
		}
	}
	out.calls = s.calls
	if err != nil {
		out.err = err.Error()
		return out, h
	}
	objs := make([]interface{}, len(h.items))
	for i, p := range h.items {
		objs[i] = p.(store.Preheld).Held()
	}
	out.names = podNames(objs)
	return out, h
}

// The held pager makes client-go's pager's requests and returns its
// result, error and pagination, and the holder ends with the objects
// ExtractListWithAlloc gives, for lists in one response, paged lists, a
// continuation that expired (a full list replaces the pages), other
// errors, and a response that is not a list.
func TestHeldPagerDifferential(t *testing.T) {
	a, b, c, d := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "2"), newTestPod("ns", "c", "3"), newTestPod("ns", "d", "4")
	expired, boom := reflectorExpired(), errors.New("boom")
	cases := []struct {
		name     string
		pageSize int64
		opts     metav1.ListOptions
		answers  []pagerAnswer
	}{
		{"one response", 500, metav1.ListOptions{ResourceVersion: "0"}, []pagerAnswer{{obj: reflectorPodList("10", "", a, b)}}},
		{"unpaged", 0, metav1.ListOptions{ResourceVersion: "7"}, []pagerAnswer{{obj: reflectorPodList("10", "", a)}}},
		{"empty", 500, metav1.ListOptions{}, []pagerAnswer{{obj: reflectorPodList("10", "")}}},
		{"paged", 2, metav1.ListOptions{ResourceVersion: "5", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, []pagerAnswer{
			{obj: reflectorPodList("10", "t1", a, b)}, {obj: reflectorPodList("11", "t2", c)}, {obj: reflectorPodList("12", "", d)}}},
		{"continuation expired", 2, metav1.ListOptions{ResourceVersion: "5"}, []pagerAnswer{
			{obj: reflectorPodList("10", "t1", a, b)}, {err: expired}, {obj: reflectorPodList("20", "", c, d)}}},
		{"continuation expired, full list fails", 2, metav1.ListOptions{}, []pagerAnswer{
			{obj: reflectorPodList("10", "t1", a, b)}, {err: expired}, {err: boom}}},
		{"first page expired", 2, metav1.ListOptions{ResourceVersion: "5"}, []pagerAnswer{{err: expired}}},
		{"second page fails", 2, metav1.ListOptions{}, []pagerAnswer{{obj: reflectorPodList("10", "t1", a, b)}, {err: boom}}},
		{"not a list", 2, metav1.ListOptions{}, []pagerAnswer{{obj: a}}},
		{"page not a list", 2, metav1.ListOptions{}, []pagerAnswer{{obj: reflectorPodList("10", "t1", a)}, {obj: b}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			theirs := listTheirs(tc.answers, tc.pageSize, tc.opts)
			ours, _ := listOurs(tc.answers, tc.pageSize, tc.opts)
			assert.Equal(t, theirs, ours)
		})
	}
}

// A list in one response has each item cleared once it is held, so that
// the decoded list does not outlive its objects' encodings.
func TestListHolderDrainClearsItems(t *testing.T) {
	list := reflectorPodList("10", "", newTestPod("ns", "a", "1"), newTestPod("ns", "b", "2"))
	out, h := listOurs([]pagerAnswer{{obj: list}}, 500, metav1.ListOptions{})
	require.Equal(t, []string{"a", "b"}, out.names)
	assert.Equal(t, make([]v1.Pod, 2), list.Items, "every item cleared")
	held := h.items[0].(store.Preheld).Held().(*v1.Pod)
	assert.Equal(t, "a", held.Name, "the held object is a copy, not the cleared item")
}

// A list EachListItem refuses is refused before any item is held.
func TestListHolderDrainRefusesWhole(t *testing.T) {
	h := &listHolder{prehold: func(obj any) (store.Preheld, error) { return testPreheld("", obj), nil }}
	err := h.drain(newTestPod("ns", "a", "1"))
	require.Error(t, err)
	_, want := meta.ExtractListWithAlloc(newTestPod("ns", "a", "1"))
	assert.Equal(t, want.Error(), err.Error())
	assert.Empty(t, h.items)
}
