package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestListersExample(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	assert.Equal(t, `pods in namespace shop with app=web: [shop/web-1 shop/web-2]
shop/web-1 runs on node-a
shop/missing: pod "missing" not found
pods on node-a (custom index): [shop/db-1 shop/web-1]
nodes with pods: [node-a node-b]
`, out.String())
}
