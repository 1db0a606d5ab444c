package replcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"kbroker/internal/record"
)

// entry is one record of a replica's log, as its segment files hold it.
type entry struct {
	offset int64
	epoch  int32
	value  string
}

// readReplica reads every record of topic-partition from a broker's data
// directory, straight from its segment files (in base-offset order, which
// their zero-padded names sort in), stopping at the first bytes that are
// not a whole batch (the unwritten end of the active segment).
func readReplica(dataDir string, partition int32) ([]entry, error) {
	segs, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(segs)
	var out []entry
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			return nil, err
		}
		for len(b) > 0 {
			h, ok := record.ParseHeader(b)
			if !ok || h.Size > int64(len(b)) || !record.ValidCRC(b[:h.Size]) {
				break
			}
			batch := b[:h.Size]
			b = b[h.Size:]
			if h.IsControl() {
				continue
			}
			section, err := record.Section(batch, &h)
			if err != nil {
				return nil, err
			}
			r := record.NewReader(section, h.NumRecords)
			var rec record.Record
			for r.Next(&rec) {
				out = append(out, entry{offset: h.BaseOffset + int64(rec.OffsetDelta), epoch: h.LeaderEpoch, value: string(rec.Value)})
			}
			if err := r.Err(); err != nil {
				return nil, fmt.Errorf("%s: batch at %d: %v", seg, h.BaseOffset, err)
			}
		}
	}
	return out, nil
}

// ack is one record a producer sent and what became of it.
type ack struct {
	producer, seq int
	partition     int32
	offset        int64 // the acknowledged offset; -1 if it failed
	err           string
}

// value is the record's value: who wrote it, and its place in that
// producer's sequence for the partition.
func value(producer, seq int) string { return fmt.Sprintf("p%d-%d", producer, seq) }

// parseValue is value's inverse; ok is false for a value not of this run.
func parseValue(v string) (producer, seq int, ok bool) {
	p, s, found := strings.Cut(strings.TrimPrefix(v, "p"), "-")
	if !found || !strings.HasPrefix(v, "p") {
		return 0, 0, false
	}
	pi, err1 := strconv.Atoi(p)
	si, err2 := strconv.Atoi(s)
	return pi, si, err1 == nil && err2 == nil
}

// seen is one record a consumer read during the run.
type seen struct {
	partition int32
	offset    int64
	value     string
}

// verify checks a run: logs are the final log of each partition on each
// replica (by broker), acks every record sent, reads what the consumer
// read in order, with the anomalies it noticed while reading (offsets
// going back or skipped). It returns the anomalies.
func verify(logs map[int32]map[int32][]entry, acks []ack, reads []seen, consumerAnomalies []string) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	out = append(out, consumerAnomalies...)
	// The replicas of a partition hold the same records at the same
	// offsets; the first broker's log is the reference for the rest.
	final := map[int32]map[int64]string{}
	for p, byBroker := range logs {
		ids := make([]int32, 0, len(byBroker))
		for id := range byBroker {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		ref := byBroker[ids[0]]
		final[p] = map[int64]string{}
		for i, e := range ref {
			if e.offset != ref[0].offset+int64(i) {
				add("partition %d, broker %d: offset %d follows offset %d", p, ids[0], e.offset, ref[i-1].offset)
			}
			final[p][e.offset] = e.value
		}
		for _, id := range ids[1:] {
			other := byBroker[id]
			if len(other) != len(ref) {
				add("partition %d: broker %d holds %d records, broker %d holds %d", p, ids[0], len(ref), id, len(other))
			}
			for i := range min(len(other), len(ref)) {
				if other[i] != ref[i] {
					add("partition %d: replicas differ at offset %d: broker %d has %q (epoch %d), broker %d has %q (epoch %d)",
						p, ref[i].offset, ids[0], ref[i].value, ref[i].epoch, id, other[i].value, other[i].epoch)
					break
				}
			}
		}
		// Exactly once, and in each producer's order.
		where := map[string]int64{}
		last := map[int]int{}
		for _, e := range ref {
			if prev, dup := where[e.value]; dup {
				add("partition %d: %q at offsets %d and %d (duplicate)", p, e.value, prev, e.offset)
			}
			where[e.value] = e.offset
			if prod, seq, ok := parseValue(e.value); ok {
				if l, had := last[prod]; had && seq <= l {
					add("partition %d: producer %d's record %d at offset %d after its record %d (out of order)", p, prod, seq, e.offset, l)
				}
				last[prod] = seq
			}
		}
	}
	// Every acknowledged record is where its acknowledgement said.
	for _, a := range acks {
		if a.offset < 0 {
			continue
		}
		v := value(a.producer, a.seq)
		if got, ok := final[a.partition][a.offset]; !ok {
			add("partition %d: acknowledged %q at offset %d is lost (the log ends before it)", a.partition, v, a.offset)
		} else if got != v {
			add("partition %d: acknowledged %q at offset %d, the log has %q there (lost)", a.partition, v, a.offset, got)
		}
	}
	// What consumers read was committed: it is still there.
	for _, r := range reads {
		if got, ok := final[r.partition][r.offset]; !ok || got != r.value {
			add("partition %d: a consumer read %q at offset %d, which later vanished (the log has %q)", r.partition, r.value, r.offset, got)
		}
	}
	return out
}
