// Package broker starts and stops the broker processes the benchmark
// compares, and reads their CPU time and memory from /proc.
//
// Every broker runs as its own process, started fresh for each measured run,
// so that one run's heap, page cache warm-up or stored data cannot leak into
// the next and so that the peak RSS read at the end belongs to that run
// alone. Nothing here measures throughput; see package workload for that.
package broker
