package shardlw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An UnstructuredList's shard info reads the same on both minors, though
// only v0.38's has GetShardInfo: a dynamic informer with a shard selector
// lists on v0.37 too.
func TestShardInfoOfAnUnstructuredListOnEitherMinor(t *testing.T) {
	for name, tc := range map[string]struct {
		object map[string]interface{}
		want   *metav1.ShardInfo
	}{
		"none":         {object: map[string]interface{}{"metadata": map[string]interface{}{}}},
		"the server's": {object: map[string]interface{}{"metadata": map[string]interface{}{"shardInfo": map[string]interface{}{"selector": "x"}}}, want: &metav1.ShardInfo{Selector: "x"}},
	} {
		list := &unstructured.UnstructuredList{Object: tc.object}
		listMeta, err := meta.ListAccessor(list)
		require.NoError(t, err)
		got, err := shardInfo(listMeta, list)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
}
