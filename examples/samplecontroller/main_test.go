package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestControllerMakesAndResizesEachFoosDeployment(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := fake.NewClientset()
	var out strings.Builder
	if err := run(ctx, client, &out); err != nil {
		t.Fatal(err)
	}
	want := "created: foo-0-app=1 foo-1-app=2 foo-2-app=3\nresized: foo-0-app=1 foo-1-app=5 foo-2-app=3\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	d, err := client.AppsV1().Deployments("default").Get(ctx, "foo-1-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.Kind != "ConfigMap" || ref.Name != "foo-1" {
		t.Errorf("foo-1-app's controller is %+v, want Foo foo-1", ref)
	}
}
