// Package replica holds the partitions this broker hosts and their role.
// It keeps their logs in step with the metadata (opened with the topic's
// effective configs, reconfigured when those change as the dynamic
// configuration's logs applier (log_configs.go), deleted with the
// topic), gives every partition's replication state (leader, leader epoch,
// replicas, in-sync replicas) in one view, PartitionState, and the
// partitions this broker leads as Partition (their log, high watermark,
// last stable offset), and parks requests that wait for a partition to
// change in a DelayedQueue.
//
// Every partition has one replica today, its leader; the facts that follow
// from that live here and nowhere else.
package replica
