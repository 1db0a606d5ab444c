package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"kbroker/internal/record"
)

// Producer state snapshots: "<offset, 20 digits>.snapshot" holds the
// producer state (sequences, epochs, ongoing transactions) as of that offset (every batch below it applied), so Open
// replays only the batches after it instead of every segment's headers. Kafka
// writes one on each roll and on clean shutdown; so does kbroker.
//
// The file is Kafka's ProducerStateManager version 1 layout: int16 version,
// uint32 CRC-32C of everything after it, then an int32-counted array of 46-byte
// entries (producer id, epoch, last sequence, last offset, offset delta, max
// timestamp, coordinator epoch, first offset of the ongoing transaction). Kafka
// stores one entry per producer, its last batch; kbroker stores one entry per
// remembered batch (up to five per producer, oldest first) so that duplicate
// detection after a restart covers the same batches as before it. A reader that
// keeps the last entry per producer, as Kafka's does, still reads it correctly.
const (
	snapshotSuffix     = ".snapshot"
	snapshotVersion    = 1
	snapshotHeaderSize = 2 + 4 + 4 // version, CRC, entry count
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	// snapshotsKept: the newest is the one used; the one before it is a fallback
	// should the newest turn out damaged.
	snapshotsKept = 2
)

var errBadSnapshot = errors.New("bad producer state snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

// encodeSnapshot serializes the state. Producers are written in id order so that
// equal states give equal files. Every entry of a producer carries its
// coordinator epoch and the first offset of its ongoing transaction (-1:
// none), so that Open rebuilds the last stable offset from the snapshot
// without reading the log. A producer whose batches a marker's epoch bump
// forgot is one entry with last sequence -1 and its marker's offset as last
// offset.
func (ps *producerState) encodeSnapshot() []byte {
	pids := make([]int64, 0, len(ps.producers))
	n := 0
	for pid, e := range ps.producers {
		pids = append(pids, pid)
		n += max(len(e.batches), 1)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+n*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(n))
	entry := func(pid int64, e *producerEntry, lastSeq int32, lastOffset int64, delta int32, ts int64) {
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(delta))
		b = binary.BigEndian.AppendUint64(b, uint64(ts))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst))
	}
	for _, pid := range pids {
		e := ps.producers[pid]
		if len(e.batches) == 0 {
			entry(pid, e, -1, e.markerOffset, 0, e.lastTimestamp)
			continue
		}
		for i, m := range e.batches {
			ts := m.maxTimestamp
			if i == len(e.batches)-1 {
				ts = e.lastTimestamp // a marker's, when one came after the batch
			}
			entry(pid, e, m.lastSeq, m.lastOffset, int32(m.lastOffset-m.firstOffset), ts)
		}
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

func decodeSnapshot(b []byte) (*producerState, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", errBadSnapshot, len(b))
	}
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if crc32.Checksum(b[6:], castagnoli) != binary.BigEndian.Uint32(b[2:]) {
		return nil, fmt.Errorf("%w: CRC mismatch", errBadSnapshot)
	}
	n := int64(binary.BigEndian.Uint32(b[6:]))
	if int64(len(b)) != snapshotHeaderSize+n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errBadSnapshot, n, len(b))
	}
	ps := newProducerState()
	for e := b[snapshotHeaderSize:]; len(e) > 0; e = e[snapshotEntrySize:] {
		pid := int64(binary.BigEndian.Uint64(e))
		epoch := int16(binary.BigEndian.Uint16(e[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(e[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(e[14:]))
		delta := int32(binary.BigEndian.Uint32(e[22:]))
		ts := int64(binary.BigEndian.Uint64(e[26:]))
		coordinatorEpoch := int32(binary.BigEndian.Uint32(e[34:]))
		txnFirst := int64(binary.BigEndian.Uint64(e[38:]))
		if pid < 0 || delta < 0 || txnFirst < -1 || lastOffset < int64(delta) {
			return nil, fmt.Errorf("%w: entry for producer %d", errBadSnapshot, pid)
		}
		// An entry without a sequence (a coordinator's batch, or the marker
		// of a producer whose batches its epoch bump forgot) comes back as
		// a batch without one: the next batch of that epoch starts at 0,
		// as after the original.
		firstSeq := int32(-1)
		if lastSeq >= 0 {
			firstSeq = record.DecrementSequence(lastSeq, delta)
		}
		ps.update(pid, epoch, batchMeta{
			firstSeq: firstSeq, lastSeq: lastSeq,
			firstOffset: lastOffset - int64(delta), lastOffset: lastOffset, maxTimestamp: ts,
		}, false)
		en := ps.producers[pid]
		en.coordinatorEpoch, en.lastTimestamp = coordinatorEpoch, ts
		en.txnFirst = txnFirst
		if txnFirst >= 0 {
			ps.ongoing[pid] = txnFirst
		} else {
			delete(ps.ongoing, pid)
		}
	}
	ps.txnsChanged = true
	return ps, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) []int64 {
	ents, _ := os.ReadDir(dir)
	var out []int64
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), snapshotSuffix)
		if !ok || len(stem) != 20 {
			continue
		}
		if off, err := strconv.ParseInt(stem, 10, 64); err == nil && off >= 0 {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// loadLatestSnapshot returns the newest readable snapshot, deleting unreadable
// ones on the way (Kafka does the same with a CorruptSnapshotException). ok=false
// when none is usable: the caller rebuilds from the log.
func loadLatestSnapshot(dir string) (offset int64, ps *producerState, ok bool) {
	offs := listSnapshots(dir)
	for i := len(offs) - 1; i >= 0; i-- {
		p := snapshotPath(dir, offs[i])
		b, err := os.ReadFile(p)
		if err == nil {
			if ps, err = decodeSnapshot(b); err == nil {
				return offs[i], ps, true
			}
		}
		os.Remove(p)
	}
	return -1, nil, false
}

// writeSnapshot writes a snapshot file durably (replaceFile), then removes all
// but the newest snapshotsKept.
func writeSnapshot(dir string, offset int64, data []byte) error {
	p := snapshotPath(dir, offset)
	if err := replaceFile(p, data); err != nil {
		return fmt.Errorf("%w: writing producer snapshot %s: %v", ErrStorage, p, err)
	}
	offs := listSnapshots(dir)
	for i := 0; i < len(offs)-snapshotsKept; i++ {
		os.Remove(snapshotPath(dir, offs[i]))
	}
	return nil
}

// removeSnapshotsAbove deletes snapshots past the log end: recovery truncated the
// offsets they describe (Kafka: ProducerStateManager.truncateAndReload).
func removeSnapshotsAbove(dir string, end int64) {
	for _, off := range listSnapshots(dir) {
		if off > end {
			os.Remove(snapshotPath(dir, off))
		}
	}
}
