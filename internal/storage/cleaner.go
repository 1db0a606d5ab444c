package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"kbroker/internal/record"
)

// Log compaction (cleanup.policy=compact), as Kafka's LogCleaner, LogCleanerManager
// and Cleaner do it:
//
//   - The log splits at the cleaner checkpoint ("first dirty offset") into a
//     clean head, already compacted, and a dirty tail. The cleanable part of the
//     tail ends at the first uncleanable offset: the active segment's base, or
//     the first segment with a record younger than min.compaction.lag.ms.
//   - A log is cleaned when dirty bytes / (clean + cleanable dirty bytes) exceeds
//     min.cleanable.dirty.ratio, or when a dirty segment's first batch is older
//     than max.compaction.lag.ms. The cleaner takes the filthiest log first.
//   - A round maps every key of the cleanable dirty range to its latest offset
//     (bounded: a round may cover only part of the range), then rewrites every
//     segment below the mapped end, in groups that fit one segment, keeping the
//     latest record per key. Tombstones are kept until delete.retention.ms after
//     the first round that saw them (their batch's delete horizon).
//   - Transactions (cleaner_batch.go): only offsets below the last stable
//     offset are cleaned; records of aborted transactions are removed and not
//     mapped; a marker whose transaction has no batch left gets a delete
//     horizon, then goes.
//   - Each group is written to "<base>.log.cleaned" (and indexes), synced,
//     renamed to ".swap", swapped in for its source segments under the append
//     lock, and renamed into place. Open finishes a swap whose .log.swap exists
//     and rolls back otherwise.

// cleanerCheckpointFile holds a partition's first dirty offset. Kafka keeps one
// file per log directory listing every partition; here each partition directory
// has its own, holding "0" (version), "1" (entries) and the offset.
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// maxCleanerMapKeys bounds the keys one round deduplicates, as Kafka's
// log.cleaner.dedupe.buffer.size (128 MiB) bounds its offset map; a log with
// more distinct dirty keys is compacted over several rounds.
var maxCleanerMapKeys = 4 << 20

// cleanerReadBuffer is the read-ahead used when scanning a segment.
const cleanerReadBuffer = 256 << 10

var errCleaningAborted = errors.New("log cleaning aborted")

// CleanResult describes one cleaning round.
type CleanResult struct {
	FirstDirtyOffset int64 // start of the dirty range deduplicated
	EndOffset        int64 // offsets below it are clean now (the new checkpoint)
	SegmentsCleaned  int   // source segments rewritten
	BytesRead        int64
	BytesWritten     int64
	RecordsRead      int64
	RecordsRemoved   int64
}

// cleanState is a log's cleanable range at one moment (Kafka's LogToClean).
type cleanState struct {
	cfg                          Config
	all                          []*segment // the log's segments
	segs                         []*segment // all but the active one
	firstDirty, firstUncleanable int64
	cleanBytes, dirtyBytes       int64
	needNow                      bool // max.compaction.lag.ms passed
}

func (c *cleanState) ratio() float64 {
	if total := c.cleanBytes + c.dirtyBytes; total > 0 {
		return float64(c.dirtyBytes) / float64(total)
	}
	return 0
}

// due is LogCleanerManager.grabFilthiestCompactedLog's test.
func (c *cleanState) due() bool {
	return (c.needNow && c.dirtyBytes > 0) || c.ratio() > c.cfg.MinCleanableDirtyRatio
}

// state computes the cleanable range (LogCleanerManager.cleanableOffsets).
// ok=false if the log is closed, not compacted, or marked uncleanable.
func (l *Log) state(nowMs int64) (cleanState, bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() || !l.cfg.CleanupPolicy.Compact || l.uncleanable.Load() {
		return cleanState{}, false
	}
	l.mu.RLock()
	all := l.segs
	l.mu.RUnlock()
	c := cleanState{cfg: l.cfg, all: all, segs: all[:len(all)-1]}
	logStart, end := l.logStart.Load(), l.end.Load().offset
	c.firstDirty = l.firstDirty.Load()
	if c.firstDirty < logStart || c.firstDirty > end {
		c.firstDirty = logStart
	}
	// Offsets at or past the last stable offset (uncommitted, or in a
	// transaction still open) are not cleaned, as Kafka bounds cleaning by
	// the first unstable offset and the high watermark: an open
	// transaction's outcome decides which of its records survive.
	unclean := min(end, all[len(all)-1].base, l.LastStableOffset())
	if lag := c.cfg.MinCompactionLagMs; lag > 0 {
		for i, s := range c.segs {
			if nextBase(all, i) > c.firstDirty && s.largestTimestamp() > nowMs-lag {
				unclean = min(unclean, s.base)
				break
			}
		}
	}
	c.firstUncleanable = max(c.firstDirty, unclean)
	cleanUntil := satSub(nowMs, c.cfg.MaxCompactionLagMs)
	for i, s := range c.segs {
		switch {
		case nextBase(all, i) <= c.firstDirty:
			c.cleanBytes += s.size.Load()
		case s.base < c.firstUncleanable:
			c.dirtyBytes += s.size.Load()
		}
		// LogCleanerManager.maxCompactionDelay: the first batch of each dirty segment.
		if nextBase(all, i) > c.firstDirty && !c.needNow && cleanUntil > 0 {
			if ts := firstBatchTimestamp(s); ts > 0 && ts < cleanUntil {
				c.needNow = true
			}
		}
	}
	return c, true
}

func nextBase(segs []*segment, i int) int64 {
	if i+1 < len(segs) {
		return segs[i+1].base
	}
	return math.MaxInt64
}

// Clean runs one compaction round now, whatever the dirty ratio, if the log's
// cleanup.policy includes compact and anything below the first uncleanable offset
// is dirty (Kafka's Cleaner.clean). The cleaner (Manager.RunCleaner) calls it for
// logs that are due.
func (l *Log) Clean(now time.Time) (CleanResult, error) {
	return l.clean(now, true)
}

func (l *Log) clean(now time.Time, force bool) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if l.closing.Load() {
		return CleanResult{}, ErrClosed
	}
	nowMs := now.UnixMilli()
	c, ok := l.state(nowMs)
	res := CleanResult{FirstDirtyOffset: c.firstDirty, EndOffset: c.firstDirty}
	if !ok || c.firstUncleanable <= c.firstDirty || (!force && !c.due()) {
		return res, nil
	}
	err := l.cleanRange(&c, nowMs, &res)
	switch {
	case errors.Is(err, errCleaningAborted), errors.Is(err, errSegmentGone):
		// Retention, a swap race or Close got in the way; the next round retries.
		res.EndOffset = res.FirstDirtyOffset
		if l.closing.Load() {
			return res, ErrClosed
		}
		return res, nil
	case errors.Is(err, record.ErrCorruptMessage):
		l.uncleanable.Store(true) // Kafka marks the partition uncleanable until restart
	}
	return res, err
}

func (l *Log) cleanRange(c *cleanState, nowMs int64, res *CleanResult) error {
	f := &batchFilter{
		keys:        map[string]int64{},
		nowMs:       nowMs,
		deleteRetMs: c.cfg.DeleteRetentionMs,
		upperBound:  c.firstUncleanable,
		cfg:         &c.cfg,
	}
	aborted, err := collectAbortedTxns(c.all, 0, -1, math.MaxInt64)
	if err != nil {
		return err
	}
	latest, err := l.buildOffsetMap(c, f.keys, newTxnTracker(aborted))
	if err != nil {
		return err
	}
	f.txns = newTxnTracker(aborted)
	if latest < c.firstDirty {
		return nil
	}
	f.latest = latest
	res.EndOffset = latest + 1
	l.appendMu.Lock()
	f.producerLast = l.ps.lastOffsets()
	l.appendMu.Unlock()
	var srcs []*segment
	for _, s := range c.segs {
		if s.base < res.EndOffset {
			srcs = append(srcs, s)
		}
	}
	for _, group := range groupSegments(srcs, c.all, c.cfg.SegmentBytes, c.firstUncleanable) {
		if err := l.cleanGroup(group, f, res); err != nil {
			return err
		}
		res.SegmentsCleaned += len(group)
	}
	res.RecordsRead, res.RecordsRemoved = f.recordsRead, f.recordsRemoved
	l.firstDirty.Store(res.EndOffset)
	return writeCleanerCheckpoint(l.dir, res.EndOffset)
}

// buildOffsetMap maps each key in the dirty range to its latest offset
// (Cleaner.buildOffsetMap) and returns the last offset covered: the end of the
// range, or of the last batch mapped when the map filled up.
// The records of aborted transactions are not mapped (Kafka skips them):
// they are removed, so they must not hide an older committed value.
func (l *Log) buildOffsetMap(c *cleanState, keys map[string]int64, txns *txnTracker) (int64, error) {
	latest := int64(-1)
	for i, s := range c.segs {
		if nextBase(c.all, i) <= c.firstDirty || s.base >= c.firstUncleanable {
			continue
		}
		full := false
		err := l.forEachBatch(s, func(h *record.BatchHeader, raw []byte) error {
			if txns.aborted(h) || h.LastOffset < c.firstDirty {
				return nil
			}
			if len(keys)+int(h.NumRecords) > maxCleanerMapKeys && latest >= c.firstDirty {
				full = true
				return errStopScan
			}
			if err := mapKeys(raw, h, c.firstDirty, keys); err != nil {
				return err
			}
			latest = max(latest, h.LastOffset)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if full {
			return latest, nil
		}
		// Offsets compacted away at the segment's end are covered too.
		latest = max(latest, min(nextBase(c.all, i), c.firstUncleanable)-1)
	}
	return latest, nil
}

var errStopScan = errors.New("stop scan")

func mapKeys(raw []byte, h *record.BatchHeader, from int64, keys map[string]int64) error {
	if h.IsControl() || h.NumRecords == 0 {
		return nil
	}
	records, err := record.Section(raw, h)
	if err != nil {
		return err
	}
	rr := record.NewReader(records, h.NumRecords)
	var rec record.Record
	for rr.Next(&rec) {
		if off := h.BaseOffset + int64(rec.OffsetDelta); rec.Key != nil && off >= from {
			keys[string(rec.Key)] = off
		}
	}
	return corruptRecords(h, rr.Err())
}

// corruptRecords is a Reader's error on a stored batch: it was validated when
// appended, so records that do not parse now are corrupt.
func corruptRecords(h *record.BatchHeader, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("batch at offset %d: %w: %v", h.BaseOffset, record.ErrCorruptMessage, err)
}

// groupSegments splits the segments to clean into runs that fit one segment
// (Cleaner.groupSegmentsBySize): at most segment.bytes of input, and offsets within
// an int32 of the group's base.
func groupSegments(srcs, all []*segment, maxSize, firstUncleanable int64) [][]*segment {
	var groups [][]*segment
	for len(srcs) > 0 {
		group := srcs[:1]
		size := srcs[0].size.Load()
		for len(group) < len(srcs) {
			next := srcs[len(group)]
			// The next segment's last offset is at most the base after it.
			lastOff := firstUncleanable - 1
			if j := indexOf(all, next); j >= 0 && j+1 < len(all) {
				lastOff = all[j+1].base - 1
			}
			if size+next.size.Load() > maxSize || (next.size.Load() > 0 && lastOff-group[0].base > math.MaxInt32) {
				break
			}
			size += next.size.Load()
			group = srcs[:len(group)+1]
		}
		groups = append(groups, group)
		srcs = srcs[len(group):]
	}
	return groups
}

func indexOf(segs []*segment, s *segment) int {
	for i, x := range segs {
		if x == s {
			return i
		}
	}
	return -1
}

// cleanGroup writes the survivors of a group of segments to one cleaned segment
// and swaps it in (Cleaner.cleanSegments).
func (l *Log) cleanGroup(group []*segment, f *batchFilter, res *CleanResult) error {
	out, err := createCleanedSegment(l.dir, group[0].base, l.cfg.IndexIntervalBytes)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			out.discardCleaned()
		}
	}()
	w := bufio.NewWriterSize(out.f, cleanerReadBuffer)
	var since, pos int64
	for _, src := range group {
		err := l.forEachBatch(src, func(h *record.BatchHeader, raw []byte) error {
			res.BytesRead += h.Size
			b, err := f.filter(raw, h)
			if err != nil || b == nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("%w: writing %s.log.cleaned: %v", ErrStorage, out.path, err)
			}
			// The filter may have rebuilt the batch: its own header has its size
			// and max timestamp.
			nh, _ := record.ParseHeader(b)
			out.indexBatch(&nh, pos, &since, out.interval)
			out.lastOffset = h.LastOffset
			pos += nh.Size
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: writing %s.log.cleaned: %v", ErrStorage, out.path, err)
	}
	// The cleaned segment keeps its sources' aborted transactions whose
	// marker it kept: a consumer needs the entry as long as the marker is
	// there, and must not get one without it (it would drop that
	// producer's later batches).
	for _, src := range group {
		list, err := src.txns()
		if err != nil {
			return err
		}
		for _, t := range list {
			if !slices.Contains(f.droppedMarkers, t.LastOffset) {
				out.txnList = append(out.txnList, t)
			}
		}
	}
	out.size.Store(pos)
	// Keep the last source's modification time, which retention falls back on
	// (Kafka: cleaned.setLastModified).
	if err := out.finishCleaned(group[len(group)-1].modTime()); err != nil {
		return err
	}
	res.BytesWritten += pos
	ok = true // from here on swapIn owns the files
	return l.swapIn(out, group)
}

// forEachBatch reads a closed segment's batches in order through a read-ahead
// buffer. raw is only valid during the call. It stops early (without error) when
// fn returns errStopScan, and with errCleaningAborted when the log is closing.
func (l *Log) forEachBatch(s *segment, fn func(h *record.BatchHeader, raw []byte) error) error {
	size := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(segmentReader{s}, 0, size), cleanerReadBuffer)
	var buf []byte
	for pos := int64(0); pos < size; {
		if l.closing.Load() {
			return errCleaningAborted
		}
		if size-pos < record.BatchHeaderSize {
			return fmt.Errorf("%w: partial batch header at %s.log:%d", record.ErrCorruptMessage, s.path, pos)
		}
		if cap(buf) < record.BatchHeaderSize {
			buf = make([]byte, record.BatchHeaderSize, 64<<10)
		}
		if _, err := io.ReadFull(r, buf[:record.BatchHeaderSize]); err != nil {
			return readErr(s, pos, err)
		}
		h, ok := record.ParseHeader(buf[:record.BatchHeaderSize])
		if !ok || pos+h.Size > size {
			return fmt.Errorf("%w: bad batch header at %s.log:%d", record.ErrCorruptMessage, s.path, pos)
		}
		if int64(cap(buf)) < h.Size {
			nb := make([]byte, h.Size)
			copy(nb, buf[:record.BatchHeaderSize])
			buf = nb
		}
		raw := buf[:h.Size]
		if _, err := io.ReadFull(r, raw[record.BatchHeaderSize:]); err != nil {
			return readErr(s, pos, err)
		}
		if err := fn(&h, raw); err != nil {
			if errors.Is(err, errStopScan) {
				return nil
			}
			return err
		}
		pos += h.Size
	}
	return nil
}

func readErr(s *segment, pos int64, err error) error {
	if errors.Is(err, errSegmentGone) {
		return err
	}
	return fmt.Errorf("%w: reading %s.log at %d: %v", ErrStorage, s.path, pos, err)
}

// segmentReader reads committed bytes of a segment, failing with errSegmentGone
// once it is closed (deleted by retention, replaced, or the log closed).
type segmentReader struct{ s *segment }

func (r segmentReader) ReadAt(p []byte, off int64) (int, error) {
	f, err := r.s.acquire()
	if err != nil {
		return 0, err
	}
	defer r.s.release()
	return f.ReadAt(p, off)
}

func readCleanerCheckpoint(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		return -1
	}
	lines := strings.Fields(string(b))
	if len(lines) != 3 || lines[0] != "0" || lines[1] != "1" {
		return -1
	}
	off, err := strconv.ParseInt(lines[2], 10, 64)
	if err != nil {
		return -1
	}
	return off
}

// writeCleanerCheckpoint replaces the checkpoint atomically.
func writeCleanerCheckpoint(dir string, off int64) error {
	p := filepath.Join(dir, cleanerCheckpointFile)
	if err := replaceFile(p, []byte("0\n1\n"+strconv.FormatInt(off, 10)+"\n")); err != nil {
		return fmt.Errorf("%w: writing cleaner checkpoint: %v", ErrStorage, err)
	}
	return nil
}
