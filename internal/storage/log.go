package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kbroker/internal/record"
)

// cleanShutdownFile is written by Close after everything was synced; when Open finds
// it, the last segment's CRCs need not be re-verified (Kafka keeps the same marker,
// .kafka_cleanshutdown, per log directory), and if the files are still as Close
// left them (cleanShutdown) no segment is read at all.
const cleanShutdownFile = ".kbroker_cleanshutdown"

// cleanShutdown is what Close records in the marker: where the log ended. Open
// loads the active segment from its index files, like a sealed one, when the
// active segment and the newest producer snapshot still match it; a marker
// without it (written by an older kbroker) only spares the CRC checks.
type cleanShutdown struct {
	end        int64 // log end offset
	activeBase int64
	activeSize int64 // bytes of the active .log
}

func (c cleanShutdown) encode() []byte {
	return fmt.Appendf(nil, "version: 1\nlog_end_offset: %d\nactive_segment: %d\nactive_segment_bytes: %d\n",
		c.end, c.activeBase, c.activeSize)
}

// takeCleanShutdown removes the marker, so that a crash from here on is
// recovered from, and returns what it recorded (nil if nothing usable). clean
// reports that it was there.
func takeCleanShutdown(dir string) (c *cleanShutdown, clean bool) {
	p := filepath.Join(dir, cleanShutdownFile)
	b, _ := os.ReadFile(p)
	if os.Remove(p) != nil {
		return nil, false
	}
	fields := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); ok && err == nil {
			fields[strings.TrimSpace(k)] = n
		}
	}
	if fields["version"] != 1 || len(fields) != 4 {
		return nil, true
	}
	return &cleanShutdown{end: fields["log_end_offset"], activeBase: fields["active_segment"],
		activeSize: fields["active_segment_bytes"]}, true
}

// Log is one partition's log: a sequence of segments, the last one active.
type Log struct {
	// The offsets a fetch of an idle partition reads (nothingAt), side by
	// side at the top of the struct so that such a fetch costs one cache
	// line of the log rather than one per field: a consumer of thousands
	// of partitions reads this of each at every fetch, and between two
	// fetches the lines are gone from the cache.
	//
	// endOffset is end's offset, stored after end (publishEnd), so a reader
	// that sees it also sees the end it came from.
	endOffset atomic.Int64
	logStart  atomic.Int64
	// hw is the high watermark: the offset below which records are committed
	// and consumers may read (Read). It never passes the log end offset. Until
	// SetReplicated(true) every append moves it to the log end offset (a
	// single replica commits what it writes); after, only its owner moves it
	// (SetHighWatermark). Written under appendMu.
	hw atomic.Int64
	// firstUnstable is the first offset of the earliest transaction not yet
	// stable (math.MaxInt64: none); the last stable offset is the lower of it
	// and the high watermark. Written under appendMu, before the high
	// watermark passes a transaction's first offset.
	firstUnstable atomic.Int64
	// tooBig is the last batch a read found too big for what it had left
	// (and returned nothing): a fetch of many partitions whose budget is
	// nearly spent finds the same batch of most of them at every fetch,
	// and answers them without the segments. Reset where batches may
	// change (truncation, compaction, a new log start).
	tooBig atomic.Pointer[batchAt]
	// closing is set when Close begins (the cleaner stops its round; a read
	// that needs no segment takes the full path, which reports ErrClosed).
	closing atomic.Bool

	dir string

	// appendMu serializes every writer: Append, roll, EnforceRetention, SetConfig,
	// Close. Readers never take it.
	appendMu sync.Mutex
	cfg      Config // guarded by appendMu
	ps       *producerState
	epoch    atomic.Int32  // partition leader epoch stamped into batches
	epochs   *epochCache   // the first offset of each leader epoch (epochs.go)
	creation *creationSync // nil, or this log's small files, unsynced until its first data fsync

	// mu guards the segment list and closed. Writers replace the slice (append or
	// reslice from the front), never modify its elements in place, so a reader may
	// keep using a snapshot after releasing mu.
	mu     sync.RWMutex
	segs   []*segment
	closed bool

	end        atomic.Pointer[logEnd]
	replicated atomic.Bool

	// flushedTo is the log end offset at the last flush (Kafka's recovery
	// point), lastFlush its time in ms (flush.go). Written under appendMu.
	flushedTo atomic.Int64
	lastFlush atomic.Int64

	chMu sync.Mutex
	ch   chan struct{}
	// chTaken says Changed handed out ch since it was made: until then no
	// one can be waiting on it, and an append need not replace it (an
	// allocation and a close per batch, most of them for partitions no
	// fetch is parked on).
	chTaken bool

	sealing    sync.WaitGroup // background syncs of rolled segments
	lastSeal   chan struct{}  // closed when the newest roll's seal finished (guarded by appendMu)
	sealFailed atomic.Bool    // a seal failed: no more snapshots, they would vouch for its index

	// cleanMu is held by a cleaning round (compaction, cleaner.go) for its whole
	// length; closing asks the round to stop. Lock order: cleanMu, appendMu, mu.
	cleanMu     sync.Mutex
	firstDirty  atomic.Int64 // cleaner checkpoint: offsets below it were compacted
	uncleanable atomic.Bool  // cleaning failed on bad data: the cleaner skips the log

	recovery Recovery // what Open did; written only by Open
}

// publishEnd makes e the log's end: the end itself, then its offset, for
// the readers that need only the offset (endOffset). Caller holds appendMu
// (or is Open).
func (l *Log) publishEnd(e *logEnd) {
	l.end.Store(e)
	l.endOffset.Store(e.offset)
}

// logEnd is the log end offset and where it is in the active segment, published
// atomically after each append so readers see offsets and bytes consistently.
type logEnd struct {
	offset int64
	seg    *segment
	pos    int64
}

// AppendResult is what Append tells the Produce handler.
type AppendResult struct {
	BaseOffset, LastOffset int64
	LogAppendTime          int64 // -1 unless LogAppendTime
	LogStartOffset         int64
	Duplicate              bool // idempotent retry of an already-written batch: offsets are the original ones, nothing re-appended
}

// Open opens (creating if missing) the log in dir, recovering after a crash: a
// log cleaner swap cut short is finished or rolled back, the last segment is
// scanned, a torn/corrupt tail (partial batch, bad CRC) is truncated, indexes
// rebuilt if damaged, and the idempotent-producer state is loaded from the newest
// snapshot plus the batches after it (or, without a usable snapshot, rebuilt from
// every batch header).
func Open(dir string, cfg Config) (*Log, error) { return open(dir, cfg, nil) }

// open is Open for a log whose directory the Manager may have just created
// (creation non-nil: its small files are synced before its first records
// are, creation.go).
func open(dir string, cfg Config, creation *creationSync) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	start := time.Now()
	l := &Log{dir: dir, cfg: cfg.normalized(), ps: newProducerState(), ch: make(chan struct{})}
	l.firstUnstable.Store(math.MaxInt64)
	if err := recoverCleanerFiles(dir); err != nil {
		return nil, err
	}
	bases, err := l.listSegments()
	if err != nil {
		return nil, err
	}
	shutdown, clean := takeCleanShutdown(dir)
	l.recovery.Unclean = !clean && len(bases) > 0
	snapOff, ps, ok := loadLatestSnapshot(dir)
	if ok {
		l.ps = ps
	}
	if err := l.loadSegments(bases, clean, shutdown, snapOff); err != nil {
		for _, s := range l.segs {
			s.close()
		}
		return nil, err
	}
	l.loadLogStart()
	l.firstDirty.Store(readCleanerCheckpoint(dir))
	l.epochs = loadEpochs(dir, l.logStart.Load(), l.end.Load().offset)
	l.creation, l.epochs.creation = creation, creation
	l.hw.Store(l.end.Load().offset)
	l.ps.onHighWatermark(l.end.Load().offset)
	l.syncUnstable()
	l.flushedTo.Store(l.end.Load().offset) // recovery left the log as it is on disk
	l.lastFlush.Store(time.Now().UnixMilli())
	l.recovery.Took = time.Since(start)
	return l, nil
}

// listSegments returns the base offsets of the .log files in the directory, after
// removing leftovers: files marked .deleted and index files with no .log.
func (l *Log) listSegments() ([]int64, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	logs := map[string]bool{}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			logs[strings.TrimSuffix(e.Name(), ".log")] = true
		}
	}
	var bases []int64
	for _, e := range ents {
		name := e.Name()
		ext := filepath.Ext(name)
		stem := strings.TrimSuffix(name, ext)
		switch ext {
		case ".deleted":
			os.Remove(filepath.Join(l.dir, name))
		case ".tmp":
			// A snapshot or cleaner checkpoint whose write a crash cut short.
			if strings.HasSuffix(stem, snapshotSuffix) || stem == cleanerCheckpointFile {
				os.Remove(filepath.Join(l.dir, name))
			}
		case ".index", ".timeindex", txnIndexSuffix:
			if !logs[stem] {
				os.Remove(filepath.Join(l.dir, name))
			}
		case ".log":
			b, err := strconv.ParseInt(stem, 10, 64)
			if err != nil || b < 0 || len(stem) != 20 {
				continue
			}
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// loadSegments opens the segments. snapOff is the offset of the producer state
// snapshot already loaded (-1: none). A snapshot is written only after every
// segment below its offset was sealed (final time index entry written, files
// synced), so those segments are taken from their index files without reading
// their batches, as Kafka loads segments below its recovery point: of each, only
// the last entries of its index files are read (peekSealedIndex), its index
// being loaded when first used. The active segment after a clean shutdown that
// left it as it was (shutdown) is loaded from its index files whole
// (loadSealedIndex). The rest, and any segment whose index files fail those
// checks, are scanned, replaying batches at or above snapOff into the producer
// state, with CRCs checked in the last segment unless the shutdown was clean.
func (l *Log) loadSegments(bases []int64, clean bool, shutdown *cleanShutdown, snapOff int64) error {
	prevLast := int64(-1)
	for i, base := range bases {
		s, err := statSegment(l.dir, base)
		if err != nil {
			return err
		}
		last := i == len(bases)-1
		s.interval = l.cfg.IndexIntervalBytes
		l.segs = append(l.segs, s)
		next, sealed := sealedEnd(bases, i, s, snapOff, shutdown)
		damaged := false // index files that fail the checks of a sealed segment
		if sealed && !last {
			sealed = s.peekSealedIndex(next) // its index stays unloaded until first used
			damaged = !sealed
		} else if sealed {
			sealed = s.loadSealedIndex(next) // active again: its index takes appends, in memory only
		}
		if sealed {
			s.lastOffset = next - 1
			prevLast = s.lastOffset
			if last && s.size.Load() > 0 {
				s.rollBaseTs = rollBaseUnknown // segment.ms: read from its first batch when needed
			}
			continue
		}
		end, err := l.recoverSegment(s, prevLast, last, last && !clean, snapOff)
		if err != nil {
			return err
		}
		l.recovery.SegmentsScanned++
		if end < s.size.Load() {
			// Everything from the first bad batch on is dropped, including later
			// segments, as Kafka's recovery does: offsets must stay contiguous.
			l.recovery.BytesTruncated += s.size.Load() - end
			if err := s.truncate(end); err != nil {
				return err
			}
			s.size.Store(end)
			for _, later := range bases[i+1:] {
				p := segmentPath(l.dir, later)
				if st, err := os.Stat(p + ".log"); err == nil {
					l.recovery.BytesTruncated += st.Size()
				}
				for _, ext := range segmentExts {
					os.Remove(p + ext)
				}
			}
			if !last {
				// This segment becomes the active one: rebuild its index in memory.
				s.imu.Lock()
				err := s.rebuildIndexLocked(l.cfg.IndexIntervalBytes)
				s.imu.Unlock()
				if err != nil {
					return err
				}
				s.rollBaseTs = firstBatchTimestamp(s)
			}
			break
		}
		if damaged {
			if err := s.repairIndexFiles(); err != nil {
				return err
			}
		}
		prevLast = s.lastOffset
	}
	if len(l.segs) == 0 {
		s, err := createSegment(l.dir, 0, l.cfg.IndexIntervalBytes)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	} else {
		active := l.segs[len(l.segs)-1]
		active.bytesSinceIndex = bytesSinceLastEntry(active)
	}
	active := l.segs[len(l.segs)-1]
	next := active.lastOffset + 1
	if active.size.Load() == 0 {
		next = active.base
	}
	l.publishEnd(&logEnd{offset: next, seg: active, pos: active.size.Load()})
	l.logStart.Store(l.segs[0].base)
	if snapOff > next {
		// Recovery cut the log below the snapshot: the state it holds is ahead of
		// the log. Rebuild from the batches, as without a snapshot.
		removeSnapshotsAbove(l.dir, next)
		l.ps = newProducerState()
		if err := l.replayProducers(); err != nil {
			return err
		}
	}
	l.ps.truncateHead(l.logStart.Load())
	return nil
}

// sealedEnd reports whether segment i of bases (s) may be taken from its index
// files without being read, and if so the offset after its last batch: a
// segment below the producer snapshot, or the last one if a clean shutdown left
// it, and that snapshot, as they are.
func sealedEnd(bases []int64, i int, s *segment, snapOff int64, shutdown *cleanShutdown) (int64, bool) {
	if i < len(bases)-1 {
		return bases[i+1], snapOff >= 0 && bases[i+1] <= snapOff
	}
	size := s.size.Load()
	return snapOff, shutdown != nil && shutdown.end == snapOff && shutdown.activeBase == s.base &&
		shutdown.activeSize == size && snapOff >= s.base && (snapOff == s.base) == (size == 0)
}

// replayProducers rebuilds the producer state from every batch header, and
// with it every segment's aborted-transaction index.
func (l *Log) replayProducers() error {
	for _, s := range l.segs {
		if _, err := s.resetTxnsFrom(-1); err != nil {
			return err
		}
		size := s.size.Load()
		for pos := int64(0); pos < size; {
			h, err := s.readHeader(pos, size)
			if err != nil {
				return err
			}
			if err := l.replayBatch(s, &h, pos, nil); err != nil {
				return err
			}
			pos += h.Size
		}
		if err := s.syncTxnIndex(s != l.segs[len(l.segs)-1]); err != nil {
			return err
		}
	}
	return nil
}

// replayBatch applies a stored batch of segment s at pos to the producer
// state (raw: the whole batch if the caller has it), reading a control
// batch whole for its marker, and indexes the transaction an abort marker
// completes.
func (l *Log) replayBatch(s *segment, h *record.BatchHeader, pos int64, raw []byte) error {
	if h.IsControl() && raw == nil && h.ProducerID >= 0 {
		raw = make([]byte, h.Size)
		if err := s.readAt(raw, pos); err != nil {
			return err
		}
	}
	t, done, err := l.ps.apply(h, raw)
	if err != nil || !done {
		return err
	}
	return l.indexCompleted(s, t)
}

// indexCompleted adds an aborted transaction to the transaction index of
// the segment holding its marker, with the last stable offset as of the
// marker (UnifiedLog's segment.updateTxnIndex).
func (l *Log) indexCompleted(s *segment, t completedTxn) error {
	if !t.aborted {
		return nil
	}
	lso := l.ps.nextIncompleteTxn(t.producerID)
	if lso < 0 {
		lso = t.lastOffset + 1
	}
	return s.addAbortedTxn(AbortedTxn{ProducerID: t.producerID, FirstOffset: t.firstOffset, LastOffset: t.lastOffset, LastStableOffset: lso})
}

// syncUnstable publishes the first unstable offset after the producer
// state's transactions changed. Caller holds appendMu (or is Open).
func (l *Log) syncUnstable() {
	if l.ps.txnsChanged {
		l.ps.txnsChanged = false
		l.firstUnstable.Store(l.ps.firstUnstableOffset())
	}
}

// recoverSegment scans a segment's batch headers (and CRCs when verify), feeding the
// producer state with the batches at or above feedFrom, and returns the end of its
// valid prefix. The active segment's index is rebuilt in memory during the scan.
func (l *Log) recoverSegment(s *segment, prevLast int64, active, verify bool, feedFrom int64) (int64, error) {
	size := s.size.Load()
	// The aborted transactions of markers replayed here are indexed again.
	if _, err := s.resetTxnsFrom(feedFrom); err != nil {
		return 0, err
	}
	if active {
		s.imu.Lock()
		defer s.imu.Unlock()
		s.loaded = true
	}
	var since int64
	var buf []byte
	pos := int64(0)
	for pos < size {
		if size-pos < record.BatchHeaderSize {
			break
		}
		var hb [record.BatchHeaderSize]byte
		if err := s.readAt(hb[:], pos); err != nil {
			return 0, err
		}
		h, ok := record.ParseHeader(hb[:])
		if !ok || pos+h.Size > size || h.BaseOffset <= prevLast || h.BaseOffset < s.base ||
			h.LastOffset-s.base > math.MaxInt32 {
			break
		}
		var b []byte
		if verify || (h.IsControl() && h.BaseOffset >= feedFrom) {
			if int64(cap(buf)) < h.Size {
				buf = make([]byte, h.Size)
			}
			b = buf[:h.Size]
			if err := s.readAt(b, pos); err != nil {
				return 0, err
			}
			if !record.ValidCRC(b) {
				break
			}
		}
		if active {
			s.indexBatch(&h, pos, &since, l.cfg.IndexIntervalBytes)
		} else if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxTsOff = h.MaxTimestamp, h.LastOffset
		}
		if pos == 0 {
			s.rollBaseTs = h.MaxTimestamp
		}
		if h.BaseOffset >= feedFrom {
			if err := l.replayBatch(s, &h, pos, b); errors.Is(err, record.ErrCorruptMessage) {
				break // a marker that does not parse: a corrupt tail
			} else if err != nil {
				return 0, err
			}
		}
		s.lastOffset = h.LastOffset
		prevLast = h.LastOffset
		pos += h.Size
	}
	// A sealed segment's rebuilt index is written now; the active one's
	// when it is sealed.
	if err := s.syncTxnIndex(!active); err != nil {
		return 0, err
	}
	return pos, nil
}

func firstBatchTimestamp(s *segment) int64 {
	if s.size.Load() == 0 {
		return -1
	}
	h, err := s.readHeader(0, s.size.Load())
	if err != nil {
		return -1
	}
	return h.MaxTimestamp
}

// bytesSinceLastEntry recomputes, for a reopened active segment, how many bytes
// were appended after its last offset index entry. The active segment's index
// is loaded and never unloaded (loadSegments does not give it to the budget).
func bytesSinceLastEntry(s *segment) int64 {
	if len(s.off) == 0 {
		return s.size.Load()
	}
	return s.size.Load() - int64(s.off[len(s.off)-1].pos)
}

// SetConfig applies a topic config change; it takes effect from the next append or
// retention run, as in Kafka.
func (l *Log) SetConfig(cfg Config) {
	l.appendMu.Lock()
	l.cfg = cfg.normalized()
	l.appendMu.Unlock()
}

// SetLeaderEpoch sets the partition leader epoch stamped into appended batches
// (Kafka writes the leader epoch into each batch; clients use it to detect
// truncation). It defaults to 0.
func (l *Log) SetLeaderEpoch(epoch int32) { l.epoch.Store(epoch) }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Append validates one produced v2 record batch (the raw bytes from the Produce
// request, which the caller no longer touches), assigns offsets by writing base
// offset into it, applies LogAppendTime if configured (rewriting max
// timestamp/attributes and CRC as Kafka does), checks idempotent-producer sequence,
// and writes it. now is the broker clock.
func (l *Log) Append(batch []byte, now time.Time) (AppendResult, error) {
	return l.append(batch, now, false, NoGuard)
}

func (l *Log) appendGuarded(batch []byte, now time.Time, guard VerificationGuard) (AppendResult, error) {
	return l.append(batch, now, false, guard)
}

// AppendAsCoordinator appends a batch a coordinator of this broker built,
// as Kafka's UnifiedLog.appendAsLeader with AppendOrigin.COORDINATOR: it is
// validated as a produced batch, but a producer's batch needs no sequence
// (the group coordinator writes a transaction's offsets, TxnOffsetCommit,
// with the producer's id and epoch and no sequence) and none is checked;
// the producer epoch and the transactional state are, so such a batch
// starts or continues the producer's transaction in this partition, which
// its marker (AppendTxnMarker) ends.
func (l *Log) AppendAsCoordinator(batch []byte, now time.Time) (AppendResult, error) {
	return l.append(batch, now, true, NoGuard)
}

func (l *Log) append(batch []byte, now time.Time, coordinator bool, guard VerificationGuard) (AppendResult, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	cfg := &l.cfg
	rules := cfg.produceRules(now)
	rules.Coordinator = coordinator
	bt, err := record.ValidateProduced(batch, &rules)
	if err != nil {
		return AppendResult{}, err
	}
	h := &bt.Header
	next := l.end.Load().offset
	hasProducer := h.ProducerID >= 0
	if hasProducer && coordinator && h.BaseSequence < 0 {
		if err := l.ps.checkCoordinatorBatch(h.ProducerID, h.ProducerEpoch, next, h.IsTransactional()); err != nil {
			return AppendResult{}, err
		}
	} else if hasProducer {
		if dup, ok := l.ps.findDuplicate(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastSequence()); ok {
			res := AppendResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1,
				LogStartOffset: l.logStart.Load(), Duplicate: true}
			if cfg.TimestampType == LogAppendTime {
				res.LogAppendTime = dup.maxTimestamp
			}
			return res, nil
		}
		if err := l.ps.check(h.ProducerID, h.ProducerEpoch, h.BaseSequence, next, h.IsTransactional()); err != nil {
			return AppendResult{}, err
		}
		if err := l.ps.checkGuard(h.ProducerID, h.ProducerEpoch, h.IsTransactional(), guard); err != nil {
			return AppendResult{}, err
		}
	}
	if target := cfg.CompressionType.codec(); target >= 0 && target != h.Codec() {
		if err := recompressChecked(&bt, cfg, target); err != nil {
			return AppendResult{}, err
		}
	}
	nowMs := now.UnixMilli()
	incomingTs := bt.MaxRecordTimestamp
	if cfg.TimestampType == LogAppendTime {
		incomingTs = nowMs
	}
	lastOffset := next + (h.LastOffset - h.BaseOffset)
	seg, err := l.maybeRoll(int64(len(bt.Raw)), incomingTs, lastOffset, now)
	if err != nil {
		return AppendResult{}, err
	}
	maxTs := bt.Stamp(next, l.epoch.Load(), cfg.TimestampType == LogAppendTime, nowMs)
	if err := l.write(seg, &bt.Header, bt.Raw); err != nil {
		return AppendResult{}, err
	}
	if hasProducer {
		l.ps.update(h.ProducerID, h.ProducerEpoch, batchMeta{
			firstSeq: h.BaseSequence, lastSeq: lastSequence(h),
			firstOffset: next, lastOffset: lastOffset, maxTimestamp: maxTs,
		}, h.IsTransactional())
		l.syncUnstable() // before the high watermark passes a new transaction's start
	}
	l.publish(seg, lastOffset)
	res := AppendResult{BaseOffset: next, LastOffset: lastOffset, LogAppendTime: -1, LogStartOffset: l.logStart.Load()}
	if cfg.TimestampType == LogAppendTime {
		res.LogAppendTime = nowMs
	}
	// The batch is in the log whatever the flush does; a failed flush is a
	// storage error for the producer, as in Kafka, whose retry is a duplicate.
	return res, l.maybeFlushLocked(now)
}

// lastSequence is the batch's last sequence, -1 for a batch without one (a
// coordinator's), as Kafka's DefaultRecordBatch.lastSequence.
func lastSequence(h *record.BatchHeader) int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return h.LastSequence()
}

// write puts a stamped batch (h describes it) at the end of the active
// segment seg and indexes it. Caller holds appendMu.
func (l *Log) write(seg *segment, h *record.BatchHeader, batch []byte) error {
	pos := seg.size.Load()
	if err := seg.writeAt(batch, pos); err != nil {
		// size was not advanced: the partial bytes are overwritten by the next
		// append, or truncated by recovery.
		return err
	}
	seg.size.Store(pos + int64(len(batch)))
	// A checkpoint that fails to write costs only precision after a
	// restart (the epoch is kept in memory): the batch is written.
	_ = l.epochs.assign(batch, h.BaseOffset)
	seg.imu.Lock()
	hdr := record.BatchHeader{BaseOffset: h.BaseOffset, Size: int64(len(batch)), LastOffset: h.LastOffset, MaxTimestamp: h.MaxTimestamp}
	seg.indexBatch(&hdr, pos, &seg.bytesSinceIndex, l.cfg.IndexIntervalBytes)
	seg.lastOffset = h.LastOffset
	seg.imu.Unlock()
	if pos == 0 {
		seg.rollBaseTs = h.MaxTimestamp
	}
	return nil
}

// publish makes the batches written up to lastOffset visible to readers and
// wakes long polls; unless the log is replicated, they are committed at once
// (the high watermark moves before the wake-up, so a woken consumer finds
// them). Caller holds appendMu.
func (l *Log) publish(seg *segment, lastOffset int64) {
	l.publishEnd(&logEnd{offset: lastOffset + 1, seg: seg, pos: seg.size.Load()})
	if !l.replicated.Load() {
		l.hw.Store(lastOffset + 1)
		l.ps.onHighWatermark(lastOffset + 1)
		l.syncUnstable()
	}
	l.notify()
}

// recompressChecked converts the batch to the topic's compression.type and, as
// UnifiedLog.append does when validation changed a batch's size, checks the new
// size against max.message.bytes and segment.bytes again.
func recompressChecked(bt *record.Batch, cfg *Config, codec record.Codec) error {
	if err := bt.Recompress(codec, cfg.levelFor(codec)); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if n := int64(len(bt.Raw)); n > int64(cfg.MaxMessageBytes) {
		return fmt.Errorf("%w: record batch of %d bytes after recompression exceeds max.message.bytes %d",
			record.ErrMessageTooLarge, n, cfg.MaxMessageBytes)
	} else if n > cfg.SegmentBytes {
		return fmt.Errorf("%w: record batch of %d bytes after recompression exceeds segment.bytes %d",
			record.ErrRecordListTooLarge, n, cfg.SegmentBytes)
	}
	return nil
}

// maybeRoll starts a new segment when Kafka would (LogSegment.shouldRoll): the
// batch would overflow segment.bytes, segment.ms passed since the segment's first
// batch timestamp (measured with the incoming batch's timestamp, as Kafka does), an
// index is full, or the offsets would not fit an index's int32 relative offset.
func (l *Log) maybeRoll(size, incomingTs, lastOffset int64, now time.Time) (*segment, error) {
	seg := l.active()
	cur := seg.size.Load()
	if cur == 0 {
		return seg, nil
	}
	seg.imu.RLock()
	full := seg.offsetIndexFull(l.cfg.SegmentIndexBytes)
	seg.imu.RUnlock()
	if cur > l.cfg.SegmentBytes-size || seg.timeWaited(now.UnixMilli(), incomingTs) > l.cfg.rollMs() ||
		full || lastOffset-seg.base > math.MaxInt32 {
		return l.roll()
	}
	return seg, nil
}

func (s *segment) timeWaited(nowMs, ts int64) int64 {
	if s.rollBaseTs == rollBaseUnknown {
		s.rollBaseTs = firstBatchTimestamp(s)
	}
	if s.rollBaseTs >= 0 {
		return ts - s.rollBaseTs
	}
	return nowMs - s.created.UnixMilli()
}

// roll seals the active segment and creates a new one at the log end offset.
// The old segment's fsync runs in the background so appends are not held up.
func (l *Log) roll() (*segment, error) {
	old := l.active()
	end := l.end.Load()
	s, err := createSegment(l.dir, end.offset, l.cfg.IndexIntervalBytes)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.segs = append(l.segs[:len(l.segs):len(l.segs)], s)
	l.mu.Unlock()
	l.publishEnd(&logEnd{offset: end.offset, seg: s, pos: 0})
	// The producer snapshot at the new base is written once this and every
	// earlier rolled segment is sealed: Open trusts the index files of segments
	// below a snapshot's offset.
	snap := l.ps.encodeSnapshot()
	prev, done := l.lastSeal, make(chan struct{})
	l.lastSeal = done
	l.sealing.Add(1)
	go func() {
		defer l.sealing.Done()
		defer close(done)
		if !l.sealSegment(old) {
			return
		}
		if prev != nil {
			<-prev
		}
		if l.sealFailed.Load() {
			return
		}
		_ = writeSnapshot(l.dir, end.offset, snap) // an optimisation: Open falls back to scanning
	}()
	return s, nil
}

// sealSegment seals a rolled segment unless it was closed meanwhile (the
// segment deleted or replaced by the cleaner). It reports success.
func (l *Log) sealSegment(s *segment) bool {
	err := l.creation.sync()
	if err == nil {
		err = s.seal()
	}
	if err != nil && !errors.Is(err, errSegmentGone) {
		l.sealFailed.Store(true)
	}
	return err == nil
}

func (l *Log) active() *segment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segs[len(l.segs)-1]
}

// Closing reports whether the log is closed or being closed: whoever keeps
// it (a fetch session caching a partition's log) must look it up again.
func (l *Log) Closing() bool { return l.closing.Load() }

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

func (l *Log) notify() {
	l.chMu.Lock()
	if l.chTaken {
		close(l.ch)
		l.ch, l.chTaken = make(chan struct{}), false
	}
	l.chMu.Unlock()
}

// Changed returns a channel closed by the next successful append (for Fetch long
// polling; one channel shared by all waiters, replaced on each append). It is also
// closed when the log is closed, so no waiter outlives the log.
func (l *Log) Changed() <-chan struct{} {
	l.chMu.Lock()
	defer l.chMu.Unlock()
	l.chTaken = true
	return l.ch
}

// HighWatermark is the offset up to which records are committed: what Read
// returns at most, and what Fetch and ListOffsets report. On a log that is not
// replicated (the default) it is the log end offset.
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// LastStableOffset is the end of what read_committed consumers may read:
// the first offset of the earliest transaction still open (or whose marker
// the high watermark has not passed yet), else the high watermark (Kafka's
// UnifiedLog.lastStableOffset). A transaction whose first segment
// retention deleted counts from the log start, as Kafka clamps its first
// unstable offset, so the LSO never falls below what can be fetched.
func (l *Log) LastStableOffset() int64 {
	return min(max(l.firstUnstable.Load(), l.logStart.Load()), l.hw.Load())
}

// Producers describes the producers with state in the log (DescribeProducers).
func (l *Log) Producers() ([]ProducerInfo, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return nil, ErrClosed
	}
	return l.ps.describe(), nil
}

// LogEndOffset is the next offset to be written.
func (l *Log) LogEndOffset() int64 { return l.endOffset.Load() }

// SetReplicated hands the high watermark to the log's owner (on: a partition
// with followers, whose leader commits an offset once the in-sync replicas
// have it) or back to the appends (off: a single replica, where every append
// commits; the high watermark jumps to the log end offset). Appends and
// reads behave the same either way; only who moves the high watermark
// changes.
func (l *Log) SetReplicated(on bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.replicated.Store(on)
	if !on && !l.isClosed() {
		l.setHighWatermarkLocked(l.end.Load().offset)
	}
}

// Replicated reports whether the log's owner moves its high watermark
// (SetReplicated).
func (l *Log) Replicated() bool { return l.replicated.Load() }

// SetHighWatermark moves the high watermark to offset, clamped to [log start
// offset, log end offset] as Kafka's UnifiedLog.updateHighWatermark does, and
// returns the value set. It may move it back (a new leader's high watermark,
// a truncated follower). Waiters on Changed are woken when it advances. On a
// log that is not replicated the next append moves it to the log end again.
func (l *Log) SetHighWatermark(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	return l.setHighWatermarkLocked(offset), nil
}

func (l *Log) setHighWatermarkLocked(offset int64) int64 {
	offset = min(max(offset, l.logStart.Load()), l.end.Load().offset)
	old := l.hw.Swap(offset)
	l.ps.onHighWatermark(offset)
	l.syncUnstable()
	if offset > old {
		l.notify()
	}
	return offset
}

// LogStartOffset is the first offset still in the log.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// Size is the total size of the log's segments in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size.Load()
	}
	return n
}

// Close syncs and closes the log, writing a producer state snapshot at the log end
// offset; later calls return ErrClosed. A cleaning round in progress is stopped
// (and its unfinished output discarded) first.
func (l *Log) Close() error {
	l.closing.Store(true)
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	segs := l.segs
	l.mu.Unlock()
	l.sealing.Wait()
	active := segs[len(segs)-1]
	end := l.end.Load().offset
	err := l.creation.sync()
	if err == nil {
		err = active.seal()
	}
	if err == nil && !l.sealFailed.Load() {
		err = writeSnapshot(l.dir, end, l.ps.encodeSnapshot())
	}
	for _, s := range segs {
		if e := s.close(); e != nil && err == nil {
			err = e
		}
	}
	if err == nil {
		// Not synced: a marker lost to a power failure only costs a scan.
		shutdown := cleanShutdown{end: end, activeBase: active.base, activeSize: active.size.Load()}
		_ = os.WriteFile(filepath.Join(l.dir, cleanShutdownFile), shutdown.encode(), 0o644)
	} else {
		err = fmt.Errorf("%w: closing log %s: %v", ErrStorage, l.dir, err)
	}
	l.chMu.Lock()
	close(l.ch)
	l.ch = closedChan
	l.chMu.Unlock()
	return err
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	// Removing the directory is what the caller wants; an I/O error while closing
	// does not change that.
	_ = l.Close()
	if err := os.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}
