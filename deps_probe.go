package cache

import (
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/client-go/features"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/tools/pager"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/utils/buffer"
	_ "k8s.io/utils/clock/testing"
)
