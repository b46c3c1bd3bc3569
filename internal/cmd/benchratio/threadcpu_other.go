//go:build !linux

package main

import "time"

// threadCPU reports no thread clock outside Linux: the CPU-time metrics are
// then left out.
func threadCPU() (time.Duration, bool) { return 0, false }

// threadUsage reports nothing outside Linux.
func threadUsage() (sys time.Duration, faults int64, ok bool) { return 0, 0, false }

// processCPU reports nothing outside Linux.
func processCPU() (time.Duration, bool) { return 0, false }
