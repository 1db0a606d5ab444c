// Package group is Kafka's classic consumer-group coordinator: the group
// state machine (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete) and the group admin
// calls (DescribeGroups, ListGroups, DeleteGroups).
//
// A group lives in the shard of its `__consumer_offsets` partition
// (internal/coordinator); every change that must survive a restart — a
// group's generation and assignment, a committed offset, a deletion — is a
// record of Kafka's own `__consumer_offsets` schemas appended to that
// partition before the request is answered, and is replayed from it when
// the shard loads.
//
// Offsets expire as KIP-211 says (retention.go). KIP-848 consumer groups
// (ConsumerGroupHeartbeat, server-side assignors in assignor/) hang off the
// same group entry (consumer_group.go, consumer_heartbeat.go, reconcile.go)
// and persist with Kafka's own consumer-group record types
// (consumer_records.go). Not here yet: classic members inside a consumer
// group (online migration of groups with members), group configs,
// transactional offset commits (RequireStable is accepted and, with no
// transactions, has nothing to wait for).
package group
