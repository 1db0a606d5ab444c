// Package storage implements Kafka partition logs on disk: what Apache Kafka's
// log layer (UnifiedLog, LocalLog, LogSegment, ProducerStateManager,
// LogManager) does, in Kafka's on-disk layout. The batch format itself
// (parsing, validation, compression, stamping, building) is package record's.
//
// # Layout
//
// Each log directory holds a .lock file that the running broker keeps an
// exclusive flock on (LockDirs), as Kafka holds its .lock: a second broker
// on the same directory fails at startup instead of writing the same
// segments. Each partition lives in "<log.dir>/<topic>-<partition>/" with:
//
//   - <base offset, 20 digits>.log: v2 record batches exactly as produced, with the
//     broker-assigned base offset, partition leader epoch and (for LogAppendTime)
//     timestamp patched in place and the CRC recomputed. Compressed batches stay
//     compressed.
//   - <base>.index: sparse offset index, 8-byte entries (int32 offset relative to
//     the base, int32 file position), one per index.interval.bytes of log written,
//     mapping a batch's last offset to its position, as Kafka writes it.
//   - <base>.timeindex: 12-byte entries (int64 max timestamp so far, int32 relative
//     offset of the batch holding it), added when the max grows at each index
//     interval and once more when the segment is rolled or its log closed.
//     Both indexes are kept in memory and written whole when a segment is
//     sealed (rolled, or its log closed); the active segment's files are stale
//     until then. A sealed segment's are read back when first used, and may be
//     unloaded again to keep within a memory budget.
//   - <base>.txnindex: the transactions aborted by a marker in the segment, 34-byte
//     entries as Kafka's TransactionIndex (txnindex.go); only for segments with one.
//   - <offset>.snapshot: producer state (with open transactions) as of that offset (Kafka's
//     snapshot format, snapshot.go), written after each roll and on Close; the
//     newest two are kept.
//   - cleaner-offset-checkpoint: compacted logs only; the first dirty offset
//     (Kafka keeps one such file per log directory; kbroker one per partition).
//   - <base>.log.cleaned / .swap (and their indexes): a compacted segment on its
//     way in; never present after Open.
//   - partition.metadata: "version: 0" and the topic id, so that a directory left
//     by a deleted topic is recognised when a topic of the same name is recreated.
//   - .kbroker_cleanshutdown: present only after a clean Close; it records the
//     log end offset and the active segment's base and size.
//
// # Rules followed
//
// Append validates a produced batch as Kafka 4 does for Produce v3+ (one batch,
// magic 2, CRC-32C, base offset 0, record count and offset deltas, timestamps
// within message.timestamp.before/after.max.ms, max.message.bytes), decompressing
// compressed batches (bounded) to check their records; on a compacted topic every
// record needs a key. Control batches come only from AppendTxnMarker (txn.go).
// Idempotent producers get Kafka's sequence/epoch checks and duplicate
// detection over their last 5 batches; a producer idle for
// producer.id.expiration.ms (and with no open transaction) is forgotten when
// retention runs.
//
// Transactions follow Kafka's ProducerStateManager: a transactional batch
// starts (or continues) its producer's transaction, and a non-transactional
// one from a producer in a transaction is INVALID_TXN_STATE; AppendTxnMarker
// writes a coordinator's commit or abort marker (its producer epoch may bump
// the producer's, an older one is INVALID_PRODUCER_EPOCH; an older
// coordinator epoch is TRANSACTION_COORDINATOR_FENCED) and ends it. The last
// stable offset is the first offset of the earliest transaction still open
// (or whose marker the high watermark has not passed), else the high
// watermark; ReadCommitted reads below it and returns the aborted
// transactions overlapping what it read, from each segment's .txnindex
// (txnindex.go). Producer snapshots carry open transactions, so the LSO
// comes back after a restart without reading the log; a transaction whose
// marker a crash lost stays open, holding the LSO, until its coordinator
// aborts it. The cleaner cleans only below the LSO, drops the records of
// aborted transactions (and does not let them hide older committed values),
// and keeps a marker while its transaction has batches in the log; once it
// has none the marker gets a delete horizon and is dropped, with its
// aborted-transaction index entry, delete.retention.ms later, as Kafka's
// cleaner does. compression.type
// other than producer recompresses a batch whose codec differs (at the topic's
// compression.<codec>.level), keeping its records, offsets and producer fields.
//
// Zero-copy reads (filerange.go): ReadRange is Read or ReadCommitted for a
// sender that can send from files; a read of at least FileRangeMin (16 KiB)
// comes back as a FileRange, where its whole batches lie in the segment
// file, found from the offset index and a few batch headers without
// reading the records. FileRange.Pin, at send time, dups the segment's
// descriptor under fmu for an instant, so the send needs no lock and the
// bytes stay readable if retention, the cleaner or the file cache closes
// the segment's own descriptor meanwhile.
//
// The high watermark is kept apart from the log end offset. On a single
// replica (the default) every append moves it to the log end, as a partition
// whose ISR is its leader alone commits what it writes; after SetReplicated
// only the owner moves it (SetHighWatermark, clamped to [log start, log end]).
// Read returns nothing at or past it, ReadUpTo nothing at or past an explicit
// bound (a follower's fetch: the log end; later, the last stable offset), and
// retention and the cleaner leave uncommitted offsets alone. AppendAsFollower
// writes a leader's batches as they are (offsets, epochs, timestamps,
// sequences), refusing an overlap with the log or offsets that go back; a gap
// is accepted, as a compacted leader's log has them.
//
// Segments roll on segment.bytes, segment.ms (on a compacted log, at most
// max.compaction.lag.ms) measured from the first batch's timestamp, a full index,
// or relative-offset overflow. With cleanup.policy delete, retention deletes whole
// oldest segments by retention.ms (largest timestamp) and retention.bytes; the log
// always keeps an active segment, rolling a fresh one before deleting the last.
// With compact, the cleaner (cleaner.go; Manager.RunCleaner, started by
// RunRetention) rewrites closed segments keeping the latest record per key, as
// Kafka's log cleaner does; a compact-only log never loses segments to retention.
//
// Differences from Kafka, on purpose: the cleaner's key map holds the keys
// themselves, not MD5 hashes, bounded by key count (maxCleanerMapKeys) rather
// than bytes; segments are grouped for cleaning by size and offset range, not by
// index file size; a cleaned batch keeps its first timestamp (and record
// timestamp deltas) unless a delete horizon is set, where Kafka's rebuilt batch
// restarts from the first kept record's timestamp; an LZ4 level above 9 is
// compressed at 9 (pierrec/lz4's highest). Snapshots record up to 5 batches per
// producer, where Kafka's record one, so duplicate detection is the same after a
// restart as before it.
//
// Durability follows Kafka: writes are not fsynced (the page cache holds
// acknowledged data); segments are synced when rolled and on Close, and a log
// is flushed after the append that brings its unflushed messages to
// flush.messages, or by the Manager's periodic check once flush.ms passed
// (both off by default, as in Kafka). Small files (partition.metadata,
// producer snapshots, the cleaner checkpoint) are replaced atomically
// (replaceFile: temporary file, fsync, rename, fsync of the directory). Open recovers
// from a crash by finishing (a .log.swap exists) or undoing an interrupted cleaner
// swap, then re-checking segments batch by batch (CRC included for the last unless
// the shutdown was clean), truncating a torn or corrupt tail (and any later
// segment), rebuilding damaged indexes (they are caches of the .log). Segments
// below the newest producer snapshot were sealed before it was written, so, like
// Kafka's segments below its recovery point, they are not read: Open takes their
// largest timestamp from the last time index entry and sanity-checks the last
// entry of each index file (a segment failing the checks is scanned), and their
// indexes are loaded when first used; producer state is the snapshot plus the
// batches after it, or without a usable snapshot is rebuilt from every batch
// header. After a clean Close whose marker, active segment size and snapshot
// still agree, the active segment is loaded from its index files, so reopening
// reads no .log at all.
//
// # Many partitions
//
// File descriptors are bounded by a process-wide cap, not by the number of
// segments (files.go): a segment's .log is opened on first read or write and
// closed again, least recently used first, once more than half of
// RLIMIT_NOFILE are open; index files are only opened to be read or written
// whole. The heap held by sealed segments' indexes, which Kafka mmaps, is
// bounded the same way, by a process-wide budget of 128 MiB.
// Manager.NeedsRecovery and Manager.Defer let the broker open at startup only
// the logs a crash left unrecovered and open the others on first use (or at
// the first retention check), so a cold start does not touch every partition.
// Manager.Close closes logs concurrently, their fsyncs overlapping.
//
// # Concurrency
//
// One writer at a time per log (appendMu: Append, roll, retention, close). Readers
// take no writer lock: they snapshot the segment list, read only bytes published
// through an atomic log-end pointer, and use ReadAt so many reads proceed in
// parallel with each other and with an append's write. A segment being deleted
// waits for in-flight reads of it; a read that loses that race restarts. Whoever
// uses a segment's file holds its fmu read lock, so the file cache (which only
// try-locks fmu, holding its own mutex) never closes a file in use; likewise
// an index lookup holds imu's read lock, and the index budget only try-locks
// imu. The cleaner reads closed segments without locks and takes appendMu only
// to swap its output in; a round holds the log's cleanMu, which Close takes
// (after asking the round to stop) before appendMu. Lock order: cleanMu,
// appendMu, mu, then a segment's fmu and imu, then the two caches' mutexes,
// under which nothing is waited for.
package storage
