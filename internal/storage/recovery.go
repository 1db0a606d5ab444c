package storage

import "time"

// Recovery is what opening a log did to bring it back: for a log a crash
// left (no clean-shutdown marker), how many segments were read back batch
// by batch and how many bytes of torn or corrupt tail were dropped. After a
// clean shutdown only segments above the last producer-state snapshot are
// scanned, and nothing is truncated.
type Recovery struct {
	Unclean         bool // the log was not closed cleanly
	SegmentsScanned int
	BytesTruncated  int64
	Took            time.Duration
}

// RecoverySummary adds up the recoveries of the logs a Manager opened after
// an unclean shutdown, for the broker's one startup line about them.
type RecoverySummary struct {
	Partitions      int
	SegmentsScanned int
	BytesTruncated  int64
	Took            time.Duration // the sum of each log's time to open
}

func (s *RecoverySummary) add(r Recovery) {
	if !r.Unclean {
		return
	}
	s.Partitions++
	s.SegmentsScanned += r.SegmentsScanned
	s.BytesTruncated += r.BytesTruncated
	s.Took += r.Took
}

// Recovery is what this log's Open did.
func (l *Log) Recovery() Recovery { return l.recovery }

// Recovered sums the recoveries of the logs opened so far that a crash had
// left: at the end of startup, what recovery did.
func (m *Manager) Recovered() RecoverySummary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recovered
}

// EachLog calls fn for every open log, outside the Manager's lock (for
// metrics read at scrape time).
func (m *Manager) EachLog(fn func(topic string, partition int32, l *Log)) {
	type entry struct {
		key partitionKey
		log *Log
	}
	m.mu.Lock()
	logs := make([]entry, 0, len(m.logs))
	for k, l := range m.logs {
		logs = append(logs, entry{k, l})
	}
	m.mu.Unlock()
	for _, e := range logs {
		fn(e.key.topic, e.key.partition, e.log)
	}
}
