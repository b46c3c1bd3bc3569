package cache

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newTestPod returns a pod with the given namespace, name and resource
// version, and labels given as alternating keys and values.
func newTestPod(namespace, name, rv string, labels ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
	if len(labels) > 0 {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			p.Labels[labels[i]] = labels[i+1]
		}
	}
	return p
}

// newTestPods returns n pods "pod-<i>" spread over the given number of
// namespaces "ns-<i%namespaces>", all at resource version rv.
func newTestPods(n, namespaces int, rv string) []interface{} {
	out := make([]interface{}, n)
	for i := range out {
		out[i] = newTestPod("ns-"+strconv.Itoa(i%namespaces), "pod-"+strconv.Itoa(i), rv)
	}
	return out
}
