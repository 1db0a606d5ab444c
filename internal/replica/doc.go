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
// Replication: the leader's side (leader.go: follower fetch state, the
// high watermark at the ISR's minimum, ISR changes by compare-and-swap),
// the follower's (fetcher.go: one fetcher per leader broker, truncation
// over OffsetForLeaderEpoch rounds), acks=all (acks.go), the
// high-watermark checkpoint a restarted replica starts from
// (hw_checkpoint.go) and what the metrics report (stats.go). A partition
// of one replica is left as it always was: every append commits.
package replica
