package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestShardedExample(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, server := range []string{"applied", "ignored", "rejected"} {
		var out bytes.Buffer
		err := run(context.Background(), config{replicas: 3, objects: 300, writes: 150, server: server}, &out)
		require.NoError(t, err, server)
		assert.Contains(t, out.String(), "every one of the server's 300 pods is held by exactly one replica", server)
		mode := "server"
		if server != "applied" {
			mode = "client"
		}
		assert.Equal(t, 3, bytes.Count(out.Bytes(), []byte(" "+mode+" ")), "%s:\n%s", server, out.String())
	}
	assert.Error(t, run(context.Background(), config{replicas: 1, server: "maybe"}, &bytes.Buffer{}))
}
