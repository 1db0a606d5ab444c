package storage

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Leader epochs. Each partition keeps, as Kafka's LeaderEpochFileCache,
// the first offset written in each leader epoch, in a file
// "leader-epoch-checkpoint" (Kafka's format: a version line "0", a count
// line, then one "<epoch> <start offset>" line per epoch). From it the
// leader answers OffsetForLeaderEpoch — where an epoch's records end in
// its log — and a follower finds, after a leader change, the offset up to
// which its log agrees with the new leader's (KIP-101, KIP-279), and
// truncates the rest (TruncateTo).

const epochCheckpointFile = "leader-epoch-checkpoint"

// EpochEntry is the first offset of one leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

type epochCache struct {
	mu       sync.Mutex
	dir      string
	entries  []EpochEntry
	creation *creationSync // nil, or the log's pending creation sync: writes are unsynced while it is
}

// loadEpochs reads the checkpoint of dir, dropping entries at or past end
// (recovery cut them). A log written before epochs were kept has only
// epoch 0 (kbroker stamped nothing else), from logStart.
func loadEpochs(dir string, logStart, end int64) *epochCache {
	c := &epochCache{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, epochCheckpointFile))
	// A checkpoint without its version line is taken as none: a new log's
	// first checkpoint is not synced (creation.go), and a power failure
	// may leave it empty beside records the kernel happened to write back.
	if err != nil || !strings.HasPrefix(string(b), "0\n") {
		if end > logStart {
			c.entries = []EpochEntry{{0, logStart}}
		}
		return c
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, line := range lines[min(2, len(lines)):] {
		e, o, ok := strings.Cut(strings.TrimSpace(line), " ")
		epoch, err1 := strconv.ParseInt(e, 10, 32)
		off, err2 := strconv.ParseInt(o, 10, 64)
		if ok && err1 == nil && err2 == nil && off < end {
			c.entries = append(c.entries, EpochEntry{int32(epoch), off})
		}
	}
	return c
}

// assign notes that batch (whole, stored) starts at offset in its leader
// epoch; a newer epoch than the last is recorded and the checkpoint
// rewritten.
func (c *epochCache) assign(batch []byte, offset int64) error {
	if len(batch) < 16 {
		return nil
	}
	return c.assignEpoch(int32(binary.BigEndian.Uint32(batch[12:16])), offset)
}

func (c *epochCache) assignEpoch(epoch int32, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch < 0 || (len(c.entries) > 0 && epoch <= c.entries[len(c.entries)-1].Epoch) {
		return nil
	}
	c.entries = append(c.entries, EpochEntry{epoch, offset})
	return c.writeLocked()
}

// truncateFrom drops the epochs that start at or past end.
func (c *epochCache) truncateFrom(end int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.writeLocked()
}

func (c *epochCache) writeLocked() error {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	if err := c.creation.replace(filepath.Join(c.dir, epochCheckpointFile), []byte(b.String())); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrStorage, epochCheckpointFile, err)
	}
	return nil
}

// EndOffsetForEpoch is what Kafka's LeaderEpochFileCache.endOffsetFor
// answers: for the latest epoch, the log end offset; for an older one, the
// largest epoch at most the requested one and the start offset of the
// first epoch after it; (-1, -1) for a requested epoch past the latest or
// a log without epochs.
func (l *Log) EndOffsetForEpoch(requested int32) (epoch int32, endOffset int64) {
	c := l.epochs
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	if n == 0 || requested < 0 {
		return -1, -1
	}
	if requested == c.entries[n-1].Epoch {
		return requested, l.end.Load().offset
	}
	higher := -1
	for i, e := range c.entries {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// LatestEpoch is the epoch of the log's last batch, -1 for a log without
// epochs.
func (l *Log) LatestEpoch() int32 {
	c := l.epochs
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// StartLeaderEpoch records that this replica leads from its log end in
// epoch, as Kafka's leader does on becoming leader, so that
// OffsetForLeaderEpoch of the current epoch has an answer before the
// leader writes anything; an epoch not newer than the last is ignored.
// It also stamps epoch into the batches appended from now on.
func (l *Log) StartLeaderEpoch(epoch int32) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	l.epoch.Store(epoch)
	return l.epochs.assignEpoch(epoch, l.end.Load().offset)
}

// clear drops every epoch (the log was emptied).
func (c *epochCache) clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.writeLocked()
}

// truncateFromStart forgets the epochs that end at or below start (the
// log start offset moved past them) and moves the first one left to
// start, as Kafka's LeaderEpochFileCache.truncateFromStart does, so the
// cache never names offsets the log no longer has.
func (c *epochCache) truncateFromStart(start int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	if i == 0 && (len(c.entries) == 0 || c.entries[0].StartOffset >= start) {
		return nil
	}
	c.entries = slices.Clone(c.entries[i:])
	c.entries[0].StartOffset = max(c.entries[0].StartOffset, start)
	return c.writeLocked()
}
