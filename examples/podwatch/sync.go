package main

import (
	"context"
	"fmt"
	"io"
	"time"

	cache "github.com/openinformer/cache"
)

// waitForSync waits for the informer's first sync, printing every interval
// how many pods arrived so far and the last failed request's error, so an
// unreachable or forbidden cluster shows why nothing happens. It reports
// whether the sync completed before ctx ended.
func waitForSync(ctx context.Context, interval time.Duration, out io.Writer, start time.Time, informer cache.SharedIndexInformer, lw *countingListerWatcher) bool {
	synced := make(chan bool, 1)
	go func() { synced <- cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) }()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case ok := <-synced:
			return ok
		case <-ticker.C:
			line := fmt.Sprintf("%6.1fs waiting for the first sync: %d pods so far", time.Since(start).Seconds(), len(informer.GetIndexer().ListKeys()))
			if err := lw.lastError(); err != nil {
				line += fmt.Sprintf("; last error: %v", err)
			}
			fmt.Fprintln(out, line)
		}
	}
}
