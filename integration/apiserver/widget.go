package apiserver

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Widget is the custom resource the server serves.
var (
	WidgetGroupVersion = schema.GroupVersion{Group: "test.openinformer.io", Version: "v1"}
	WidgetGVR          = WidgetGroupVersion.WithResource("widgets")
	WidgetGVK          = WidgetGroupVersion.WithKind("Widget")
)

// NewWidget returns a Widget with spec.value set.
func NewWidget(namespace, name string, value int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"value": value},
	}}
	u.SetGroupVersionKind(WidgetGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// WidgetValue returns spec.value of a Widget, or false if it has none.
func WidgetValue(u *unstructured.Unstructured) (int64, bool) {
	v, found, err := unstructured.NestedInt64(u.Object, "spec", "value")
	return v, found && err == nil
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: WidgetGVR.Resource + "." + WidgetGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: WidgetGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:   WidgetGVR.Resource,
				Singular: "widget",
				Kind:     WidgetGVK.Kind,
				ListKind: WidgetGVK.Kind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    WidgetGVR.Version,
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {
								Type:                   "object",
								XPreserveUnknownFields: &preserve,
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"value": {Type: "integer"},
								},
							},
						},
					},
				},
			}},
		},
	}
}

// registerWidgetCRD creates the Widget CRD and waits until widgets can be
// listed.
func registerWidgetCRD(ctx context.Context, config *rest.Config) error {
	crds, err := clientset.NewForConfig(config)
	if err != nil {
		return err
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Widget CRD: %w", err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	return WaitServed(ctx, client)
}

// WaitServed polls until widgets can be listed, e.g. after the CRD was
// created or the API server restarted.
func WaitServed(ctx context.Context, client dynamic.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, lastErr = client.Resource(WidgetGVR).Namespace("probe").List(ctx, metav1.ListOptions{Limit: 1})
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("widgets not served: %w (last error: %v)", err, lastErr)
	}
	return nil
}
