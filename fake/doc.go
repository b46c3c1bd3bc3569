// Package fake is an in-memory API server for one resource that behaves like a real
// kube-apiserver's watch cache, and that a test can break on purpose; a Cluster serves several
// of them to a clientset.
//
// A Server implements client-go's ListerWatcher and ListerWatcherWithContext, so it plugs into
// any informer or reflector where a client-backed ListWatch would go:
//
//	srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}, Clock: fakeClock})
//	informer := cache.NewSharedIndexInformer(srv, &corev1.Pod{}, 0, cache.Indexers{})
//
// Use srv.Namespace("ns") for a ListerWatcher limited to one namespace. For unstructured
// objects leave Object nil and set Options.GroupVersionKind.
//
// # Changing objects
//
// Create, Update, Patch (JSON merge patch, JSON patch; strategic merge patch for typed objects)
// and Delete behave like the API server's: one resourceVersion counter increases by one per write;
// create fills UID, creationTimestamp and generateName; a resourceVersion on update is a
// precondition (409 Conflict); an update that changes nothing is not written and sends no
// event; missing objects are NotFound and duplicates AlreadyExists. Every object returned is a
// deep copy, so a test cannot reach into the server's state. Typed objects are stored and served
// without apiVersion/kind, as a typed clientset decodes them.
//
// # Reading: LIST and WATCH
//
// LIST and WATCH follow the API server's rules (see the comments on each rule in the source):
//
//   - label selectors; field selectors on metadata.name, metadata.namespace and any field added
//     with Options.Fields (others are 400 BadRequest);
//   - options validated by apimachinery's own ValidateListOptions (422 Invalid);
//   - LIST resourceVersion "" (latest), "0" (latest, limit ignored as the watch cache does),
//     Exact or legacy-with-limit (that snapshot, 410 Expired below the history window, "Too
//     large resource version" above the current one), NotOlderThan (latest, too large above);
//   - limit/continue paging over a consistent snapshot, ordered by namespace/name like etcd;
//     continue tokens expire with the history window (410 with an inconsistent-continue token);
//   - WATCH from any resourceVersion inside the window (Options.HistorySize events), 410
//     "too old resource version" below it, delivered as an ERROR event as the watch cache does;
//   - objects moving into a watch's selector arrive as ADDED, out of it as DELETED;
//   - bookmarks every Options.BookmarkInterval (and 2s before TimeoutSeconds runs out) when
//     allowWatchBookmarks is set, on Options.Clock, so a fake clock makes them deterministic;
//   - watch-list streaming (sendInitialEvents=true, resourceVersionMatch=NotOlderThan): ADDED
//     for every object, then a BOOKMARK annotated k8s.io/initial-events-end at the current RV;
//     Options.WatchListUnsupported turns it off and advertises that through
//     IsWatchListSemanticsUnSupported, so client-go's reflector uses LIST instead.
//
// A watch never drops events and never blocks writers: each has its own unbounded queue and a
// goroutine that ends on Stop, on its context, on timeout, or when the server closes it.
//
// # Breaking things
//
//   - FailNextLists / FailNextWatches: the next N requests fail with TooManyRequests,
//     InternalError, Expired, Gone, ConnectionRefused or any error.
//   - CloseWatches: every open watch drops, queued events lost (clients resume from their RV).
//   - CloseWatchesAfter(n): every open watch drops after n more events.
//   - SendWatchError: every open watch gets an ERROR event, then closes.
//   - InterruptNextWatches(n, after, err): the next n accepted watches end after `after` events,
//     with an ERROR event of err (closed when nil); a restart's catch-up watch meets it.
//   - Compact: history up to now is gone; older RVs and continue tokens get 410.
//   - Restart(jump): new resourceVersion epoch; open watches closed, all older RVs get 410.
//   - HoldEvents: delivery stalls (events keep queueing) until the returned release is called.
//
// FailNextLists and FailNextWatches with a nil error inject DefaultFault (a 500), so asking for
// a failure always produces one.
//
// Requests returns every LIST and WATCH received with its options, for assertions such as
// "the informer relisted from resourceVersion X". RequestCounts counts them by RequestKind
// (full lists, further pages, limit=1 probes, watches with and without initial state), so a
// test can assert "no full sync": RequestCounts().FullSyncs() == 0.
//
// # A controller's whole world: Cluster
//
// A controller writes through a clientset and reads through informers. A Cluster serves the
// Kubernetes REST API for several Servers, one per resource, so that both go to the same
// Servers: no reactor, no mirroring of writes into the ListerWatchers.
//
//	secrets := fake.MustNew(fake.Options{Object: &corev1.Secret{}, Objects: seed})
//	configMaps := fake.MustNew(fake.Options{Object: &corev1.ConfigMap{}})
//	cluster := fake.MustNewCluster(secrets, configMaps)
//	client := cluster.Clientset() // kubernetes.Interface, served in memory
//	factory := informers.NewSharedInformerFactory(client, 0)
//
// RESTConfig gives any generated clientset, custom resources' included, or a dynamic client;
// a Cluster is also an http.Handler for httptest.NewServer. Each Server is served at the path
// of its kind's group and version and of Options.Resource (GroupVersionResource says which).
// Requests are JSON, as client-go sends them (protobuf bodies are decoded too); answers are
// always JSON. Every Server rule above holds over HTTP, and:
//
//   - create (201), get, list, watch, update, patch (merge, JSON, strategic; apply is 415),
//     delete with preconditions, deletecollection; AlreadyExists, NotFound, Conflict and
//     Invalid come back as the API server's Status, which client-go turns into the same
//     errors; a namespace in the body that differs from the URL's is 400;
//   - Options.StatusSubresource serves /status: UpdateStatus and status patches change only
//     the status, Update and Patch keep it (Server.UpdateStatus and PatchStatus do the same);
//   - Server faults reach the client as a real server sends them: a 429's Retry-After header
//     (client-go retries it by itself, on the bubble's clock in synctest), 410 as an ERROR
//     event, ConnectionRefused as a transport error;
//   - Cluster.FailNext(verb, resource, n, err) fails writes (or any verb) before they reach a
//     Server; Calls and CountCalls record every request with its verb, resource, namespace,
//     name, subresource and status code, next to each Server's Requests and RequestCounts.
//
// Over HTTP the rate limiter of client-go is off (RESTConfig sets QPS -1), so a test's writes
// are not throttled. Each Server keeps its own resourceVersion sequence, where one etcd would
// share one among resources. There is no discovery API, no server-side apply and no dry run.
// examples/testing runs a controller on a Cluster.
//
// # Testing warm restarts
//
// A restarted informer that resumes from a snapshot (docs/RESTART.md) meets the same server
// rules: a WATCH from a resourceVersion inside the history window replays every change since,
// deletes included; below it, 410; a LIST with limit=1 and resourceVersion "" returns the
// current version. Make the changes while "down" with Create, Update and Delete, push the
// snapshot's version out of the window with Compact or a small Options.HistorySize, serve from
// a fresh Server to play a snapshot newer than the cluster, and use AdvanceResourceVersion with a
// step of the fake clock for a quiet resource that only a bookmark moves past the target.
//
// Through a Cluster, a factory built with informers.WithSnapshots(dir, version) saves its
// caches when it stops; a second factory on the same Cluster starts from them, and
// RequestCounts().FullSyncs() == 0 on each Server shows that the restart was warm
// (TestKeysPublisherRestartsWarm in examples/testing). Snapshots need objects with
// resourceVersions, which Servers always give.
//
// # Fast, deterministic fault tests with testing/synctest
//
// A reflector backs off on the real clock after a fault (0.8s, doubling): two 429s cost seconds.
// Run the test in a testing/synctest bubble instead and the backoff, the server's bookmarks and
// every timeout pass on the bubble's clock, which jumps ahead whenever all its goroutines are
// blocked. A test with stacked faults then takes milliseconds and sends the same requests on
// every run. Both client-go's informers and openinformer's work this way:
//
//	func TestMain(m *testing.M) {
//		fake.PrepareForSynctest()
//		os.Exit(m.Run())
//	}
//
//	synctest.Test(t, func(t *testing.T) {
//		srv := fake.MustNew(fake.Options{Object: &corev1.Pod{}})
//		informer := cache.NewSharedIndexInformer(srv, &corev1.Pod{}, 0, cache.Indexers{})
//		ctx, cancel := context.WithCancel(t.Context())
//		defer cancel()
//		go informer.RunWithContext(ctx)
//		cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)
//		time.Sleep(time.Minute) // let the watch run a while (see below)
//
//		srv.FailNextWatches(2, fake.TooManyRequests(1))
//		srv.CloseWatches()
//		time.Sleep(time.Minute) // longer than the backoffs: costs no real time
//		synctest.Wait()         // every goroutine idle: the informer has caught up
//		// assert on the informer's store and the handlers' results here
//	})
//
// Four rules keep a bubble working:
//
//   - Call PrepareForSynctest from TestMain: k8s.io/apimachinery's HandleError, which
//     reflectors call for most failed lists and watches, otherwise sleeps for decades of bubble
//     time on its first report in a bubble (it measures from the real clock), and that
//     reflector never retries.
//   - Create the Server, the informer and their contexts inside the bubble (leave
//     Options.Clock unset: the real clock is the bubble's). A goroutine blocked on a channel
//     made outside the bubble keeps the bubble's clock from moving; a Server whose events are
//     held by HoldEvents must not be shared between bubbles.
//   - Use synctest.Wait, or time.Sleep in the bubble, instead of polling with Eventually.
//   - Let fake time pass before dropping a fresh watch: client-go's reflector (and
//     openinformer's) treats a watch that ends within a second having delivered nothing as
//     broken and relists, and in a bubble no time passes unless every goroutine waits.
//
// The runnable version is examples/testing in this repository.
//
// # Differences from a real server
//
// Requests for a future resourceVersion that a real server would wait up to 3 seconds for fail
// at once; there are no finalizers, graceful deletion, generation, managedFields or
// subresources; a watch with no timeout never times out unless Options.DefaultWatchTimeout is
// set (a real server closes it after 30 to 60 minutes).
package fake
