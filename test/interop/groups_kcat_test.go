package interop

import (
	"kbroker/internal/testkit"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcat -G (librdkafka's balanced consumer: FindCoordinator, JoinGroup v5,
// SyncGroup v3, OffsetCommit/OffsetFetch v7, LeaveGroup v1 in kcat 1.7)
// reads a topic as a group member, commits on exit, and a second run of
// the same group reads only what was produced since.
func TestKcatGroupConsumer(t *testing.T) {
	kcat := testkit.KcatPath(t)
	addr := startBroker(t, groupProps)
	testkit.CreateTopic(t, newAdmin(t, addr), "kcat-group", 3, nil)
	produceN(t, addr, "kcat-group", 0, 30)

	consume := func() []int {
		out := runCmd(t, 60*time.Second, "", kcat, "-b", addr, "-G", "kg", "kcat-group",
			"-X", "auto.offset.reset=earliest", "-e", "-q", "-f", `%s\n`)
		var got []int
		for _, line := range strings.Fields(out) {
			n, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("kcat printed %q", line)
			}
			got = append(got, n)
		}
		slices.Sort(got)
		return got
	}
	if got := consume(); len(got) != 30 || got[0] != 0 || got[29] != 29 {
		t.Fatalf("first kcat -G run read %v, want 0..29", got)
	}
	produceN(t, addr, "kcat-group", 30, 40)
	if got := consume(); len(got) != 10 || got[0] != 30 {
		t.Fatalf("second kcat -G run read %v, want only 30..39 (the first run's commits)", got)
	}
}
