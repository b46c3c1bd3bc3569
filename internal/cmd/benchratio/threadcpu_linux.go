package main

import (
	"syscall"
	"time"
	"unsafe"
)

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID: the CPU time of the
// calling thread, user and system, to the nanosecond.
const clockThreadCPUTime = 3

// threadCPU returns the CPU time the calling OS thread has used, and false
// where the clock cannot be read. The caller locks its goroutine to its
// thread, so that the difference of two readings is its own work: time
// spent waiting for a core, which is most of a wall-clock p99 on a busy
// machine, is not in it. It is a system call (the vDSO does not serve
// this clock), about a microsecond on a virtual machine.
func threadCPU() (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano()), errno == 0
}

// rusageThread is Linux's RUSAGE_THREAD.
const rusageThread = 1

// threadUsage returns the system time and the page faults of the calling OS
// thread so far, and false where they cannot be read. A read's system time
// is mostly the page faults of the memory it allocates, which the thread
// clock counts.
func threadUsage() (sys time.Duration, faults int64, ok bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &u); err != nil {
		return 0, 0, false
	}
	return time.Duration(u.Stime.Nano()), u.Minflt + u.Majflt, true
}

// processCPU returns the CPU time, user and system, that all the threads of
// the process have used, and false where it cannot be read.
func processCPU() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
