module github.com/openinformer/cache/controllerruntime/envtest

go 1.26.0

require (
	github.com/openinformer/cache v0.0.0-00010101000000-000000000000
	github.com/openinformer/cache/controllerruntime v0.0.0-00010101000000-000000000000
	go.etcd.io/etcd/server/v3 v3.7.3
	sigs.k8s.io/controller-runtime v0.25.3
)

replace (
	github.com/openinformer/cache => ../../
	github.com/openinformer/cache/controllerruntime => ../
)
