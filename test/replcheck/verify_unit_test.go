package replcheck

import (
	"strings"
	"testing"
)

// The checker can fail: each kind of anomaly planted in a small history
// is reported, and a clean history has none.
func TestVerifyReportsEachAnomaly(t *testing.T) {
	log := func(values ...string) []entry {
		out := make([]entry, len(values))
		for i, v := range values {
			out[i] = entry{offset: int64(i), value: v}
		}
		return out
	}
	clean := log("p0-0", "p1-0", "p0-1")
	same := func(l []entry) map[int32][]entry { return map[int32][]entry{1: l, 2: l, 3: l} }
	acks := []ack{{producer: 0, seq: 0, offset: 0}, {producer: 1, seq: 0, offset: 1}, {producer: 0, seq: 1, offset: 2}}
	if got := verify(map[int32]map[int32][]entry{0: same(clean)}, acks, []seen{{0, 1, "p1-0"}}, nil); len(got) != 0 {
		t.Fatalf("clean history: %v", got)
	}
	for _, c := range []struct {
		name  string
		logs  map[int32][]entry
		acks  []ack
		reads []seen
		want  string
	}{
		{"lost at the end", same(log("p0-0", "p1-0")), acks, nil, "is lost"},
		{"lost, replaced", same(log("p0-0", "p1-0", "p2-0")), acks, nil, "the log has \"p2-0\" there"},
		{"duplicate", same(log("p0-0", "p1-0", "p0-1", "p0-1")), acks, nil, "duplicate"},
		{"out of order", same(log("p0-1", "p1-0", "p0-0")), nil, nil, "out of order"},
		{"replicas differ", map[int32][]entry{1: clean, 2: clean, 3: log("p0-0", "p1-0", "p9-9")}, nil, nil, "replicas differ at offset 2"},
		{"replica short", map[int32][]entry{1: clean, 2: clean, 3: log("p0-0")}, nil, nil, "broker 3 holds 1"},
		{"read vanished", same(clean), nil, []seen{{0, 2, "p7-7"}}, "later vanished"},
	} {
		got := verify(map[int32]map[int32][]entry{0: c.logs}, c.acks, c.reads, nil)
		if !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%s: anomalies %v, want one with %q", c.name, got, c.want)
		}
	}
}
