package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

const partitionMetadataFile = "partition.metadata"

// deleteSuffix marks a partition directory renamed for asynchronous deletion, as
// Kafka names them: "<topic>-<partition>.<uuid without dashes>-delete".
const deleteSuffix = "-delete"

type partitionKey struct {
	topic     string
	partition int32
}

// Manager owns every partition log under the broker's log.dirs (Kafka's LogManager).
type Manager struct {
	dirs   []string
	logger *slog.Logger

	// mu is read-locked by Get, which every produce and every fetched
	// partition calls, so that readers do not queue behind one another.
	// Log holds it only to look up and publish a log, not while it reads
	// or creates its files, so that partitions open concurrently.
	mu     sync.RWMutex
	logs   map[partitionKey]*Log
	closed bool
	// opening holds the partitions whose files Log is reading or creating
	// right now; their channel closes when it is done, so that a second
	// caller waits for that log rather than opening it twice.
	opening map[partitionKey]chan struct{}
	// creating is read-locked by every Log call for its whole length and
	// write-locked by what removes partition directories (DeleteTopic,
	// DeletePartition) and by Close, so that none of them runs while a
	// directory is half made.
	creating sync.RWMutex
	// partitionsIn counts the partition directories of each log dir
	// (index as in dirs), as the log dirs held them when the Manager
	// opened plus those created and minus those retired since: the load
	// leastLoadedDir compares, kept so that creating a partition does not
	// list every log dir.
	partitionsIn []int
	// deferred holds partitions that need no recovery and are opened on first
	// use (Defer), each with the function that opens it.
	deferred map[partitionKey]func() error
	// found names the partition directories the log dirs held when the
	// Manager opened, so that NeedsRecovery need not look for the others.
	found map[string]bool
	// recovered sums what opening the logs a crash left did.
	recovered RecoverySummary

	deleting sync.WaitGroup
	cleaning atomic.Bool // a RunCleaner is running

	// FlushCheckIntervalMs is log.flush.scheduler.interval.ms: how often
	// RunRetention's flusher flushes the logs whose flush.ms has passed. Kafka's
	// default, Long.MAX (what OpenManager sets), turns the check off. Set it
	// before RunRetention starts.
	FlushCheckIntervalMs int64
}

// OpenManager remembers dirs, creating them, and starts removing directories a
// previous run had marked for deletion.
func OpenManager(dirs []string, logger *slog.Logger) (*Manager, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no log directories")
	}
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{dirs: append([]string(nil), dirs...), logger: logger, logs: map[partitionKey]*Log{},
		opening: map[partitionKey]chan struct{}{}, partitionsIn: make([]int, len(dirs)),
		deferred: map[partitionKey]func() error{}, found: map[string]bool{}, FlushCheckIntervalMs: math.MaxInt64}
	for i, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("%w: log.dirs: creating log directory %s: %v", ErrStorage, d, err)
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
		for _, e := range ents {
			switch {
			case !e.IsDir():
			case strings.HasSuffix(e.Name(), deleteSuffix):
				m.removeAsync(filepath.Join(d, e.Name()))
			case isPartitionDirName(e.Name()):
				m.found[e.Name()] = true
				m.partitionsIn[i]++
			}
		}
	}
	return m, nil
}

func partitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// Log opens or creates partition (topic, partition) in "<dir>/<topic>-<partition>".
// topicID is kept in partition.metadata as Kafka does, so that the directory of a
// deleted topic recreated with the same name is recognised as stale and replaced.
// Different partitions open concurrently; a caller asking for a partition
// another is opening waits for that log.
func (m *Manager) Log(topic string, partition int32, topicID [16]byte, cfg Config) (*Log, error) {
	m.creating.RLock()
	defer m.creating.RUnlock()
	key := partitionKey{topic, partition}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if l := m.logs[key]; l != nil {
			if id, ok := readTopicID(l.dir); ok && id == topicID {
				m.mu.Unlock()
				l.SetConfig(cfg)
				return l, nil
			}
			// The open log belongs to an earlier incarnation of the topic.
			delete(m.logs, key)
			if err := m.retire(l.dir, l); err != nil {
				m.mu.Unlock()
				return nil, err
			}
		}
		if wait, busy := m.opening[key]; busy {
			m.mu.Unlock()
			<-wait
			continue
		}
		done := make(chan struct{})
		m.opening[key] = done
		m.mu.Unlock()

		l, err := m.openPartition(topic, partition, topicID, cfg)

		m.mu.Lock()
		delete(m.opening, key)
		close(done)
		if err == nil {
			m.recovered.add(l.Recovery())
			m.logs[key] = l
			delete(m.deferred, key)
		}
		m.mu.Unlock()
		return l, err
	}
}

// openPartition opens the partition's directory, or creates one in the least
// loaded log dir, retiring a directory left by an earlier incarnation of the
// topic. The caller has marked the partition as opening.
func (m *Manager) openPartition(topic string, partition int32, topicID [16]byte, cfg Config) (*Log, error) {
	name := partitionDirName(topic, partition)
	dir := ""
	for _, d := range m.dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			if id, ok := readTopicID(p); ok && id != topicID {
				m.logger.Info("replacing partition directory of a previous topic incarnation",
					"dir", p, "old_topic_id", encodeTopicID(id), "topic_id", encodeTopicID(topicID))
				m.mu.Lock()
				err := m.retire(p, nil)
				m.mu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			}
			dir = p
			break
		}
	}
	var creation *creationSync // a log created now defers its fsyncs (creation.go)
	if dir == "" {
		m.mu.Lock()
		i := m.leastLoadedDir()
		m.partitionsIn[i]++ // counted now, so that concurrent creations spread
		m.mu.Unlock()
		dir = filepath.Join(m.dirs[i], name)
		creation = newCreationSync(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if creation != nil {
			m.mu.Lock()
			m.partitionsIn[m.dirIndex(dir)]--
			m.mu.Unlock()
		}
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	if err := writeTopicID(dir, topicID, creation); err != nil {
		return nil, err
	}
	return open(dir, cfg, creation)
}

// NeedsRecovery reports whether the partition has a directory that was not
// closed cleanly (its clean-shutdown marker is missing): a crash left it, and
// its log must be opened, and so recovered, before anything is served from it.
// A partition closed cleanly, or with no directory yet, can wait for Defer. It
// is meant for startup: an open log has no marker.
func (m *Manager) NeedsRecovery(topic string, partition int32) bool {
	name := partitionDirName(topic, partition)
	if !m.found[name] {
		return false // created, if at all, by this Manager
	}
	for _, d := range m.dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(filepath.Join(p, cleanShutdownFile)); err == nil {
			return false
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// Defer registers a partition that NeedsRecovery does not report, to be opened
// on first use rather than at startup; open opens it as a request would (with
// its topic's configs at that time), and may find it no longer wanted. Until
// then it costs this entry and no file, so a broker with many partitions starts
// without reading them. RunRetention opens deferred logs, so that retention and
// compaction reach partitions nobody uses.
func (m *Manager) Defer(topic string, partition int32, open func() error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := partitionKey{topic, partition}
	if !m.closed && m.logs[key] == nil {
		m.deferred[key] = open
	}
}

// openDeferred opens every log still deferred, until ctx ends.
func (m *Manager) openDeferred(ctx context.Context) {
	m.mu.Lock()
	pending := m.deferred
	m.deferred = map[partitionKey]func() error{}
	m.mu.Unlock()
	for key, open := range pending {
		if ctx.Err() != nil {
			return
		}
		if err := open(); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("opening partition log for retention", "topic", key.topic, "partition", key.partition, "err", err)
		}
	}
}

// leastLoadedDir returns the index of the log dir holding the fewest
// partitions, as Kafka's LogManager.nextLogDirs picks. Caller holds m.mu.
func (m *Manager) leastLoadedDir() int {
	best := 0
	for i, n := range m.partitionsIn {
		if n < m.partitionsIn[best] {
			best = i
		}
	}
	return best
}

// dirIndex returns the index in m.dirs of the log dir holding partition
// directory dir, or -1.
func (m *Manager) dirIndex(dir string) int {
	parent := filepath.Dir(dir)
	for i, d := range m.dirs {
		if filepath.Clean(d) == parent {
			return i
		}
	}
	return -1
}

func isPartitionDirName(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return false
	}
	_, err := strconv.ParseInt(name[i+1:], 10, 32)
	return err == nil
}

// Get returns the open log of a partition, or nil.
func (m *Manager) Get(topic string, partition int32) *Log {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.logs[partitionKey{topic, partition}]
}

// DeleteTopic closes and removes all partitions of topic, open or only on disk.
// Like Kafka, directories are renamed to "<topic>-<p>.<uuid>-delete" at once and
// removed in the background.
func (m *Manager) DeleteTopic(topic string) error {
	m.creating.Lock()
	defer m.creating.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.deferred {
		if key.topic == topic {
			delete(m.deferred, key)
		}
	}
	var firstErr error
	for key, l := range m.logs {
		if key.topic != topic {
			continue
		}
		delete(m.logs, key)
		if err := m.retire(l.dir, l); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, d := range m.dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if !e.IsDir() || !strings.HasPrefix(name, topic+"-") || !isPartitionDirName(name) ||
				strings.Contains(name[len(topic)+1:], "-") {
				continue
			}
			if err := m.retire(filepath.Join(d, name), nil); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// DeletePartition closes and removes one partition's log, open or only on
// disk, as DeleteTopic removes a topic's: a replica no longer assigned to
// this broker (Kafka's StopReplica with delete).
func (m *Manager) DeletePartition(topic string, partition int32) error {
	m.creating.Lock()
	defer m.creating.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	key := partitionKey{topic, partition}
	delete(m.deferred, key)
	var firstErr error
	if l := m.logs[key]; l != nil {
		delete(m.logs, key)
		firstErr = m.retire(l.dir, l)
	}
	for _, d := range m.dirs {
		if err := m.retire(filepath.Join(d, partitionDirName(topic, partition)), nil); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// OnDisk calls fn with the topic and partition of every partition
// directory the log dirs held when the Manager opened.
func (m *Manager) OnDisk(fn func(topic string, partition int32)) {
	m.mu.RLock()
	names := make([]string, 0, len(m.found))
	for name := range m.found {
		names = append(names, name)
	}
	m.mu.RUnlock()
	for _, name := range names {
		i := strings.LastIndexByte(name, '-')
		p, err := strconv.ParseInt(name[i+1:], 10, 32)
		if i > 0 && err == nil {
			fn(name[:i], int32(p))
		}
	}
}

// retire closes l (if open) and renames dir for deletion, then removes it in the
// background. Caller holds m.mu.
func (m *Manager) retire(dir string, l *Log) error {
	if l != nil {
		if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("closing deleted partition log", "dir", dir, "err", err)
		}
	}
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	target := dir + "." + id + deleteSuffix
	if err := os.Rename(dir, target); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("%w: renaming %s for deletion: %v", ErrStorage, dir, err)
	}
	if i := m.dirIndex(dir); i >= 0 {
		m.partitionsIn[i]--
	}
	m.removeAsync(target)
	return nil
}

func (m *Manager) removeAsync(dir string) {
	m.deleting.Add(1)
	go func() {
		defer m.deleting.Done()
		if err := os.RemoveAll(dir); err != nil {
			m.logger.Warn("removing deleted partition directory", "dir", dir, "err", err)
		}
	}()
}

// DefaultCleanerBackoff is log.cleaner.backoff.ms: how long the cleaner sleeps
// when no log needs cleaning.
const DefaultCleanerBackoff = 15 * time.Second

// RunRetention runs EnforceRetention on every log every interval
// (log.retention.check.interval.ms) until ctx ends, opening deferred logs at
// the first check. It also runs the log cleaner
// (RunCleaner with DefaultCleanerBackoff) and, when FlushCheckIntervalMs
// turns it on, the periodic flush check for as long as it runs, so that
// starting retention starts every background log task, as Kafka's LogManager
// does.
func (m *Manager) RunRetention(ctx context.Context, interval time.Duration) {
	var background sync.WaitGroup
	background.Go(func() { m.RunCleaner(ctx, DefaultCleanerBackoff) })
	background.Go(func() { m.runFlusher(ctx) })
	defer background.Wait()
	everyTick(ctx, interval, func(now time.Time) {
		m.openDeferred(ctx)
		for _, l := range m.openLogs() {
			n, err := l.EnforceRetention(now)
			if err != nil && !errors.Is(err, ErrClosed) {
				m.logger.Warn("log retention", "dir", l.dir, "err", err)
			} else if n > 0 {
				m.logger.Info("deleted log segments", "dir", l.dir, "segments", n)
			}
		}
	})
}

// everyTick calls fn every interval until ctx ends.
func everyTick(ctx context.Context, interval time.Duration, fn func(now time.Time)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			fn(now)
		}
	}
}

func (m *Manager) openLogs() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	logs := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		logs = append(logs, l)
	}
	return logs
}

// RunCleaner is the log cleaner thread (Kafka's log.cleaner.threads=1: one per
// Manager; a second concurrent call returns at once). Until ctx ends it compacts
// the filthiest log that is due (cleaner.go), then the next, sleeping backoff when
// none is.
func (m *Manager) RunCleaner(ctx context.Context, backoff time.Duration) {
	if !m.cleaning.CompareAndSwap(false, true) {
		return
	}
	defer m.cleaning.Store(false)
	for ctx.Err() == nil {
		if m.cleanFilthiest(time.Now()) {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// cleanFilthiest cleans the due log with the highest dirty ratio and reports
// whether it made progress.
func (m *Manager) cleanFilthiest(now time.Time) bool {
	var best *Log
	bestRatio := -1.0
	for _, l := range m.openLogs() {
		if c, ok := l.state(now.UnixMilli()); ok && c.due() && c.ratio() > bestRatio {
			best, bestRatio = l, c.ratio()
		}
	}
	if best == nil {
		return false
	}
	res, err := best.clean(now, false)
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			m.logger.Warn("log cleaning", "dir", best.dir, "err", err)
		}
		return false
	}
	if res.SegmentsCleaned > 0 {
		m.logger.Info("cleaned log", "dir", best.dir, "segments", res.SegmentsCleaned,
			"dirty_from", res.FirstDirtyOffset, "clean_to", res.EndOffset,
			"bytes_read", res.BytesRead, "bytes_written", res.BytesWritten, "records_removed", res.RecordsRemoved)
	}
	return res.EndOffset > res.FirstDirtyOffset
}

// closeWorkers is how many logs Close closes at once. Closing a log is a few
// fsyncs (its sealed index files, the .log, the producer snapshot), which the
// file system commits together when they come concurrently; one at a time, a
// broker with 10,000 written partitions took over half a minute to stop.
const closeWorkers = 16

// Close closes every log and waits for background directory removals.
func (m *Manager) Close() error {
	m.creating.Lock() // no log is half open from here on
	m.mu.Lock()
	m.closed = true
	logs := m.logs
	m.logs = map[partitionKey]*Log{}
	m.deferred = map[partitionKey]func() error{}
	m.mu.Unlock()
	m.creating.Unlock()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	work := make(chan *Log)
	for range min(closeWorkers, len(logs)) {
		wg.Go(func() {
			for l := range work {
				if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) {
					errMu.Lock()
					firstErr = cmp.Or(firstErr, err)
					errMu.Unlock()
				}
			}
		})
	}
	for _, l := range logs {
		work <- l
	}
	close(work)
	wg.Wait()
	m.deleting.Wait()
	return firstErr
}

// partition.metadata, as Kafka writes it:
//
//	version: 0
//	topic_id: <topic id, base64url without padding>
func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func writeTopicID(dir string, id [16]byte, creation *creationSync) error {
	p := filepath.Join(dir, partitionMetadataFile)
	content := []byte("version: 0\ntopic_id: " + encodeTopicID(id) + "\n")
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := creation.replace(p, content); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrStorage, p, err)
	}
	return nil
}

func readTopicID(dir string) ([16]byte, bool) {
	var id [16]byte
	b, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return id, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "topic_id" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(raw) != 16 {
			return id, false
		}
		copy(id[:], raw)
		return id, true
	}
	return id, false
}
