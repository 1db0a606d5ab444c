package storage

import (
	"encoding/binary"
	"fmt"
	"os"
)

// The aborted-transaction index: "<base>.txnindex" beside a segment, in
// Kafka's TransactionIndex layout. It lists the transactions aborted by a
// marker in that segment, each as a 34-byte entry: int16 version (0), int64
// producer id, int64 first offset, int64 last offset (the marker's) and int64
// last stable offset when the marker was written (the first offset of the
// next transaction still open, else the marker's offset + 1), which lets a
// search stop early. The file exists only once the segment has an entry, as
// Kafka creates it lazily. read_committed fetches return the entries that
// overlap what they read (collectAbortedTxns), so consumers can drop the
// aborted batches; the cleaner uses them to find aborted data.
//
// The entries are appended to the file (not synced) when an abort marker is
// written, and the file is rewritten and synced when its segment is sealed,
// with the segment; recovery of a segment above the producer snapshot
// rebuilds its entries from the batches it replays, so a crash never leaves
// an entry for a marker that was lost, or loses one for a marker that
// survived.
const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 2 + 8 + 8 + 8 + 8
)

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64 // the abort marker's offset
	LastStableOffset int64
}

func (t AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(t.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(t.LastStableOffset))
}

// decodeTxnIndex parses a .txnindex; a torn last entry (a crash during an
// append) is ignored, as recovery rewrites the file when it matters.
func decodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for ; len(b) >= txnIndexEntrySize; b = b[txnIndexEntrySize:] {
		if v := binary.BigEndian.Uint16(b); v != 0 {
			return nil, fmt.Errorf("%w: transaction index entry of version %d", ErrStorage, v)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		})
	}
	return out, nil
}

func encodeTxnIndex(txns []AbortedTxn) []byte {
	b := make([]byte, 0, len(txns)*txnIndexEntrySize)
	for _, t := range txns {
		b = t.appendTo(b)
	}
	return b
}

// txns returns the segment's aborted transactions, reading its .txnindex on
// first use. The slice is never modified in place (appends copy), so a
// caller may keep it.
func (s *segment) txns() ([]AbortedTxn, error) {
	s.tmu.RLock()
	if s.txnLoaded {
		t := s.txnList
		s.tmu.RUnlock()
		return t, nil
	}
	s.tmu.RUnlock()
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if err := s.loadTxnsLocked(); err != nil {
		return nil, err
	}
	return s.txnList, nil
}

func (s *segment) loadTxnsLocked() error {
	if s.txnLoaded {
		return nil
	}
	b, err := os.ReadFile(s.path + txnIndexSuffix)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("%w: reading %s%s: %v", ErrStorage, s.path, txnIndexSuffix, err)
	}
	list, err := decodeTxnIndex(b)
	if err != nil {
		return err
	}
	s.txnList, s.txnLoaded = list, true
	return nil
}

// addAbortedTxn appends an entry, in memory and to the file (unsynced: seal
// syncs it, recovery rebuilds it).
func (s *segment) addAbortedTxn(t AbortedTxn) error {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if err := s.loadTxnsLocked(); err != nil {
		return err
	}
	s.txnList = append(s.txnList[:len(s.txnList):len(s.txnList)], t)
	f, err := os.OpenFile(s.path+txnIndexSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	_, err = f.Write(t.appendTo(nil))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: writing %s%s: %v", ErrStorage, s.path, txnIndexSuffix, err)
	}
	return nil
}

// resetTxnsFrom drops the entries whose marker is at or past from (recovery
// replays those markers again) and returns whether any was dropped.
func (s *segment) resetTxnsFrom(from int64) (bool, error) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if err := s.loadTxnsLocked(); err != nil {
		return false, err
	}
	var kept []AbortedTxn
	for _, t := range s.txnList {
		if t.LastOffset < from {
			kept = append(kept, t)
		}
	}
	changed := len(kept) != len(s.txnList)
	s.txnList = kept
	return changed, nil
}

// syncTxnIndex rewrites the .txnindex whole from memory, synced (seal, and
// recovery once it rebuilt the entries). A segment without entries has no
// file.
func (s *segment) syncTxnIndex(sync bool) error {
	s.tmu.RLock()
	loaded, list := s.txnLoaded, s.txnList
	s.tmu.RUnlock()
	if !loaded {
		return nil // never read or written: the file, if any, is as sealed
	}
	p := s.path + txnIndexSuffix
	if len(list) == 0 {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("%w: %v", ErrStorage, err)
		}
		return nil
	}
	if err := writeFile(p, encodeTxnIndex(list), sync); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrStorage, p, err)
	}
	return nil
}

// collectAbortedTxns returns the aborted transactions of the segments from
// segs[i] on that overlap [fetchOffset, upperBound): their marker at or
// after fetchOffset, their first offset below upperBound (Kafka's
// TransactionIndex.collectAbortedTxns over the segments of UnifiedLog's
// collectAbortedTransactions). The walk ends at the first entry whose last
// stable offset reaches upperBound: every transaction open below it had
// ended by then, so no later entry can overlap. Without one it goes on to
// the last segment, since a transaction read here may end much later.
func collectAbortedTxns(segs []*segment, i int, fetchOffset, upperBound int64) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for ; i < len(segs); i++ {
		list, err := segs[i].txns()
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			if t.LastOffset >= fetchOffset && t.FirstOffset < upperBound {
				out = append(out, t)
			}
			if t.LastStableOffset >= upperBound {
				return out, nil
			}
		}
	}
	return out, nil
}
