// Package coordinator is the runtime that the group and transaction
// coordinators run on: one shard per partition of an internal topic
// (`__consumer_offsets`, `__transaction_state`) that this broker leads. A
// shard replays its partition's log when it is loaded, then owns its state
// on one goroutine — its event loop — so handlers never share a lock with
// it: they submit a function and wait for its answer. Timers fire on the same loop. A state
// change is appended to the partition log before the request that caused it
// is answered, so an acknowledged change is as durable as an acknowledged
// produce and comes back on the next load. On a partition with replicas
// (PartitionLog) that append is acks=-1, as Kafka's coordinators write:
// the shard's loop waits until the in-sync replicas hold it, so a change
// acknowledged by a leader that then dies is on the leader elected next,
// whose shard replays the log to its end.
//
// The state machine is plugged in through StateMachine; the runtime knows
// nothing about groups or transactions. Replay sees each record's batch
// producer and control flag, so that transactional offset commits and
// the markers settling them replay as they were written
// (WriteTransactional, WriteMarker).
package coordinator
