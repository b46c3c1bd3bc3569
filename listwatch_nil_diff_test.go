package cache

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// captureHandledErrors collects what utilruntime.HandleError receives
// while f runs.
func captureHandledErrors(t *testing.T, f func()) []string {
	t.Helper()
	saved := utilruntime.ErrorHandlers
	var got []string
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, _ string, _ ...interface{}) {
		got = append(got, err.Error())
	}}
	defer func() { utilruntime.ErrorHandlers = saved }()
	f()
	return got
}

// TestNilListerWatcherNamesTheCall: client-go panics at Run on a nil
// ListerWatcher; every constructor here reports it at once, naming the
// call the user made.
func TestNilListerWatcherNamesTheCall(t *testing.T) {
	for want, build := range map[string]func(){
		"NewSharedInformer: nil ListerWatcher":      func() { NewSharedInformer(nil, &v1.Pod{}, 0) },
		"NewSharedIndexInformer: nil ListerWatcher": func() { NewSharedIndexInformer(nil, &v1.Pod{}, 0, Indexers{}) },
		"NewSharedIndexInformerWithOptions: nil ListerWatcher": func() {
			NewSharedIndexInformerWithOptions(nil, &v1.Pod{}, SharedIndexInformerOptions{})
		},
		"NewInformerWithOptions: nil ListerWatcher": func() { NewInformerWithOptions(InformerOptions{ObjectType: &v1.Pod{}}) },
		"NewIndexerInformer: nil ListerWatcher":     func() { NewIndexerInformer(nil, &v1.Pod{}, 0, ResourceEventHandlerFuncs{}, Indexers{}) },
		"NewReflector: nil ListerWatcher":           func() { NewReflector(nil, &v1.Pod{}, newReflectorTestStore(), 0) },
		"NewNamedReflector: nil ListerWatcher":      func() { NewNamedReflector("r", nil, &v1.Pod{}, newReflectorTestStore(), 0) },
	} {
		assert.Equal(t, []string{want}, captureHandledErrors(t, build))
	}
	assert.Empty(t, captureHandledErrors(t, func() { NewSharedIndexInformer(&ListWatch{}, &v1.Pod{}, 0, Indexers{}) }))
}
