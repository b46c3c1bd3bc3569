package cache

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/openinformer/cache/fake"
	"github.com/openinformer/cache/internal/script"
)

// Scenario scripts (testdata/informer/*.txt) describe informer behaviour as a
// conversation: a command, "----", and the notifications every handler got
// because of it. Each script runs on openinformer's informer and on
// client-go's, each starting with watch-list streaming and with LIST, and
// every run must print exactly the expected output; so a script
// is at once a readable specification and a proof of drop-in behaviour.
//
// Commands:
//
//	create ns/name | update ns/name | delete ns/name   change the fake API server
//	handler NAME                                       register a recording handler
//	remove NAME                                        ShutDownEventHandler
//	start                                              run the informer, wait for its sync
//	drop-watch                                         close every watch (a clean re-watch follows)
//	relist                                             change nothing, but force a 410 relist
//	missed-by-watch CMD ...                            run server commands the watch never delivers, then force a relist
//	synced NAME                                        print whether NAME's registration has synced
//
// Output lines are "NAME: add|update|delete KEY@RV ...", handlers sorted by
// name, each handler's lines in delivery order per key. Lines of different
// keys are sorted by key, because the order across keys within one relist is
// unspecified (client-go takes it from a map). The format is package
// internal/script's; -rewrite regenerates the expectations from
// openinformer's output with watch-list.

// scenarioBarrierKey is a pod that every command updates last: once each
// handler has seen that update, it has seen everything before it.
const scenarioBarrierKey = "zz-barrier/barrier"

func TestInformerScenarios(t *testing.T) {
	// Cleanup, not defer: it runs after the parallel subtests have finished.
	t.Cleanup(func() { goleak.VerifyNone(t) })
	files, err := filepath.Glob("testdata/informer/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	impls := map[string]func(ListerWatcher, runtime.Object, time.Duration, Indexers) SharedIndexInformer{
		"openinformer":         NewSharedIndexInformer,
		"openinformer-compact": storageModes[1].newInformer,
		"client-go":            clientcache.NewSharedIndexInformer,
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			blocks := script.Parse(t, file)
			for _, name := range []string{"openinformer", "openinformer-compact", "client-go"} {
				for _, mode := range []string{"watch-list", "list"} {
					t.Run(name+"/"+mode, func(t *testing.T) {
						t.Parallel()
						var got []string
						// Backoffs and polls run on the bubble's fake clock.
						synctest.Test(t, func(t *testing.T) { got = runScenario(t, impls[name], mode == "list", blocks) })
						script.Check(t, file, blocks, got, name == "openinformer" && mode == "watch-list")
					})
				}
			}
		})
	}
}

// scenario is one run of a script against one informer implementation.
type scenario struct {
	t        *testing.T
	server   *fake.Server
	informer SharedIndexInformer
	handlers map[string]*scenarioHandler
	regs     map[string]ResourceEventHandlerRegistration
	labels   int
	stop     func()
}

func runScenario(t *testing.T, newInformer func(ListerWatcher, runtime.Object, time.Duration, Indexers) SharedIndexInformer, listMode bool, blocks []script.Block) []string {
	server := fake.MustNew(fake.Options{Object: &v1.Pod{}, WatchListUnsupported: listMode})
	s := &scenario{t: t, server: server,
		handlers: map[string]*scenarioHandler{}, regs: map[string]ResourceEventHandlerRegistration{}}
	s.informer = newInformer(s.server, &v1.Pod{}, 0, Indexers{})
	s.create(scenarioBarrierKey)
	defer func() {
		if s.stop != nil {
			s.stop()
		}
	}()
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = s.do(b.Cmd) + s.settle()
	}
	return out
}

func (s *scenario) do(cmd string) string {
	f := strings.Fields(cmd)
	require.NotEmpty(s.t, f)
	arg := func() string { require.Len(s.t, f, 2, "%q takes one argument", cmd); return f[1] }
	switch f[0] {
	case "create", "update", "delete":
		s.change(f[0], arg())
	case "handler":
		h := &scenarioHandler{name: arg(), seen: map[string]string{}}
		reg, err := s.informer.AddEventHandler(h)
		require.NoError(s.t, err)
		s.handlers[h.name], s.regs[h.name] = h, reg
	case "remove":
		require.NoError(s.t, ShutDownEventHandler(s.informer, s.regs[arg()]))
		delete(s.handlers, f[1])
	case "start":
		s.start()
	case "drop-watch":
		s.server.CloseWatches()
	case "relist":
		s.forceRelist(nil)
	case "missed-by-watch":
		require.Greater(s.t, len(f), 2)
		s.forceRelist(f[1:])
	case "synced":
		return fmt.Sprintf("%s synced: %v\n", arg(), s.regs[f[1]].HasSynced())
	default:
		s.t.Fatalf("unknown command %q", cmd)
	}
	return ""
}

// change applies a create, update or delete to the server; several may be
// given as "verb ns/name verb ns/name ...".
func (s *scenario) change(verb, key string) {
	switch verb {
	case "create":
		s.create(key)
	case "update":
		ns, name, err := SplitMetaNamespaceKey(key)
		require.NoError(s.t, err)
		obj, err := s.server.Get(ns, name)
		require.NoError(s.t, err)
		p := obj.(*v1.Pod)
		s.labels++
		p.Labels = map[string]string{"v": fmt.Sprint(s.labels)}
		_, err = s.server.Update(p)
		require.NoError(s.t, err)
	case "delete":
		ns, name, err := SplitMetaNamespaceKey(key)
		require.NoError(s.t, err)
		_, err = s.server.Delete(ns, name)
		require.NoError(s.t, err)
	default:
		s.t.Fatalf("unknown change %q", verb)
	}
}

func (s *scenario) create(key string) {
	ns, name, err := SplitMetaNamespaceKey(key)
	require.NoError(s.t, err)
	_, err = s.server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	require.NoError(s.t, err)
}

// forceRelist makes the informer's next watch start below the server's
// history, so it gets 410 Gone and relists; changes listed in cmds happen
// while the watch is held, so only the relist can reveal them.
func (s *scenario) forceRelist(cmds []string) {
	release := s.server.HoldEvents()
	for i := 0; i+1 < len(cmds); i += 2 {
		s.change(cmds[i], cmds[i+1])
	}
	s.change("update", scenarioBarrierKey) // the watch must fall behind
	s.server.Compact()
	s.server.CloseWatches()
	release()
}

func (s *scenario) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.informer.RunWithContext(ctx) }()
	s.stop = func() { cancel(); <-done }
	require.True(s.t, WaitForCacheSync(ctx.Done(), s.informer.HasSynced))
}

// settle waits until the cache and every handler have caught up with the
// server, then returns what the handlers were told, barrier excluded.
func (s *scenario) settle() string {
	if s.stop == nil {
		return ""
	}
	s.change("update", scenarioBarrierKey)
	barrierRV := s.serverRV(scenarioBarrierKey)
	require.Eventually(s.t, func() bool {
		for _, h := range s.handlers {
			if h.lastSeen(scenarioBarrierKey) != barrierRV {
				return false
			}
		}
		return true
	}, 20*time.Second, time.Millisecond, "handlers did not catch up")
	names := make([]string, 0, len(s.handlers))
	for name := range s.handlers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out strings.Builder
	for _, name := range names {
		for _, line := range s.handlers[name].take() {
			fmt.Fprintf(&out, "%s: %s\n", name, line)
		}
	}
	return out.String()
}

func (s *scenario) serverRV(key string) string {
	ns, name, err := SplitMetaNamespaceKey(key)
	require.NoError(s.t, err)
	obj, err := s.server.Get(ns, name)
	require.NoError(s.t, err)
	return obj.(*v1.Pod).ResourceVersion
}

// scenarioHandler records notifications as text and the last resource
// version it saw per key.
type scenarioHandler struct {
	name  string
	mu    sync.Mutex
	lines []scenarioLine
	seen  map[string]string
}

type scenarioLine struct{ key, text string }

func (h *scenarioHandler) OnAdd(obj interface{}, initial bool) {
	line := "add " + scenarioDescribe(obj)
	if initial {
		line += " initial"
	}
	h.record(obj, line)
}

func (h *scenarioHandler) OnUpdate(oldObj, newObj interface{}) {
	h.record(newObj, fmt.Sprintf("update %s->%s", scenarioDescribe(oldObj), newObj.(*v1.Pod).ResourceVersion))
}

func (h *scenarioHandler) OnDelete(obj interface{}) {
	h.record(obj, "delete "+scenarioDescribe(obj))
}

func (h *scenarioHandler) record(obj interface{}, line string) {
	key, _ := DeletionHandlingMetaNamespaceKeyFunc(obj)
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := obj.(*v1.Pod); ok {
		h.seen[key] = p.ResourceVersion
	}
	if key != scenarioBarrierKey {
		h.lines = append(h.lines, scenarioLine{key: key, text: line})
	}
}

func (h *scenarioHandler) lastSeen(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[key]
}

// take returns and forgets the lines recorded so far, sorted by key with
// each key's lines in delivery order.
func (h *scenarioHandler) take() []string {
	h.mu.Lock()
	lines := slices.Clone(h.lines)
	h.lines = h.lines[:0]
	h.mu.Unlock()
	slices.SortStableFunc(lines, func(a, b scenarioLine) int { return strings.Compare(a.key, b.key) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// scenarioDescribe prints a pod as KEY@RV and a tombstone as
// "KEY@RV tombstone" (the RV of the last state it carries).
func scenarioDescribe(obj interface{}) string {
	if d, ok := obj.(DeletedFinalStateUnknown); ok {
		rv := "?"
		if p, ok := d.Obj.(*v1.Pod); ok {
			rv = p.ResourceVersion
		}
		return d.Key + "@" + rv + " tombstone"
	}
	p := obj.(*v1.Pod)
	return p.Namespace + "/" + p.Name + "@" + p.ResourceVersion
}
