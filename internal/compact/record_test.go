package compact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A record carries an encoding's flags and body, whatever its pieces and
// tag: read back by a codec of another tag, it decodes to the same object,
// through an Encoding or directly.
func TestRecordRoundTrip(t *testing.T) {
	for _, size := range []int{0, 10, 5000, 70000} {
		pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Annotations: map[string]string{"pad": strings.Repeat("x", size)}}}
		writer, err := NewCodec(&corev1.Pod{}, Options{Tag: 3})
		require.NoError(t, err)
		e, err := writer.Encode(pod)
		require.NoError(t, err)
		rec := e.AppendRecord([]byte("prefix"))[len("prefix"):]

		reader, err := NewCodec(&corev1.Pod{}, Options{})
		require.NoError(t, err)
		loaded, err := reader.FromRecord(rec)
		require.NoError(t, err)
		assert.Equal(t, e.Bytes(), loaded.Bytes())
		assert.Zero(t, TagOf(loaded))
		got, err := reader.Decode(loaded)
		require.NoError(t, err)
		assert.True(t, equality.Semantic.DeepEqual(pod, got))
		direct, err := reader.DecodeRecord(rec)
		require.NoError(t, err)
		assert.True(t, equality.Semantic.DeepEqual(pod, direct))
	}
}

// A record with unknown flags, none, or compressed for a codec without a
// compressor is refused.
func TestMalformedRecordsAreRefused(t *testing.T) {
	c, err := NewCodec(&corev1.Pod{}, Options{})
	require.NoError(t, err)
	for _, rec := range [][]byte{nil, {flagTagged}, {0x80, 1}, {flagCompressed, 1}} {
		_, err := c.FromRecord(rec)
		assert.ErrorIs(t, err, errRecord, "%v", rec)
		_, err = c.DecodeRecord(rec)
		assert.ErrorIs(t, err, errRecord, "%v", rec)
	}
}
