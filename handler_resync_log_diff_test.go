package cache

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientcache "k8s.io/client-go/tools/cache"
)

// lineLogger collects every line a logr.Logger prints, so that two
// libraries' lines can be compared word for word.
func lineLogger(lines *[]string) logr.Logger {
	return funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+" "+args) }, funcr.Options{})
}

// TestHandlerResyncWarningsMatchClientGo requires the warnings a handler's
// too-small resync period produces, before and after Run, to carry the
// same messages and keys as client-go's: users grep and alert on them.
func TestHandlerResyncWarningsMatchClientGo(t *testing.T) {
	tiny := 10 * time.Millisecond
	var ourLines, theirLines []string
	ours, theirs := newNameTestInformers()
	ourLogger, theirLogger := lineLogger(&ourLines), lineLogger(&theirLines)
	_, err := ours.AddEventHandlerWithOptions(ResourceEventHandlerFuncs{}, HandlerOptions{Logger: &ourLogger, ResyncPeriod: &tiny})
	require.NoError(t, err)
	_, err = theirs.AddEventHandlerWithOptions(clientcache.ResourceEventHandlerFuncs{}, clientcache.HandlerOptions{Logger: &theirLogger, ResyncPeriod: &tiny})
	require.NoError(t, err)
	require.NotEmpty(t, theirLines)
	assert.Equal(t, theirLines, ourLines)
}
