package replica

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// The high-watermark checkpoint. A log opened after a restart knows its log
// end but not how much of it was committed: records past the high
// watermark may be ones no other replica has, which a new leader will
// truncate. Kafka keeps the high watermark of every partition of a log
// directory in that directory's replication-offset-checkpoint, written
// every replica.high.watermark.checkpoint.interval.ms and at shutdown, and
// a replica starts from it (ReplicaManager.checkpointHighWatermarks,
// Partition.createLogIfNotExists). kbroker does the same, in Kafka's file
// format, so that a restarted replica — above all one elected leader
// before its followers fetch — never lets consumers read records that
// were not committed.

// HWCheckpointFile is the checkpoint's name in each log directory.
const HWCheckpointFile = "replication-offset-checkpoint"

// hwCheckpointVersion is the version line of Kafka's checkpoint files.
const hwCheckpointVersion = 0

// tpKey names a partition as the checkpoint file does: by topic name.
type tpKey struct {
	topic     string
	partition int32
}

// hwCheckpoints is what Partitions keeps of the checkpoint files: the
// entries read at startup (for the logs not open yet, which a rewrite
// must keep), and one writer at a time.
type hwCheckpoints struct {
	mu     sync.Mutex
	loaded map[string]map[tpKey]int64 // log dir -> entries read at startup
	write  sync.Mutex                 // one rewrite at a time
}

// loadHWCheckpoints reads the checkpoint of every log directory. A missing
// file has no entries (a new directory, or a version that wrote none); a
// corrupt one is reported, as Kafka fails the directory rather than guess.
func (p *Partitions) loadHWCheckpoints() error {
	loaded := map[string]map[tpKey]int64{}
	for _, dir := range p.broker.LogDirs {
		entries, err := readHWCheckpoint(filepath.Join(dir, HWCheckpointFile))
		if err != nil {
			return err
		}
		loaded[filepath.Clean(dir)] = entries
	}
	p.hw.mu.Lock()
	p.hw.loaded = loaded
	p.hw.mu.Unlock()
	return nil
}

// checkpointedHW is the high watermark the checkpoint of l's log directory
// holds for topic-partition, and whether it has one.
func (p *Partitions) checkpointedHW(l *storage.Log, topic string, partition int32) (int64, bool) {
	p.hw.mu.Lock()
	defer p.hw.mu.Unlock()
	hw, ok := p.hw.loaded[filepath.Dir(l.Dir())][tpKey{topic, partition}]
	return hw, ok
}

// restoreHighWatermark starts the high watermark of a replicated log just
// opened where the checkpoint left it, or at its log start offset when the
// checkpoint has no entry (Kafka's default of 0, clamped): its log end
// may hold records the other replicas never had. The log is marked
// replicated at once, so no append moves the high watermark to its end
// before the partition's role is known. A partition of one replica keeps
// the log end, where every append commits.
func (p *Partitions) restoreHighWatermark(snap *meta.Snapshot, t *meta.Topic, partition int32, l *storage.Log) {
	if len(p.recordedState(snap, t, partition).Replicas) < 2 {
		return
	}
	l.SetReplicated(true)
	hw, ok := p.checkpointedHW(l, t.Name, partition)
	if !ok {
		hw = l.LogStartOffset()
	}
	if _, err := l.SetHighWatermark(hw); err != nil {
		p.log.Warn("restoring a high watermark", "topic", t.Name, "partition", partition, "err", err)
	}
}

// forgetCheckpointed drops the checkpoint entries of a deleted topic, so
// that a topic created again under its name does not start from them.
func (p *Partitions) forgetCheckpointed(topic string) {
	p.hw.mu.Lock()
	defer p.hw.mu.Unlock()
	for _, entries := range p.hw.loaded {
		for k := range entries {
			if k.topic == topic {
				delete(entries, k)
			}
		}
	}
}

// forgetCheckpointedPartition drops the checkpoint entries of one
// partition whose log was deleted here, so that a replica assigned back
// later starts from its log start, not from a high watermark of before.
func (p *Partitions) forgetCheckpointedPartition(topic string, partition int32) {
	p.hw.mu.Lock()
	defer p.hw.mu.Unlock()
	for _, entries := range p.hw.loaded {
		delete(entries, tpKey{topic, partition})
	}
}

// WriteHWCheckpoints rewrites the checkpoint of every log directory: the
// high watermark of each open log, and for the partitions this broker
// holds whose logs are not open (deferred at startup) the entry read at
// startup, which is still their high watermark.
func (p *Partitions) WriteHWCheckpoints() error {
	p.hw.write.Lock()
	defer p.hw.write.Unlock()
	snap := p.store.Snapshot()
	byDir := map[string]map[tpKey]int64{}
	for _, dir := range p.broker.LogDirs {
		byDir[filepath.Clean(dir)] = map[tpKey]int64{}
	}
	open := map[tpKey]bool{}
	p.logs.EachLog(func(topic string, partition int32, l *storage.Log) {
		open[tpKey{topic, partition}] = true
		if entries := byDir[filepath.Dir(l.Dir())]; entries != nil {
			entries[tpKey{topic, partition}] = l.HighWatermark()
		}
	})
	p.hw.mu.Lock()
	for dir, entries := range p.hw.loaded {
		for k, hw := range entries {
			if open[k] || byDir[dir] == nil {
				continue
			}
			if t := snap.Topic(k.topic); t != nil && k.partition < t.Partitions && p.IsReplica(snap, t, k.partition) {
				byDir[dir][k] = hw
			}
		}
	}
	p.hw.mu.Unlock()
	var firstErr error
	for dir, entries := range byDir {
		if err := writeHWCheckpoint(filepath.Join(dir, HWCheckpointFile), entries); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// RunHWCheckpoints writes the checkpoints every interval
// (replica.high.watermark.checkpoint.interval.ms) until stop is closed,
// and once more then, so a clean shutdown leaves the latest high
// watermarks.
func (p *Partitions) RunHWCheckpoints(interval time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			if err := p.WriteHWCheckpoints(); err != nil {
				p.log.Error("writing the high-watermark checkpoint at shutdown", "err", err)
			}
			return
		case <-tick.C:
			if err := p.WriteHWCheckpoints(); err != nil {
				p.log.Error("writing the high-watermark checkpoint", "err", err)
			}
		}
	}
}

// readHWCheckpoint parses a checkpoint file in Kafka's format: a version
// line (0), a count line, then "topic partition offset" per line.
func readHWCheckpoint(path string) (map[tpKey]int64, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[tpKey]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", storage.ErrStorage, path, err)
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: malformed high-watermark checkpoint %s: %s", storage.ErrStorage, path, why)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != strconv.Itoa(hwCheckpointVersion) {
		return nil, bad(fmt.Sprintf("unrecognized version %q", v))
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 {
		return nil, bad(fmt.Sprintf("bad entry count %q", c))
	}
	entries := make(map[tpKey]int64, n)
	for i := 0; i < n; i++ {
		l, ok := line()
		fields := strings.Fields(l)
		if !ok || len(fields) != 3 {
			return nil, bad(fmt.Sprintf("entry %d: %q", i+1, l))
		}
		part, err1 := strconv.ParseInt(fields[1], 10, 32)
		off, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil || part < 0 || off < 0 {
			return nil, bad(fmt.Sprintf("entry %d: %q", i+1, l))
		}
		entries[tpKey{fields[0], int32(part)}] = off
	}
	return entries, nil
}

// writeHWCheckpoint replaces path with entries: written to a temporary
// file, synced and renamed over the old one, as Kafka's CheckpointFile
// does, so a crash leaves the old checkpoint or the new, never half.
func writeHWCheckpoint(path string, entries map[tpKey]int64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", hwCheckpointVersion, len(entries))
	for k, off := range entries {
		fmt.Fprintf(&b, "%s %d %d\n", k.topic, k.partition, off)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%w: writing %s: %v", storage.ErrStorage, tmp, err)
	}
	if _, err = f.WriteString(b.String()); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("%w: writing %s: %v", storage.ErrStorage, path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // the rename itself survives a power loss
		d.Close()
	}
	return nil
}
