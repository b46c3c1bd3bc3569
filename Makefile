# openinformer: the two commands a newcomer needs are `make demo` and `make test`.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
ROUNDS      ?= 1
CASES       ?= .
APICHECK    := $(GO) run ./internal/cmd/apicheck -skip '^ResetInformerNamesForTesting$$'
PKGS        := ./...
# The next client-go minor: go.next.mod requires it, it needs Go 1.27, and
# files that only build against it carry the clientgo_v038 build tag.
NEXT_GO     := GOTOOLCHAIN=go1.27.3 $(GO)
NEXT_FLAGS  := -modfile=go.next.mod -tags clientgo_v038

.PHONY: all demo test fmt-check vet staticcheck unit bench bench-short api api-check api-next api-newest test-next depcheck depcheck-next integration integration-lint prometheus memratio demo-sharded generate generate-check upstream-tests demo-restart measure-restart upstream-tests-next

all: test

## demo: run an informer end to end on the embedded fake API server.
demo:
	$(GO) run ./examples/podwatch

## test: formatting, vet, staticcheck and every test with the race detector.
test: fmt-check vet staticcheck unit

fmt-check:
	@echo "fmt-check: gofmt -l on every Go file"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo "vet: type-checking every package (the first run compiles the Kubernetes dependencies first: minutes, silently)"
	$(GO) vet $(PKGS)

staticcheck:
	@echo "staticcheck: building $(STATICCHECK) (first run only), then checking every package"
	$(GO) run $(STATICCHECK) $(PKGS)

unit:
	@echo "unit: compiling the race-instrumented packages and tests, then running them; one 'ok' line per package"
	@echo "      as it passes (the first run compiles everything under -race before the first line: minutes)"
	$(GO) test -race -count=1 -timeout 10m $(PKGS)

## integration: ours and client-go's informers against a real API server
## (apiextensions-apiserver with embedded etcd, in-process, loopback only).
integration:
	cd integration && $(GO) test -race -count=1 -timeout 60m ./...

## integration-lint: vet and staticcheck for the integration module (a second,
## non-race type-check of the API server: a few minutes when cold).
integration-lint:
	cd integration && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

## bench: our implementation and client-go's side by side, printed as ratios.
## CASES=regexp selects cases by name (make bench CASES=informer; list them
## with go run ./internal/cmd/benchratio -list); ROUNDS=5 runs each side five
## times and prints medians and the ratios' range; SHORT=1 runs only the
## headline cases (about a minute). It prints an estimate before starting.
bench:
	$(GO) run ./internal/cmd/benchratio -rounds $(ROUNDS) -run '$(CASES)' $(if $(SHORT),-short)

## bench-short: the headline cases only, one round (make bench SHORT=1).
bench-short:
	$(MAKE) bench SHORT=1

## api: how much of client-go's tools/cache exported API we mirror, from the
## module cache at the version go.mod requires.
api:
	@$(APICHECK)

## api-check: fail unless the whole exported API is mirrored (used by CI).
api-check:
	@$(APICHECK) -min 100

## test-next: vet and every test with the race detector, built against the
## next client-go minor (go.next.mod: v0.38.0-beta.0, Go 1.27.3), with the
## differential tests against its tools/cache that only build there (used by CI).
test-next:
	$(NEXT_GO) vet $(NEXT_FLAGS) $(PKGS)
	$(NEXT_GO) test $(NEXT_FLAGS) -race -count=1 -timeout 10m $(PKGS)

## api-next: fail unless the whole exported API of the next minor's
## tools/cache is mirrored, both built from go.next.mod (used by CI).
api-next:
	@$(NEXT_GO) run ./internal/cmd/apicheck -modfile go.next.mod -skip '^ResetInformerNamesForTesting$$' -min 100

## api-newest: what the newest client-go the module proxy serves (pre-releases
## included, skipping those this Go cannot build) adds to or changes in the
## tools/cache API we mirror: every MISSING or MISMATCH line is work for the
## release after. Needs the module proxy; not part of CI.
api-newest:
	@$(NEXT_GO) run ./internal/cmd/apicheck -ref-version newest -pkg k8s.io/client-go/tools/cache

## depcheck: fail if a module requiring ours selects any module at another
## version than a module requiring only client-go (used by CI).
depcheck:
	$(GO) run ./internal/cmd/depcheck

## depcheck-next: the same for a user who requires the next client-go minor
## (go.next.mod's) besides openinformer (used by CI).
depcheck-next:
	$(NEXT_GO) run ./internal/cmd/depcheck -client-go $$($(NEXT_GO) list -modfile=go.next.mod -m -f '{{.Version}}' k8s.io/client-go)

## prometheus: vet, staticcheck and tests of the Prometheus adapter module
## (a nested module, so the cache module gains no dependency).
prometheus:
	cd metrics/prometheus && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...

## memratio: heap per cached object and read costs of compact forms against
## client-go (N objects, default 100000; see docs/MEMORY.md).
memratio:
	$(GO) run ./internal/cmd/memratio -n $(or $(N),100000)

## demo-restart: an informer stops, saves its snapshot, pods change while it
## is down, and it restarts warm, beside client-go's cold start (docs/RESTART.md).
demo-restart:
	$(GO) run ./examples/restart

## measure-restart: the same with PODS (100000) realistic pods, ROUNDS (3
## unless set) restarts, printed with the load (docs/RESTART.md "Measured").
measure-restart:
	@uptime
	$(GO) run ./examples/restart -realistic -pods $(or $(PODS),100000) -rounds $(if $(filter file,$(origin ROUNDS)),3,$(ROUNDS))
	@uptime

## demo-sharded: four sharded informers sharing pods on the fake API server.
demo-sharded:
	$(GO) run ./examples/sharded

## generate: regenerate the typed factory's group accessors and ForResource
## table from client-go's informers, one file per minor: zz_generated.go from
## go.mod's client-go, zz_generated_v038.go (tag clientgo_v038) from go.next.mod's.
GENERATE_NEXT := -modfile go.next.mod -tags clientgo_v038 -o informers/zz_generated_v038.go
generate:
	$(GO) run ./internal/cmd/informersgen -tags '!clientgo_v038'
	$(NEXT_GO) run ./internal/cmd/informersgen $(GENERATE_NEXT)

## generate-check: fail if a generated file is stale (used by CI).
generate-check:
	$(GO) run ./internal/cmd/informersgen -tags '!clientgo_v038' -check
	$(NEXT_GO) run ./internal/cmd/informersgen $(GENERATE_NEXT) -check

## upstream-tests: client-go's own tests for dynamicinformer and
## metadatainformer, copied from the module cache, against ours (used by CI).
## UPSTREAM='tools/cache=.' runs client-go's tools/cache tests against the
## root package; MODFILE=go.next.mod resolves client-go with another go.mod.
upstream-tests:
	$(GO) run ./internal/cmd/upstreamtests -race $(if $(MODFILE),-modfile $(MODFILE)) $(UPSTREAM)

## upstream-tests-next: client-go v0.38's own tests (factories and tools/cache)
## against ours, built against the next minor (go.next.mod, Go 1.27.3); files
## that need client-go internals are listed as dropped (used by CI).
upstream-tests-next:
	$(NEXT_GO) run ./internal/cmd/upstreamtests -race -modfile go.next.mod -tags clientgo_v038 \
		dynamic/dynamicinformer=./dynamicinformer metadata/metadatainformer=./metadatainformer tools/cache=.

## realserver-bench: pod informers, ours beside client-go, against a real
## kube-apiserver v1.37.2 + etcd v3.7.3 (bench/kubeapiserver/README.md).
## PODS (20000), ROUNDS (3 unless set), STEADY (60s), RATE (100 updates/s).
## The first run builds kube-apiserver: ~11 min cold on 2 quiet cores.
.PHONY: realserver-bench
realserver-bench:
	cd bench/kubeapiserver && $(GO) build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
		&& $(GO) build -o bin/realserver-bench . \
		&& ./bin/realserver-bench -apiserver bin/kube-apiserver -pods $(or $(PODS),20000) \
		-rounds $(if $(filter file,$(origin ROUNDS)),3,$(ROUNDS)) -steady $(or $(STEADY),60s) -rate $(or $(RATE),100)

## crbench: an operator watching Pods and Secrets on controller-runtime
## v0.25.3's cache (DefaultTransform: TransformStripManagedFields) beside the
## same operator on crcache (compact, managedFields stripped), each in its own
## process, on envtest's kube-apiserver v1.37.2 and etcd v3.7.3 (built as
## controllerruntime-envtest builds them, unless CR_APISERVER and CR_ETCD name
## binaries). The objects are created once and serve every child; pods get
## the status a kubelet writes (STATUS=0 skips it). PODS (20000), SECRETS
## (10000), ROUNDS (1), WINDOW (240s CPU window at RATE status updates/s;
## WINDOW=0 skips it), RATE (100). RESTART=1 adds the kill-and-restart rounds
## (controller-runtime cold, crcache cold with snapshots, SIGKILL, crcache
## warm; RATE updates/s flowing); MEASURE=0 runs only those. HEAP_PROFILE=dir
## keeps each child's heap profile at its peak; CPU_PROFILE=dir each restart
## start's CPU profile from its start to ready and each measure child's CPU
## windows (<impl>-round<n>-<noop|get>.pprof); GOGC sets the children's.
## crbench-restart is crbench with RESTART=1 MEASURE=0 PODS=100000 ROUNDS=2.
CR_APISERVER ?= $(CURDIR)/bench/kubeapiserver/bin/kube-apiserver
CR_ETCD ?= $(CURDIR)/controllerruntime/envtest/bin/etcd
.PHONY: crbench crbench-restart
crbench:
	$(if $(filter $(CURDIR)/bench/kubeapiserver/bin/kube-apiserver,$(CR_APISERVER)),cd bench/kubeapiserver && $(GO) build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver)
	$(if $(filter $(CURDIR)/controllerruntime/envtest/bin/etcd,$(CR_ETCD)),cd controllerruntime/envtest && $(GO) build -o bin/etcd ./cmd/etcd)
	cd bench/crbench && $(GO) build -o bin/crbench . && ./bin/crbench -apiserver $(abspath $(CR_APISERVER)) -etcd $(abspath $(CR_ETCD)) \
		-pods $(or $(PODS),20000) -secrets $(or $(SECRETS),10000) -rounds $(or $(ROUNDS),1) \
		-window $(or $(WINDOW),240s) -rate $(or $(RATE),100) -status=$(if $(filter 0,$(STATUS)),false,true) \
		-restart=$(if $(filter 1,$(RESTART)),true,false) -measure=$(if $(filter 0,$(MEASURE)),false,true) \
		$(if $(HEAP_PROFILE),-heap-profile $(abspath $(HEAP_PROFILE))) $(if $(CPU_PROFILE),-cpu-profile $(abspath $(CPU_PROFILE))) \
		$(if $(GOGC),-gogc $(GOGC))
crbench-restart:
	$(MAKE) crbench RESTART=1 MEASURE=$(or $(MEASURE),0) PODS=$(or $(PODS),100000) ROUNDS=$(or $(ROUNDS),2)

## realserver-restart: issue 29's warm restart against the same real
## kube-apiserver: client-go's cold start, ours cold, then ours warm from its
## snapshot after 1% of the pods changed, each in its own process, with RATE
## status patches/s flowing (bench/kubeapiserver/README.md).
## PODS (100000), ROUNDS (2 unless set), RATE (100 updates/s).
.PHONY: realserver-restart
realserver-restart:
	cd bench/kubeapiserver && $(GO) build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
		&& $(GO) build -o bin/realserver-bench . \
		&& ./bin/realserver-bench -mode restart -apiserver bin/kube-apiserver -pods $(or $(PODS),100000) \
		-rounds $(if $(filter file,$(origin ROUNDS)),2,$(ROUNDS)) -rate $(or $(RATE),100)

## readme-install: follow README's Install and Migrating literally in a new
## module that uses client-go, the Prometheus adapter and informer-gen output
## (needs git and the module proxy; used by CI).
.PHONY: readme-install
readme-install:
	.ci/readme-install.sh

## listerheavy-bench: issue 41's whole-program benchmark: a lister-heavy
## controller workload on client-go's informer factory, ours and ours with
## compact storage, each in its own process, against a real kube-apiserver
## v1.37.2 (bench/listerheavy/README.md). PODS (5000), NAMESPACES (20),
## RATE (20 updates/s), LOAD (120s), IDLE (60s), ROUNDS (1 unless set);
## APISERVER=path uses a kube-apiserver built already; CPU_PROFILE=dir has
## each workload write a CPU profile of its update phase there.
.PHONY: listerheavy-bench
listerheavy-bench:
	$(if $(APISERVER),,cd bench/kubeapiserver && $(GO) build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver)
	cd bench/listerheavy && $(GO) build -o bin/listerheavy . \
		&& ./bin/listerheavy -apiserver $(or $(abspath $(APISERVER)),../kubeapiserver/bin/kube-apiserver) \
		-pods $(or $(PODS),5000) -namespaces $(or $(NAMESPACES),20) -rate $(or $(RATE),20) \
		-load $(or $(LOAD),120s) -idle $(or $(IDLE),60s) -rounds $(if $(filter file,$(origin ROUNDS)),1,$(ROUNDS)) \
		$(if $(CPU_PROFILE),-cpu-profile $(abspath $(CPU_PROFILE)))

## controllerruntime: vet, staticcheck and race tests of the controller-runtime
## cache module (controllerruntime/, nested: the root module stays free of
## controller-runtime). Used by CI.
.PHONY: controllerruntime controllerruntime-envtest
controllerruntime:
	cd controllerruntime && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...

## controllerruntime-envtest: a manager built with crcache, then
## controller-runtime v0.25.3's own pkg/cache suite and read-your-writes
## client tests against crcache (default and compact modes), on envtest with
## kube-apiserver v1.37.2 (built exactly as realserver-bench builds it, so
## the two share the build cache) and etcd v3.7.3 built from its module.
## Every result is printed (docs/CONTROLLER-RUNTIME.md). Used by CI, in both
## modes; CR_MODES=default (or compact) runs one; CR_APISERVER=path uses a
## kube-apiserver already built instead of building one.
CR_APISERVER := $(CURDIR)/bench/kubeapiserver/bin/kube-apiserver
CR_ETCD      := $(CURDIR)/controllerruntime/envtest/bin/etcd
CR_MODES     ?= default,compact
controllerruntime-envtest:
	$(if $(filter $(CURDIR)/bench/kubeapiserver/bin/kube-apiserver,$(CR_APISERVER)),cd bench/kubeapiserver && $(GO) build -o bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver)
	cd controllerruntime/envtest && $(GO) build -o bin/etcd ./cmd/etcd \
		&& $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... \
		&& TEST_ASSET_KUBE_APISERVER=$(CR_APISERVER) TEST_ASSET_ETCD=$(CR_ETCD) $(GO) test -race -count=1 ./manager \
		&& $(GO) run ./cmd/upstream -race -mode $(CR_MODES) -apiserver $(CR_APISERVER) -etcd $(CR_ETCD)
