package cache

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	gvrPods    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrDeploys = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrJobs    = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func TestGVRSyncResultAsError(t *testing.T) {
	assert.NoError(t, GVRSyncResult{Synced: map[schema.GroupVersionResource]bool{gvrPods: false}}.AsError())
	err := GVRSyncResult{Err: context.Canceled, Synced: map[schema.GroupVersionResource]bool{gvrPods: false, gvrDeploys: true, gvrJobs: false}}.AsError()
	assert.EqualError(t, err, "failed to sync all caches: /v1, Resource=pods, batch/v1, Resource=jobs: context canceled")
	assert.True(t, errors.Is(err, context.Canceled))
	assert.EqualError(t, GVRSyncResult{Err: context.Canceled}.AsError(), "failed to sync all caches: : context canceled")
}
