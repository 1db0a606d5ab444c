package group

import (
	"context"
	"testing"
	"time"
)

// A group with members loses only the deleted topic's offsets: it is not
// Empty, so it stays, with its generation and members, also after a
// restart replays the tombstones.
func TestTopicsDeletedKeepsAGroupWithMembers(t *testing.T) {
	h := newHarness(t, testConfig())
	a, _ := h.stableTwoMembers("g")
	if code := h.commit(8, "g", a, 2, 42); code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	if code := h.commit(8, "simple", "", -1, 7); code != 0 {
		t.Fatalf("simple commit: error %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.c.TopicsDeleted(ctx, []string{"t", "never-committed"})

	for round, when := range []string{"after the deletion", "after a restart"} {
		if round == 1 {
			h.restart(testConfig())
		}
		if got := h.fetched("g"); got != -1 {
			t.Errorf("%s: group g has offset %d for the deleted topic, want -1", when, got)
		}
		g := h.group("g")
		if g == nil || len(g.members) != 2 || g.generation != 2 {
			t.Fatalf("%s: group g is %+v, want its 2 members at generation 2", when, g)
		}
		if h.group("simple") != nil {
			t.Errorf("%s: the memberless group left with no offsets still exists", when)
		}
	}
}
