package txncheck

import (
	"strings"
	"testing"
)

// The checker can fail: each kind of anomaly, planted in what a
// read_committed consumer saw, is reported.
func TestVerifyFindsAnomalies(t *testing.T) {
	history := func() *history {
		h := &history{txns: map[string]*txnRecord{}, inEndTxn: map[string]*txnRecord{}}
		add := func(id string, seq, status int, values map[int32][]string) {
			h.txns[id] = &txnRecord{txnID: strings.Split(id, "/")[0], seq: seq, status: status, values: values}
		}
		add("a/0", 0, stCommitted, map[int32][]string{0: {"a/0/0", "a/0/1"}, 1: {"a/0/2"}})
		add("a/1", 1, stNotCommitted, map[int32][]string{0: {"a/1/0"}})
		add("a/2", 2, stCommitUnknown, map[int32][]string{0: {"a/2/0"}, 1: {"a/2/1"}})
		add("a/3", 3, stCommitted, map[int32][]string{1: {"a/3/0"}})
		return h
	}
	good := map[int32][]string{0: {"a/0/0", "a/0/1"}, 1: {"a/0/2", "a/3/0"}}
	if got := verify(history(), good); len(got) != 0 {
		t.Fatalf("a correct read reported anomalies: %v", got)
	}
	for name, tc := range map[string]struct {
		seen map[int32][]string
		want string
	}{
		"aborted record read": {map[int32][]string{0: {"a/0/0", "a/0/1", "a/1/0"}, 1: {"a/0/2", "a/3/0"}}, "never committed"},
		"duplicate":           {map[int32][]string{0: {"a/0/0", "a/0/1", "a/0/1"}, 1: {"a/0/2", "a/3/0"}}, "read twice"},
		"partial commit":      {map[int32][]string{0: {"a/0/0", "a/0/1"}, 1: {"a/3/0"}}, "2 of its 3 records"},
		"out of order":        {map[int32][]string{0: {"a/0/1", "a/0/0"}, 1: {"a/0/2", "a/3/0"}}, "out of order"},
		"unknown half read":   {map[int32][]string{0: {"a/0/0", "a/0/1", "a/2/0"}, 1: {"a/0/2", "a/3/0"}}, "not all or none"},
		"never produced":      {map[int32][]string{0: {"a/0/0", "a/0/1", "zz"}, 1: {"a/0/2", "a/3/0"}}, "never produced"},
	} {
		got := verify(history(), tc.seen)
		if !strings.Contains(strings.Join(got, "\n"), tc.want) {
			t.Errorf("%s: anomalies %v, want one saying %q", name, got, tc.want)
		}
	}
}
