package testkit

import (
	"maps"
	"sync"
)

// AckedRecords is every record a producer was told was stored (acks=all):
// partition → offset → value. Safe for concurrent use: producers Add from
// their callbacks while a check reads Stored.
type AckedRecords struct {
	mu     sync.Mutex
	byPart map[int32]map[int64]string
}

// Add notes that value v was acknowledged at offset off of partition p.
func (a *AckedRecords) Add(p int32, off int64, v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byPart == nil {
		a.byPart = map[int32]map[int64]string{}
	}
	if a.byPart[p] == nil {
		a.byPart[p] = map[int64]string{}
	}
	a.byPart[p][off] = v
}

// Count is how many records were acknowledged.
func (a *AckedRecords) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, m := range a.byPart {
		n += len(m)
	}
	return n
}

// Stored is a copy of the acknowledged records by partition and offset.
func (a *AckedRecords) Stored() map[int32]map[int64]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int32]map[int64]string, len(a.byPart))
	for p, offs := range a.byPart {
		out[p] = maps.Clone(offs)
	}
	return out
}
