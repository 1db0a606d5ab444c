package assignor

import (
	"fmt"
	"slices"
	"testing"
)

func tid(b byte) TopicID { return TopicID{b} }

func members(n int, topics ...TopicID) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = Member{ID: fmt.Sprintf("m%02d", i), Topics: topics}
	}
	return out
}

func count(a Assignment) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// checkComplete fails unless every partition of partitions is assigned to
// exactly one member.
func checkComplete(t *testing.T, got map[string]Assignment, partitions map[TopicID]int32) {
	t.Helper()
	seen := map[topicPartition]string{}
	for id, a := range got {
		for topic, ps := range a {
			for _, p := range ps {
				tp := topicPartition{topic, p}
				if other, dup := seen[tp]; dup {
					t.Fatalf("partition %v given to %s and %s", tp, other, id)
				}
				seen[tp] = id
			}
		}
	}
	total := 0
	for _, n := range partitions {
		total += int(n)
	}
	if len(seen) != total {
		t.Fatalf("%d of %d partitions assigned", len(seen), total)
	}
}

func TestUniformBalances(t *testing.T) {
	for _, tc := range []struct {
		members    int
		partitions map[TopicID]int32
	}{
		{3, map[TopicID]int32{tid(1): 6}},
		{4, map[TopicID]int32{tid(1): 6, tid(2): 3}},
		{7, map[TopicID]int32{tid(1): 100}},
		{10, map[TopicID]int32{tid(1): 3}},
	} {
		var topics []TopicID
		total := 0
		for id, n := range tc.partitions {
			topics = append(topics, id)
			total += int(n)
		}
		got := Uniform{}.Assign(members(tc.members, topics...), tc.partitions)
		checkComplete(t, got, tc.partitions)
		lo, hi := total, 0
		for _, a := range got {
			lo, hi = min(lo, count(a)), max(hi, count(a))
		}
		if hi-lo > 1 {
			t.Errorf("%d members over %v: counts from %d to %d", tc.members, tc.partitions, lo, hi)
		}
	}
}

// A member joining takes only what balance needs: every other member
// keeps all but what it must give.
func TestUniformIsSticky(t *testing.T) {
	parts := map[TopicID]int32{tid(1): 6}
	first := Uniform{}.Assign(members(2, tid(1)), parts)
	ms := members(3, tid(1))
	ms[0].Current, ms[1].Current = first["m00"], first["m01"]
	second := Uniform{}.Assign(ms, parts)
	checkComplete(t, second, parts)
	for _, id := range []string{"m00", "m01"} {
		kept := 0
		for _, p := range second[id][tid(1)] {
			for _, q := range first[id][tid(1)] {
				if p == q {
					kept++
				}
			}
		}
		if kept != 2 || count(second[id]) != 2 {
			t.Errorf("%s had %v, now %v: want 2 of its own kept", id, first[id], second[id])
		}
	}
	// A member leaving: the others keep theirs and split its partitions.
	ms = members(3, tid(1))[:2]
	ms[0].Current, ms[1].Current = second["m00"], second["m01"]
	third := Uniform{}.Assign(ms, parts)
	for _, id := range []string{"m00", "m01"} {
		for _, p := range second[id][tid(1)] {
			found := false
			for _, q := range third[id][tid(1)] {
				found = found || p == q
			}
			if !found {
				t.Errorf("%s lost partition %d when another member left", id, p)
			}
		}
	}
}

// Members subscribe to different topics: each gets only its topics.
func TestUniformHeterogeneous(t *testing.T) {
	parts := map[TopicID]int32{tid(1): 4, tid(2): 2}
	ms := []Member{{ID: "a", Topics: []TopicID{tid(1)}}, {ID: "b", Topics: []TopicID{tid(1), tid(2)}}, {ID: "c", Topics: []TopicID{tid(2)}}}
	got := Uniform{}.Assign(ms, parts)
	checkComplete(t, got, parts)
	if len(got["a"][tid(2)]) > 0 || len(got["c"][tid(1)]) > 0 {
		t.Fatalf("a member got a topic it does not subscribe to: %v", got)
	}
	for id, a := range got {
		if count(a) != 2 {
			t.Errorf("%s has %d partitions, want 2: %v", id, count(a), got)
		}
	}
}

func TestRangeCoPartitions(t *testing.T) {
	parts := map[TopicID]int32{tid(1): 5, tid(2): 5}
	got := Range{}.Assign(members(2, tid(1), tid(2)), parts)
	checkComplete(t, got, parts)
	want := map[string][]int32{"m00": {0, 1, 2}, "m01": {3, 4}}
	for id, ps := range want {
		for _, topic := range []TopicID{tid(1), tid(2)} {
			if fmt.Sprint(got[id][topic]) != fmt.Sprint(ps) {
				t.Errorf("%s topic %v: %v, want %v", id, topic[0], got[id][topic], ps)
			}
		}
	}
}

func TestNamed(t *testing.T) {
	if Named("uniform").Name() != "uniform" || Named("range").Name() != "range" || Named("sticky") != nil {
		t.Fatal("assignor names")
	}
}

// A member joining a range group: the others keep what their new share
// allows, and every partition still has one owner.
func TestRangeIsSticky(t *testing.T) {
	parts := map[TopicID]int32{tid(1): 6}
	first := Range{}.Assign(members(2, tid(1)), parts)
	ms := members(3, tid(1))
	ms[0].Current, ms[1].Current = first["m00"], first["m01"]
	second := Range{}.Assign(ms, parts)
	checkComplete(t, second, parts)
	for _, id := range []string{"m00", "m01"} {
		if count(second[id]) != 2 {
			t.Fatalf("%s has %v, want 2", id, second[id])
		}
		for _, p := range second[id][tid(1)] {
			if !slices.Contains(first[id][tid(1)], p) {
				t.Errorf("%s was moved to partition %d it did not have (had %v)", id, p, first[id])
			}
		}
	}
}
