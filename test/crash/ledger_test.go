package crash

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// ledger records what the broker acknowledged, resource by resource. A
// resource's state is a small integer naming the alteration that left it:
// the alteration's sequence number when it set values, 0 when it removed
// them (or nothing was ever set), 1 for "present" where only presence
// counts (an ACL group).
//
// Alterations of one resource are sent one at a time, so after a crash the
// resource must be in the state of its last acknowledged alteration or of
// one that was sent later and never answered: those are the only states a
// store that loses nothing acknowledged and applies each alteration whole
// can show.
type ledger struct {
	mu     sync.Mutex
	acked  map[string]int   // resource → state of its last acknowledged alteration
	maybe  map[string][]int // resource → states of unanswered alterations since
	acks   map[string]int   // stream → acknowledgements this round
	total  int              // acknowledged alterations, all rounds
	killed bool             // set just before the SIGKILL
	early  []string         // alterations refused or failed before the kill
	// unanswered counts resources found with an alteration in flight at
	// the kill, and applied how many of those the store had committed:
	// evidence that kills land mid-alteration, not only between them.
	unanswered, applied int
}

func newLedger() *ledger {
	return &ledger{acked: map[string]int{}, maybe: map[string][]int{}, acks: map[string]int{}}
}

// send notes that an alteration leaving res in state is about to be sent.
func (l *ledger) send(res string, state int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maybe[res] = append(l.maybe[res], state)
}

// done records the answer to an alteration of res: acknowledged when err is
// nil. A failure before the kill is a test failure (reported by round);
// after it, the alteration stays "maybe applied".
func (l *ledger) done(stream, res string, state int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if !l.killed {
			l.early = append(l.early, fmt.Sprintf("%s: %s → state %d: %v", stream, res, state, err))
		}
		return
	}
	l.acked[res] = state
	delete(l.maybe, res) // sent before this one and already answered with an error
	l.acks[stream]++
	l.total++
}

// ackedBy is how many alterations of stream were acknowledged this round.
func (l *ledger) ackedBy(stream string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks[stream]
}

func (l *ledger) setKilled(k bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = k
}

// newRound forgets the per-round counters and returns the early failures.
func (l *ledger) newRound() (early []string, acks map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	early, acks = l.early, l.acks
	l.early, l.acks = nil, map[string]int{}
	return early, acks
}

// stateOf is the state a resource was last acknowledged in (0 if never),
// or -1 while an alteration of it is unanswered.
func (l *ledger) stateOf(res string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.maybe[res]) > 0 {
		return -1
	}
	return l.acked[res]
}

// resources lists every resource with a known state, of a kind (prefix).
func (l *ledger) resources(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for r := range l.acked {
		if strings.HasPrefix(r, prefix) {
			out = append(out, r)
		}
	}
	for r := range l.maybe {
		if _, ok := l.acked[r]; !ok && strings.HasPrefix(r, prefix) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// check compares the state found after the restart with the states the
// resource may be in, reports a lost acknowledgement, and adopts what was
// found as the acknowledged state for later rounds.
func (l *ledger) check(t *testing.T, res string, got int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	want := l.acked[res]
	ok := got == want || slices.Contains(l.maybe[res], got)
	if len(l.maybe[res]) > 0 {
		l.unanswered++
		if got != want && ok {
			l.applied++
		}
	}
	if !ok {
		t.Errorf("%s: after the restart its state is %d; the last acknowledged alteration left %d (unanswered since: %v) — an acknowledged alteration was lost or an unknown one appeared",
			res, got, want, l.maybe[res])
	}
	l.acked[res] = got
	delete(l.maybe, res)
}

// valueKey is a config or quota key an alteration sets to base+seq, so
// every key of a resource says which alteration wrote it.
type valueKey struct {
	name string
	base int64
}

// stateOf is the alteration that left one resource's keys as found: the
// sequence number all of them carry, or 0 when none is set. Some keys set
// and others not, or keys of different alterations, is a half-applied
// alteration.
func stateOf(keys []valueKey, found map[string]string) (int, error) {
	state, set := -1, 0
	for _, k := range keys {
		v, ok := found[k.name]
		if !ok {
			continue
		}
		set++
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s=%q is not a number", k.name, v)
		}
		seq := int(int64(n) - k.base)
		if state >= 0 && seq != state {
			return 0, fmt.Errorf("half-applied: keys of alterations %d and %d side by side (%v)", state, seq, found)
		}
		state = seq
	}
	switch {
	case set == 0:
		return 0, nil
	case set < len(keys):
		return 0, fmt.Errorf("half-applied: %d of %d keys set (%v)", set, len(keys), found)
	}
	return state, nil
}
