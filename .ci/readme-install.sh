#!/usr/bin/env bash
# Follows README.md's Install and Migrating sections literally, as a user
# with only the module proxy and a clone would: a new module that uses
# client-go's informers, the Prometheus adapter and sample-controller's
# generated code (informer-gen output for a custom resource) runs every sh
# block of those sections in order (the clone's URL being this checkout),
# then the README's generated-factory snippet, and must build, vet and run
# on openinformer's informers. Needs git, go and the module proxy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
app=$work/app
mkdir -p "$app"
cd "$app"

# sample-controller's API types and generated code, as the module's own.
sc=$(go mod download -json k8s.io/sample-controller@v0.37.1 | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
mkdir -p pkg/generated
cp -r "$sc/pkg/apis" pkg/
for d in clientset listers informers applyconfiguration; do cp -r "$sc/pkg/generated/$d" pkg/generated/; done
chmod -R u+w pkg
grep -rl 'k8s.io/sample-controller/' pkg | xargs sed -i 's#k8s.io/sample-controller/#example.com/app/#g'

go mod init example.com/app
cat >main.go <<'EOF'
// Command app starts informers the way a controller does: client-go's
// typed factory with a watch error handler, and a generated factory for a
// custom resource. It prints which package's informers it runs.
package main

import (
	"context"
	"fmt"
	"reflect"
	"time"

	fooinformers "example.com/app/pkg/generated/informers/externalversions"
	foofake "example.com/app/pkg/generated/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	installMetrics()
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	if err := pods.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
		fmt.Println("watch error from", r.Name(), err)
	}); err != nil {
		panic(err)
	}
	fooFactory := fooinformers.NewSharedInformerFactory(foofake.NewClientset(), 0)
	foos := fooFactory.Samplecontroller().V1alpha1().Foos().Informer()
	factory.StartWithContext(ctx)
	fooFactory.StartWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, foos.HasSynced) {
		panic("not synced")
	}
	fmt.Println("pods cached by", implementation(pods))
	fmt.Println("foos cached by", implementation(foos))
	cancel()
	factory.Shutdown()
	fooFactory.Shutdown()
}

// implementation is the package of the informer inside a typed wrapper.
func implementation(informer cache.SharedIndexInformer) string {
	return reflect.ValueOf(informer).Elem().Field(0).Elem().Type().Elem().PkgPath()
}
EOF
cat >metrics.go <<'EOF'
package main

func installMetrics() {}
EOF
go mod tidy
[ "$(go run .)" = "$(printf 'pods cached by k8s.io/client-go/tools/cache\nfoos cached by k8s.io/client-go/tools/cache')" ]

# The user adopts openinformer's Prometheus adapter along with the library.
cat >metrics.go <<'EOF'
package main

import (
	oiprometheus "github.com/openinformer/cache/metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

func installMetrics() { oiprometheus.New(prometheus.NewRegistry()).Install() }
EOF

# Every sh block of Install and Migrating, in order.
awk '/^## Install$/ {on=1} /^## A 30-second program$/ {on=0}
     on && /^```sh$/ {block=1; next} block && /^```$/ {block=0; print "#---"; next} block {print}' \
  "$root/README.md" | sed "s#<this repository's URL>#$root#" >"$work/steps.sh"
grep -q openinformer-rewrite "$work/steps.sh" || { echo "README's Install and Migrating have no rewrite step" >&2; exit 1; }
cat "$work/steps.sh"
bash -euxo pipefail "$work/steps.sh"

# The README's generated-factory snippet, as a file of the module.
{
  cat <<'EOF'
package main

import (
	"time"

	"example.com/app/pkg/generated/clientset/versioned"
	informers "example.com/app/pkg/generated/informers/externalversions"
	cache "github.com/openinformer/cache"
	"k8s.io/apimachinery/pkg/runtime"
)

EOF
  awk '/^### Generated code/ {on=1} /^### controller-runtime/ {on=0}
       on && /^```go$/ {block=1; next} block && /^```$/ {block=0; next} block {print}' "$root/README.md"
  echo
  echo 'var _ = newFooFactory'
} >snippet.go
go build ./... && go vet ./...
out=$(go run .)
echo "$out"
[ "$out" = "$(printf 'pods cached by github.com/openinformer/cache\nfoos cached by github.com/openinformer/cache')" ]
echo "readme-install: README's Install and Migrating followed literally: ok"
