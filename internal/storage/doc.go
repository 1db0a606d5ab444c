// Package storage implements Kafka partition logs on disk for a single-replica
// leader: what Apache Kafka's log layer (UnifiedLog, LocalLog, LogSegment,
// LogValidator, ProducerStateManager, LogManager) does, in Kafka's on-disk layout.
//
// # Layout
//
// Each partition lives in "<log.dir>/<topic>-<partition>/" with:
//
//   - <base offset, 20 digits>.log: v2 record batches exactly as produced, with the
//     broker-assigned base offset, partition leader epoch and (for LogAppendTime)
//     timestamp patched in place and the CRC recomputed. Compressed batches stay
//     compressed.
//   - <base>.index: sparse offset index, 8-byte entries (int32 offset relative to
//     the base, int32 file position), one per index.interval.bytes of log written,
//     mapping a batch's last offset to its position, as Kafka writes it.
//   - <base>.timeindex: 12-byte entries (int64 max timestamp so far, int32 relative
//     offset of the batch holding it), appended when the max grows at each index
//     interval and once more when the segment is rolled.
//   - partition.metadata: "version: 0" and the topic id, so that a directory left
//     by a deleted topic is recognised when a topic of the same name is recreated.
//   - .kbroker_cleanshutdown: present only after a clean Close.
//
// # Rules followed
//
// Append validates a produced batch as Kafka 4 does for Produce v3+ (one batch,
// magic 2, CRC-32C, base offset 0, record count and offset deltas, timestamps
// within message.timestamp.before/after.max.ms, max.message.bytes), decompressing
// compressed batches (bounded) to check their records. Control and transactional
// batches are refused: transactions are not implemented. Idempotent producers get
// Kafka's sequence/epoch checks and duplicate detection over their last 5 batches.
//
// Segments roll on segment.bytes, segment.ms (measured from the first batch's
// timestamp), a full index, or relative-offset overflow. Retention deletes whole
// oldest segments by retention.ms (largest timestamp) and retention.bytes; the log
// always keeps an active segment, rolling a fresh one before deleting the last.
//
// Durability follows Kafka: writes are not fsynced (the page cache holds
// acknowledged data); segments are synced when rolled and on Close. Open recovers
// from a crash by re-checking the last segment batch by batch (CRC included unless
// the shutdown was clean), truncating a torn or corrupt tail (and any later
// segment), rebuilding damaged indexes (they are caches of the .log) and rebuilding
// producer state from batch headers.
//
// # Concurrency
//
// One writer at a time per log (appendMu: Append, roll, retention, close). Readers
// take no writer lock: they snapshot the segment list, read only bytes published
// through an atomic log-end pointer, and use ReadAt so many reads proceed in
// parallel with each other and with an append's write. A segment being deleted
// waits for in-flight reads of it; a read that loses that race restarts.
package storage
