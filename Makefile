# openinformer: the two commands a newcomer needs are `make demo` and `make test`.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
APICOMPAT   := ../shared/tools/apicompat
ROUNDS      ?= 1
PKGS        := ./...

.PHONY: all demo test fmt-check vet staticcheck unit bench api api-check integration integration-lint

all: test

## demo: run an informer end to end on the embedded fake API server.
demo:
	$(GO) run ./examples/podwatch

## test: formatting, vet, staticcheck and every test with the race detector.
test: fmt-check vet staticcheck unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run $(STATICCHECK) $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 10m $(PKGS)

## integration: ours and client-go's informers against a real API server
## (apiextensions-apiserver with embedded etcd, in-process, loopback only).
integration:
	cd integration && $(GO) test -race -count=1 -timeout 30m ./...

## integration-lint: vet and staticcheck for the integration module (a second,
## non-race type-check of the API server: a few minutes when cold).
integration-lint:
	cd integration && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

## bench: our implementation and client-go's side by side, printed as ratios;
## ROUNDS=5 runs each side five times and prints medians and the ratios' range.
bench:
	$(GO) run ./internal/cmd/benchratio -rounds $(ROUNDS)

APICOMPAT_RUN = cd $(APICOMPAT) && $(GO) run . -ref k8s.io/client-go/tools/cache -dir $(CURDIR) -skip '^ResetInformerNamesForTesting$$'

## api: how much of client-go's tools/cache exported API we mirror.
api:
	@$(APICOMPAT_RUN)

## api-check: fail unless the whole exported API is mirrored (used by CI).
api-check:
	@$(APICOMPAT_RUN) -min 100
