package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"kbroker/internal/bufpool"

	"kbroker/internal/record"
)

// ReadResult is what Read returns to the Fetch handler.
type ReadResult struct {
	Records                       []byte
	HighWatermark, LogStartOffset int64
	// LastStableOffset is the last stable offset as of the read.
	LastStableOffset int64
	// AbortedTxns (ReadCommitted only) are the aborted transactions that
	// overlap the batches returned, for the consumer to drop their records.
	AbortedTxns []AbortedTxn
	// File (ReadRange only) is where the batches are when they were left
	// in their segment file, for sending with sendfile; Records is then
	// nil.
	File FileRange
	// lastOffset is the last offset of the last batch in File.
	lastOffset int64
}

// Len is the number of record bytes read, in Records or File.
func (r *ReadResult) Len() int { return len(r.Records) + r.File.Len() }

// view is a consistent snapshot of the log for one read: the segments, the log end
// and start offsets.
type view struct {
	segs     []*segment
	end      *logEnd
	logStart int64
}

func (l *Log) view() (view, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return view{}, ErrClosed
	}
	return view{segs: l.segs, end: l.end.Load(), logStart: l.logStart.Load()}, nil
}

// limit is how far a reader may read in s: the published end in the active
// segment, the whole file in closed ones.
func (v *view) limit(s *segment) int64 {
	if s == v.end.seg {
		return v.end.pos
	}
	return s.size.Load()
}

// segmentFor returns the index of the segment that would hold offset.
func (v *view) segmentFor(offset int64) int {
	i := sort.Search(len(v.segs), func(i int) bool { return v.segs[i].base > offset })
	if i > 0 {
		i--
	}
	return i
}

// maxReadRetries bounds how often a read restarts because retention deleted the
// segment it was reading; each restart sees the new log start offset.
const maxReadRetries = 3

// Read returns whole record batches starting with the batch that contains offset,
// at most maxBytes, except that if the first batch is larger than maxBytes it is
// returned anyway when minOneBatch (KIP-74). It reads what consumers may see:
// nothing at or past the high watermark (ReadUpTo with HighWatermark).
// offset == LogEndOffset returns no bytes and no error, as does an offset
// between the high watermark and the log end; offset outside [LogStartOffset,
// LogEndOffset] -> ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int32, minOneBatch bool) (ReadResult, error) {
	return l.ReadUpTo(offset, maxBytes, minOneBatch, l.hw.Load())
}

// ReadCommitted is Read for a read_committed consumer: bounded by the last
// stable offset instead of the high watermark, and with the aborted
// transactions that overlap the batches returned (Kafka's
// collectAbortedTransactions up to the offset after the last batch read).
func (l *Log) ReadCommitted(offset int64, maxBytes int32, minOneBatch bool) (ReadResult, error) {
	return l.readCommittedRetrying(offset, maxBytes, minOneBatch, false)
}

// ReadRange is Read (ReadCommitted with readCommitted) for a sender that
// can send from files: a read of at least FileRangeMin bytes is returned
// as a FileRange (File) instead of bytes, the batches left in the file.
func (l *Log) ReadRange(offset int64, maxBytes int32, minOneBatch, readCommitted bool) (ReadResult, error) {
	if readCommitted {
		return l.readCommittedRetrying(offset, maxBytes, minOneBatch, true)
	}
	return l.readRetrying(offset, maxBytes, minOneBatch, l.hw.Load(), true)
}

func (l *Log) readCommittedRetrying(offset int64, maxBytes int32, minOneBatch, asFile bool) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := l.readCommitted(offset, maxBytes, minOneBatch, asFile)
		if errors.Is(err, errSegmentGone) && attempt < maxReadRetries {
			continue
		}
		if errors.Is(err, errSegmentGone) {
			return res, fmt.Errorf("%w: offset %d was deleted while being read", ErrOffsetOutOfRange, offset)
		}
		return res, err
	}
}

func (l *Log) readCommitted(offset int64, maxBytes int32, minOneBatch, asFile bool) (ReadResult, error) {
	lso := l.LastStableOffset()
	res, err := l.read(offset, maxBytes, minOneBatch, lso, asFile)
	if err != nil || res.Len() == 0 {
		return res, err
	}
	upper := res.lastOffset + 1
	if res.File.Len() == 0 {
		upper = lastOffsetOf(res.Records) + 1
	}
	v, err := l.view()
	if err != nil {
		return res, err
	}
	if res.AbortedTxns, err = collectAbortedTxns(v.segs, v.segmentFor(offset), offset, upper); err != nil {
		bufpool.Put(res.Records)
		return ReadResult{}, err
	}
	return res, nil
}

// batchAt says that the batch holding offset is size bytes.
type batchAt struct{ offset, size int64 }

// ReadsNothing is the answer of a consumer's read (Read, or ReadCommitted
// with readCommitted; ReadRange alike) that would return no batch and no
// error, ok false if it might: the offsets alone, taken without the
// segments or their lock (nothingAt), for a fetch of many partitions to
// pass over its idle ones at the cost of a few loads.
func (l *Log) ReadsNothing(offset int64, maxBytes int32, minOneBatch, readCommitted bool) (hw, lso, logStart int64, ok bool) {
	upTo := l.hw.Load()
	if readCommitted {
		upTo = l.LastStableOffset()
	}
	return l.nothingAt(offset, maxBytes, minOneBatch, upTo)
}

// nothingAt answers a read that can return no batch: nothing past offset
// that it may return (an idle partition, or a follower at the log end), or
// no budget left (a fetch of many partitions reads most of them after its
// max_bytes is spent). Such a read needs neither the segments nor their
// lock, only the offsets, so a fetch pays a few loads for each idle
// partition; so does a read whose budget cannot hold the batch at offset,
// when an earlier read found that batch too big (tooBig). ok is false when
// the read must go the full way: a batch to read, an offset out of range
// (whose error that path words), or a log closing (ErrClosed). The answer
// is the one the full path gives.
func (l *Log) nothingAt(offset int64, maxBytes int32, minOneBatch bool, upTo int64) (hw, lso, logStart int64, ok bool) {
	if l.closing.Load() {
		return 0, 0, 0, false
	}
	end := l.endOffset.Load()
	logStart = l.logStart.Load()
	if offset < logStart || offset > end {
		return 0, 0, 0, false
	}
	if offset < min(upTo, end) && (maxBytes > 0 || minOneBatch) {
		// A batch to read, unless it is the one the last read found too
		// big, and this read has no more room and need not return it.
		if big := l.tooBig.Load(); minOneBatch || big == nil || big.offset != offset || int64(maxBytes) >= big.size {
			return 0, 0, 0, false
		}
	}
	return min(l.hw.Load(), end), min(l.LastStableOffset(), end), logStart, true
}

// lastOffsetOf is the last offset of the last whole batch in b (which
// holds whole batches only), -1 if none.
func lastOffsetOf(b []byte) int64 {
	_, h, ok := lastBatchOf(b)
	if !ok {
		return -1
	}
	return h.LastOffset
}

// lastBatchOf is where the last whole batch of b (which holds whole
// batches only) starts, and its header: the batches are walked by their
// length fields and only the last header is parsed.
func lastBatchOf(b []byte) (at int, h record.BatchHeader, ok bool) {
	for pos := 0; len(b)-pos >= record.BatchHeaderSize; {
		size := int(int32(binary.BigEndian.Uint32(b[pos+record.PosLength:]))) + record.LogOverhead
		if size < record.BatchHeaderSize || pos+size > len(b) {
			break
		}
		at, pos = pos, pos+size
	}
	h, ok = record.ParseHeader(b[at:])
	return at, h, ok
}

// ReadUpTo is Read bounded by upTo instead of the high watermark: no batch
// holding an offset at or past upTo is returned (the bound is clamped to the
// log end offset). A follower's fetch passes LogEndOffset; a read_committed
// consumer will pass the last stable offset. Whole batches only: a batch
// straddling the bound is left out, as Kafka's segment read stops at the
// position of the batch holding its max offset.
func (l *Log) ReadUpTo(offset int64, maxBytes int32, minOneBatch bool, upTo int64) (ReadResult, error) {
	return l.readRetrying(offset, maxBytes, minOneBatch, upTo, false)
}

// ReadRangeUpTo is ReadUpTo for a sender that can send from files (a
// follower's fetch on a plaintext listener): a read of at least
// FileRangeMin bytes is returned as a FileRange instead of bytes.
func (l *Log) ReadRangeUpTo(offset int64, maxBytes int32, minOneBatch bool, upTo int64) (ReadResult, error) {
	return l.readRetrying(offset, maxBytes, minOneBatch, upTo, true)
}

func (l *Log) readRetrying(offset int64, maxBytes int32, minOneBatch bool, upTo int64, asFile bool) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := l.read(offset, maxBytes, minOneBatch, upTo, asFile)
		if errors.Is(err, errSegmentGone) && attempt < maxReadRetries {
			continue
		}
		if errors.Is(err, errSegmentGone) {
			return res, fmt.Errorf("%w: offset %d was deleted while being read", ErrOffsetOutOfRange, offset)
		}
		return res, err
	}
}

// read reads as ReadUpTo does; with asFile, a read of at least
// FileRangeMin bytes is left in the file (ReadResult.File).
func (l *Log) read(offset int64, maxBytes int32, minOneBatch bool, upTo int64, asFile bool) (ReadResult, error) {
	if hw, lso, start, ok := l.nothingAt(offset, maxBytes, minOneBatch, upTo); ok {
		return ReadResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: start}, nil
	}
	return l.readSegments(offset, maxBytes, minOneBatch, upTo, asFile)
}

// readSegments is read the full way: under the segment list's lock, from
// the segment that holds offset.
func (l *Log) readSegments(offset int64, maxBytes int32, minOneBatch bool, upTo int64, asFile bool) (ReadResult, error) {
	v, err := l.view()
	if err != nil {
		return ReadResult{}, err
	}
	res := ReadResult{HighWatermark: min(l.hw.Load(), v.end.offset), LogStartOffset: v.logStart,
		LastStableOffset: min(l.LastStableOffset(), v.end.offset)}
	if offset == v.end.offset {
		return res, nil
	}
	if offset < v.logStart || offset > v.end.offset {
		return res, fmt.Errorf("%w: offset %d is outside [%d, %d]", ErrOffsetOutOfRange, offset, v.logStart, v.end.offset)
	}
	bound := min(upTo, v.end.offset)
	// Nothing fits a spent budget (a fetch of many partitions reads most of
	// them after its max_bytes is used up): answer the offsets without
	// reading a batch header from the file.
	if offset >= bound || (maxBytes <= 0 && !minOneBatch) {
		return res, nil
	}
	for i := v.segmentFor(offset); i < len(v.segs); i++ {
		s := v.segs[i]
		lim, bounded, err := v.boundedLimit(i, bound)
		if err != nil {
			return res, err
		}
		if recs, ok, err := s.readAfterFound(offset, maxBytes, lim, asFile); ok || err != nil {
			res.Records = recs
			return res, err
		}
		pos, h, ok, err := s.findBatch(offset, lim)
		if err != nil {
			return res, err
		}
		if !ok {
			if s == v.end.seg || bounded {
				break
			}
			continue
		}
		n := min(int64(maxBytes), lim-pos)
		if n < h.Size {
			if !minOneBatch {
				if int64(maxBytes) < h.Size {
					l.tooBig.Store(&batchAt{offset: offset, size: h.Size})
				}
				return res, nil
			}
			n = h.Size
		}
		if asFile && n >= FileRangeMin {
			end, last, ok, err := s.wholeBatchEnd(pos, pos+n, lim, h)
			if err != nil {
				return res, err
			}
			if ok && end-pos >= FileRangeMin {
				res.File, res.lastOffset = FileRange{seg: s, pos: pos, n: end - pos}, last
				return res, nil
			}
		}
		// Pooled: the fetch path returns it once the response is encoded.
		buf := bufpool.Get(int(n))
		if err := s.readAt(buf, pos); err != nil {
			return res, err
		}
		res.Records = buf[:record.WholeBatches(buf)]
		// The consumer's next read starts after the last batch read: found
		// from here, it costs one batch header, not one per batch read
		// (findBatch starts after the batch it found last).
		if at, last, ok := lastBatchOf(res.Records); ok && at > 0 {
			s.lastFound.Store(&foundBatch{pos: pos + int64(at), h: last})
		}
		return res, nil
	}
	return res, nil
}

// readAfterFound is the read of a consumer that keeps up: offset is the
// one after the batch the segment found last, so its batch starts where
// that one ends, and its header and records come in one read of the file
// instead of two (findBatch's header, then the records). ok is false when
// the read must go the usual way: another offset, a read that may stay in
// the file (asFile, FileRangeMin or more), a first batch larger than the
// read, or a header that does not parse (whose error the usual way
// words). The records are whole batches, as readSegments returns them.
func (s *segment) readAfterFound(offset int64, maxBytes int32, limit int64, asFile bool) (records []byte, ok bool, err error) {
	last := s.lastFound.Load()
	if last == nil || last.h.LastOffset+1 != offset {
		return nil, false, nil
	}
	pos := last.pos + last.h.Size
	n := min(int64(maxBytes), limit-pos)
	if n < record.BatchHeaderSize || (asFile && n >= FileRangeMin) {
		return nil, false, nil
	}
	buf := bufpool.Get(int(n)) // pooled, as readSegments' reads
	if err := s.readAt(buf, pos); err != nil {
		bufpool.Put(buf)
		return nil, false, err
	}
	if h, ok := record.ParseHeader(buf); !ok || h.Size > n || h.LastOffset < offset {
		bufpool.Put(buf)
		return nil, false, nil
	}
	records = buf[:record.WholeBatches(buf)]
	if at, lh, ok := lastBatchOf(records); ok {
		s.lastFound.Store(&foundBatch{pos: pos + int64(at), h: lh})
	}
	return records, true, nil
}

// boundedLimit is how far a reader bounded by offset bound may read in
// segment i: the segment's limit, or, in the segment holding bound, the
// position of the first batch that reaches it (bounded true). The search runs
// only when bound is below the segment's end, never for a read up to the log
// end.
func (v *view) boundedLimit(i int, bound int64) (lim int64, bounded bool, err error) {
	s := v.segs[i]
	lim = v.limit(s)
	if bound == v.end.offset || (i+1 < len(v.segs) && v.segs[i+1].base <= bound) {
		return lim, false, nil
	}
	pos, _, ok, err := s.findBatch(bound, lim)
	if err != nil || !ok {
		return lim, false, err
	}
	return pos, true, nil
}

// OffsetForTimestamp returns the earliest offset whose record timestamp >= ts, and
// that record's timestamp (ListOffsets by time). As Kafka does, it searches the
// first segment whose largest timestamp is >= ts, starting from the time index
// entry below ts, then scans batches and their records. ok=false if none.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	for attempt := 0; ; attempt++ {
		offset, timestamp, ok, err = l.offsetForTimestamp(ts)
		if !errors.Is(err, errSegmentGone) || attempt >= maxReadRetries {
			return
		}
	}
}

func (l *Log) offsetForTimestamp(ts int64) (int64, int64, bool, error) {
	v, err := l.view()
	if err != nil {
		return 0, 0, false, err
	}
	for _, s := range v.segs {
		if s.size.Load() == 0 || s.largestTimestamp() < ts {
			continue
		}
		if err := s.ensureIndex(); err != nil {
			return 0, 0, false, err
		}
		s.imu.RLock()
		from := s.lookupTime(ts)
		s.imu.RUnlock()
		lim := v.limit(s) // findBatch, next, trims the index budget after its own lookup
		pos, h, found, err := s.findBatch(from, lim)
		if err != nil {
			return 0, 0, false, err
		}
		for found && pos < lim {
			if h.MaxTimestamp >= ts && h.LastOffset >= v.logStart {
				off, rts, hit, err := s.firstRecordAtOrAfter(pos, h, ts, v.logStart)
				if err != nil || hit {
					return off, rts, hit, err
				}
			}
			pos += h.Size
			if pos >= lim {
				break
			}
			if h, err = s.readHeader(pos, lim); err != nil {
				return 0, 0, false, err
			}
		}
	}
	return 0, 0, false, nil
}

// firstRecordAtOrAfter reads the batch at pos and returns its first record with
// timestamp >= ts and offset >= minOffset.
func (s *segment) firstRecordAtOrAfter(pos int64, h record.BatchHeader, ts, minOffset int64) (int64, int64, bool, error) {
	buf := make([]byte, h.Size)
	if err := s.readAt(buf, pos); err != nil {
		return 0, 0, false, err
	}
	var off, rts int64
	hit := false
	err := record.Timestamps(buf, func(delta int32, t int64) bool {
		if t >= ts && h.BaseOffset+int64(delta) >= minOffset {
			off, rts, hit = h.BaseOffset+int64(delta), t, true
			return false
		}
		return true
	})
	return off, rts, hit, err
}

// MaxTimestamp returns the offset and timestamp of the record with the largest
// timestamp (ListOffsets -3, KIP-734): the first record carrying the largest batch
// max timestamp of the segment that holds it. An empty log returns (-1, -1).
func (l *Log) MaxTimestamp() (offset, timestamp int64, err error) {
	for attempt := 0; ; attempt++ {
		offset, timestamp, err = l.maxTimestamp()
		if !errors.Is(err, errSegmentGone) || attempt >= maxReadRetries {
			return
		}
	}
}

func (l *Log) maxTimestamp() (int64, int64, error) {
	v, err := l.view()
	if err != nil {
		return 0, 0, err
	}
	var best *segment
	bestTs, bestOff := int64(-1), int64(-1)
	for _, s := range v.segs {
		s.imu.RLock()
		ts, off := s.maxTs, s.maxTsOff
		s.imu.RUnlock()
		if s.size.Load() > 0 && (best == nil || ts > bestTs) {
			best, bestTs, bestOff = s, ts, off
		}
	}
	if best == nil {
		return -1, -1, nil
	}
	lim := v.limit(best)
	pos, h, ok, err := best.findBatch(bestOff, lim)
	if err != nil || !ok {
		return -1, -1, err
	}
	off, ts, hit, err := best.firstRecordAtOrAfter(pos, h, bestTs, h.BaseOffset)
	if err != nil {
		return 0, 0, err
	}
	if !hit || ts != bestTs {
		// No record has exactly the batch's max timestamp (not possible for batches
		// this broker validated); report the batch's last offset, as Kafka 3.7 did.
		return h.LastOffset, bestTs, nil
	}
	return off, ts, nil
}
