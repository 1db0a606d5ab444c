package txncheck

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/record"
)

// What a killed broker left on disk, read from its files before the restart
// (a SIGKILL loses nothing the process had written: the page cache keeps
// it). The checker uses it only to say where in a transaction each kill
// landed — no marker yet, some markers, all markers — since the binary has
// no hook that stops it at a chosen point.

// storedBatch is one batch of a partition log with the values of its
// records (data batches) or its marker (control batches).
type storedBatch struct {
	offset     int64
	producerID int64
	control    bool
	commit     bool     // control: a commit marker
	values     []string // data: the record values
}

// readPartition reads every segment of one partition directory in offset
// order. A torn last batch (the kill landed in a write) ends the read.
func readPartition(dir string) ([]storedBatch, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(segs) // zero-padded base offsets sort as numbers
	var out []storedBatch
	for _, seg := range segs {
		raw, err := os.ReadFile(seg)
		if err != nil {
			return nil, err
		}
		for len(raw) > 0 {
			h, ok := record.ParseHeader(raw)
			if !ok || h.Size <= 0 || h.Size > int64(len(raw)) {
				break
			}
			batch := raw[:h.Size]
			raw = raw[h.Size:]
			sb := storedBatch{offset: h.BaseOffset, producerID: h.ProducerID, control: h.IsControl()}
			if sb.control {
				m, ok, err := record.ParseMarker(batch, &h)
				if err != nil || !ok {
					continue
				}
				sb.commit = m.Commit
			} else {
				sec, err := record.Section(batch, &h)
				if err != nil {
					return nil, fmt.Errorf("%s at %d: %w", seg, h.BaseOffset, err)
				}
				rr := record.NewReader(sec, h.NumRecords)
				var rec record.Record
				for rr.Next(&rec) {
					sb.values = append(sb.values, string(rec.Value))
				}
			}
			out = append(out, sb)
		}
	}
	return out, nil
}

// lastTxnStates reads `__transaction_state` and returns the last state
// recorded per transactional id.
func lastTxnStates(dataDir string) (map[string]kmsg.TransactionState, error) {
	dirs, err := filepath.Glob(filepath.Join(dataDir, "__transaction_state-*"))
	if err != nil {
		return nil, err
	}
	out := map[string]kmsg.TransactionState{}
	for _, dir := range dirs {
		segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		sort.Strings(segs)
		for _, seg := range segs {
			raw, err := os.ReadFile(seg)
			if err != nil {
				return nil, err
			}
			for len(raw) > 0 {
				h, ok := record.ParseHeader(raw)
				if !ok || h.Size <= 0 || h.Size > int64(len(raw)) {
					break
				}
				batch := raw[:h.Size]
				raw = raw[h.Size:]
				if h.IsControl() {
					continue
				}
				sec, err := record.Section(batch, &h)
				if err != nil {
					return nil, err
				}
				rr := record.NewReader(sec, h.NumRecords)
				var rec record.Record
				for rr.Next(&rec) {
					var k kmsg.TxnMetadataKey
					if k.ReadFrom(rec.Key) != nil {
						continue
					}
					if rec.Value == nil {
						delete(out, k.TransactionalID)
						continue
					}
					var v kmsg.TxnMetadataValue
					if v.ReadFrom(rec.Value) == nil {
						out[k.TransactionalID] = v.State
					}
				}
			}
		}
	}
	return out, nil
}

// killPoint classifies where a kill landed for one transaction whose
// EndTxn(commit) was in flight: how many of its partitions hold its data
// and how many of those a marker of its producer already closed, and the
// coordinator's last persisted state of its transactional id.
func killPoint(dataDir, topic string, tx *txnRecord, states map[string]kmsg.TransactionState) (phase, state string) {
	withData, marked := 0, 0
	for part, values := range tx.values {
		batches, err := readPartition(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, part)))
		if err != nil || len(values) == 0 {
			continue
		}
		first := values[0]
		var pid int64 = -1
		var at int64
		for _, b := range batches {
			if !b.control && len(b.values) > 0 && containsString(b.values, first) {
				pid, at = b.producerID, b.offset
			}
		}
		if pid < 0 {
			continue
		}
		withData++
		for _, b := range batches {
			if b.control && b.producerID == pid && b.offset > at {
				marked++
				break
			}
		}
	}
	state = "none"
	if s, ok := states[tx.txnID]; ok {
		state = s.String()
	}
	switch {
	case withData == 0:
		return "no data on disk", state
	case marked == 0:
		return "no marker yet", state
	case marked < withData:
		return "between markers", state
	default:
		return "all markers written", state
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
