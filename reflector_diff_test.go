package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/consistencydetector"
)

var reflectorTestGR = schema.GroupResource{Resource: "pods"}

func reflectorExpired() error { return apierrors.NewResourceExpired("too old resource version") }

func reflectorTooLarge() error {
	return apierrors.NewTimeoutError("Too large resource version", 1)
}

func reflectorTooMany() error { return apierrors.NewTooManyRequests("slow down", 1) }

// reflectorScenario is a script both reflectors run.
type reflectorScenario struct {
	name  string
	noWL  bool
	steps func() []reflectorStep
}

type reflectorOutcome struct {
	calls    []reflectorCall
	contents []string
	timers   []time.Duration
	leaked   int
}

// runReflectorScenario runs ListAndWatch the way Run does (without the
// pause between attempts) until the script is used up.
func runReflectorScenario(t *testing.T, sc reflectorScenario, ours bool) reflectorOutcome {
	t.Helper()
	clk := newReflectorTestClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := newReflectorScriptLW(t, clk, cancel, sc.steps()...)
	lw.noWL = sc.noWL
	store := newReflectorTestStore()
	var law func(context.Context) error
	if ours {
		law = NewReflectorWithOptions(lw, &v1.Pod{}, store, ReflectorOptions{Clock: clk}).ListAndWatchWithContext
	} else {
		law = clientcache.NewReflectorWithOptions(lw, &v1.Pod{}, store, clientcache.ReflectorOptions{Clock: clk}).ListAndWatchWithContext
	}
	stepped := clk.autoStep(ctx)
	sctx := stoppingContext{Context: ctx, lw: lw}
	for attempts := 0; sctx.Err() == nil; attempts++ {
		require.Less(t, attempts, 100, "reflector does not consume its script")
		_ = law(sctx)
	}
	cancel()
	return reflectorOutcome{calls: lw.recorded(), contents: store.contents(), timers: stepped(), leaked: lw.unstopped()}
}

func reflectorDiffScenarios() []reflectorScenario {
	a1, b1 := newTestPod("ns", "a", "1"), newTestPod("ns", "b", "2")
	return []reflectorScenario{
		{name: "cold start", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1, b1), nil),
				watchStep(nil, reflectorEvent(watch.Added, "c", "11"), reflectorEvent(watch.Modified, "a", "12")),
			}
		}},
		{name: "clean watch close", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil, reflectorEvent(watch.Added, "b", "11")),
				watchStep(nil),
				watchStep(nil, reflectorEvent(watch.Deleted, "a", "13"), reflectorBookmark("14", false)),
			}
		}},
		{name: "410 during watch", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil, reflectorEvent(watch.Modified, "a", "11"), reflectorErrorEvent(reflectorExpired())),
				listStep(reflectorPodList("15", "", b1), nil),
				watchStep(nil),
			}
		}},
		{name: "410 on a paged list", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "next", a1), nil),
				listStep(nil, reflectorExpired()),
				listStep(reflectorPodList("12", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "410 on every list", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(nil, reflectorExpired()),
				listStep(nil, apierrors.NewGone("gone")),
				listStep(reflectorPodList("12", "", a1), nil),
				watchStep(nil),
			}
		}},
		{name: "too large RV", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(reflectorExpired()),
				listStep(nil, reflectorTooLarge()),
				listStep(reflectorPodList("20", "", b1), nil),
				watchStep(nil),
			}
		}},
		{name: "429 storm", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(nil, reflectorTooMany()),
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(reflectorTooMany()),
				watchStep(reflectorTooMany()),
				watchStep(nil, reflectorEvent(watch.Added, "b", "11"), reflectorErrorEvent(reflectorTooMany())),
				watchStep(reflectorTooMany()),
				watchStep(nil, reflectorEvent(watch.Modified, "b", "12")),
			}
		}},
		{name: "watch-list success", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2"),
					reflectorBookmark("20", true), reflectorEvent(watch.Modified, "a", "21")),
				watchStep(nil, reflectorEvent(watch.Deleted, "b", "22")),
			}
		}},
		{name: "watch-list unsupported", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(apierrors.NewBadRequest("sendInitialEvents is not supported")),
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil),
			}
		}},
		{name: "watch-list opted out", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil),
			}
		}},
		{name: "watch-list error mid-stream", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorErrorEvent(reflectorExpired())),
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorErrorEvent(reflectorTooMany())),
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2")),
				watchStep(nil, reflectorEvent(watch.Added, "b", "2"), reflectorErrorEvent(apierrors.NewInternalError(errors.New("boom")))),
				listStep(reflectorPodList("30", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "stop right after the end bookmark", steps: func() []reflectorStep {
			return []reflectorStep{
				cancelAfter(watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2"), reflectorBookmark("20", true))),
			}
		}},
		{name: "stop right after the end bookmark of a retried start", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(reflectorTooMany()),
				watchStep(reflectorTooMany()),
				cancelAfter(watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorBookmark("20", true))),
			}
		}},
		{name: "stop right after the end bookmark of a second stream", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(nil, reflectorEvent(watch.Added, "a", "1")),
				cancelAfter(watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorEvent(watch.Added, "b", "2"), reflectorBookmark("20", true))),
			}
		}},
		{name: "store read error during watch", noWL: true, steps: func() []reflectorStep {
			readErr := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
				Reason: metav1.StatusReasonStoreReadError, Message: "corrupt object has been deleted"}}
			return []reflectorStep{
				listStep(reflectorPodList("3", "", a1, b1), nil),
				watchStep(nil, reflectorEvent(watch.Added, "c", "4"), reflectorErrorEvent(readErr)),
				listStep(reflectorPodList("5", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "internal errors during watch", noWL: true, steps: func() []reflectorStep {
			boom := apierrors.NewInternalError(errors.New("boom"))
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil, reflectorEvent(watch.Added, "b", "11"), reflectorErrorEvent(boom)),
				listStep(reflectorPodList("12", "", a1, b1), nil),
				watchStep(nil, reflectorErrorEvent(boom)),
				listStep(reflectorPodList("13", "", b1), nil),
				watchStep(nil, reflectorEvent(watch.Modified, "b", "14")),
			}
		}},
		{name: "resume after 410 from the last event", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(nil, reflectorEvent(watch.Added, "b", "11"), reflectorBookmark("15", false)),
				watchStep(reflectorExpired()),
				listStep(reflectorPodList("15", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "paginated first list, exact relist expired", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "next", a1), nil),
				listStep(reflectorPodList("10", "", b1), nil),
				watchStep(nil, reflectorErrorEvent(reflectorExpired())),
				listStep(nil, reflectorExpired()),
				listStep(reflectorPodList("20", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "forbidden watch", noWL: true, steps: func() []reflectorStep {
			return []reflectorStep{
				listStep(reflectorPodList("10", "", a1), nil),
				watchStep(apierrors.NewForbidden(reflectorTestGR, "x", errors.New("no"))),
				listStep(reflectorPodList("11", "", a1, b1), nil),
				watchStep(nil),
			}
		}},
		{name: "watch-list with changes before its bookmark", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(nil, reflectorEvent(watch.Added, "b", "2"), reflectorEvent(watch.Added, "a", "1"),
					reflectorEvent(watch.Modified, "b", "3"), reflectorEvent(watch.Deleted, "a", "4"), reflectorBookmark("5", true)),
				watchStep(nil, reflectorEvent(watch.Added, "c", "6")),
			}
		}},
		{name: "watch-list closed without its bookmark once, late", steps: func() []reflectorStep {
			late := watchStep(nil, reflectorEvent(watch.Added, "a", "1"))
			late.advance = 2 * time.Minute
			return []reflectorStep{
				late,
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorBookmark("5", true)),
				watchStep(nil, reflectorEvent(watch.Added, "c", "6")),
			}
		}},
		{name: "watch-list closed early without its bookmark, many times", steps: func() []reflectorStep {
			var steps []reflectorStep
			for range 5 {
				steps = append(steps, watchStep(nil, reflectorEvent(watch.Added, "a", "1")))
			}
			return append(steps, watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorBookmark("5", true)))
		}},
		{name: "watch-list after relist", steps: func() []reflectorStep {
			return []reflectorStep{
				watchStep(nil, reflectorEvent(watch.Added, "a", "1"), reflectorBookmark("20", true), reflectorErrorEvent(reflectorExpired())),
				watchStep(nil, reflectorEvent(watch.Added, "b", "2"), reflectorBookmark("25", true)),
			}
		}},
	}
}

// TestReflectorDifferential runs client-go's Reflector and ours on the
// same scripts and requires the same requests and the same final store.
func TestReflectorDifferential(t *testing.T) {
	for _, sc := range reflectorDiffScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			theirs := runReflectorScenario(t, sc, false)
			ours := runReflectorScenario(t, sc, true)
			assert.Equal(t, callStrings(theirs.calls), callStrings(ours.calls), "requests")
			assert.Equal(t, theirs.contents, ours.contents, "store contents")
			for _, c := range ours.calls {
				if c.Watch {
					require.NotNil(t, c.Options.TimeoutSeconds)
					assert.GreaterOrEqual(t, *c.Options.TimeoutSeconds, int64(300))
					assert.LessOrEqual(t, *c.Options.TimeoutSeconds, int64(600))
				}
			}
			assert.Zero(t, ours.leaked, "watchers left open")
		})
	}
}

func cancelAfter(s reflectorStep) reflectorStep {
	s.cancelAfter = true
	return s
}

func callStrings(calls []reflectorCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

// TestF9_ConsistencyDetector turns on KUBE_WATCHLIST_INCONSISTENCY_DETECTOR's
// check: after a watch-list sync both reflectors LIST at the bookmark's
// version and compare, and panic on a difference.
func TestF9_ConsistencyDetector(t *testing.T) {
	defer consistencydetector.SetDataConsistencyDetectionForWatchListEnabledForTest(true)()
	withUID := func(p *v1.Pod) *v1.Pod { p.UID = types.UID("uid-" + p.Name); return p }
	a, b := withUID(newTestPod("ns", "a", "1")), withUID(newTestPod("ns", "b", "2"))
	stream := func() reflectorStep {
		return watchStep(nil, watch.Event{Type: watch.Added, Object: a}, watch.Event{Type: watch.Added, Object: b}, reflectorBookmark("9", true))
	}
	consistent := reflectorScenario{steps: func() []reflectorStep {
		return []reflectorStep{stream(), listStep(reflectorPodList("9", "", a, b), nil)}
	}}
	theirs := runReflectorScenario(t, consistent, false)
	ours := runReflectorScenario(t, consistent, true)
	assert.Equal(t, callStrings(theirs.calls), callStrings(ours.calls))
	require.Len(t, ours.calls, 3)
	assert.Equal(t, metav1.ResourceVersionMatchExact, ours.calls[1].Options.ResourceVersionMatch)
	assert.Equal(t, "9", ours.calls[1].Options.ResourceVersion)

	inconsistent := reflectorScenario{steps: func() []reflectorStep {
		return []reflectorStep{stream(), listStep(reflectorPodList("9", "", a), nil)}
	}}
	for _, impl := range []bool{false, true} {
		assert.Panics(t, func() { runReflectorScenario(t, inconsistent, impl) }, "ours=%v", impl)
	}
}
