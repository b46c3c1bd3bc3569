package main

import (
	"syscall"
	"time"
)

// started is when this process started, near enough.
var started = time.Now()

// peakRSS is this process's peak resident set in bytes (Linux reports it in
// KiB).
func peakRSS() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Maxrss) * 1024
}
