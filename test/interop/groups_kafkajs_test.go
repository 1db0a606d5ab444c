package interop

import (
	"encoding/json"
	"kbroker/internal/testkit"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// kafkajs's consumer.run (JoinGroup v5, SyncGroup v3, OffsetCommit v5,
// OffsetFetch v4): one member starts alone, a second joins and is given
// partitions, both commit; run again, the group reads only what was
// produced since.
func TestKafkajsConsumerGroup(t *testing.T) {
	node, _ := kafkajsScript(t)
	script := filepath.Join("node", "group.js")
	addr := startBroker(t, groupProps)
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "kjs-group", 4, nil)
	produceN(t, addr, "kjs-group", 0, 400)

	run := func(want int) (values []int, secondAssigned int) {
		out := runCmd(t, 90*time.Second, "", node, script, addr, "kjs-group", "kg", strconv.Itoa(want))
		var res struct {
			Values         []string `json:"values"`
			SecondAssigned int      `json:"secondAssigned"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("group.js output: %v\n%s", err, out)
		}
		for _, v := range res.Values {
			n, _ := strconv.Atoi(v)
			values = append(values, n)
		}
		return values, res.SecondAssigned
	}
	values, assigned := run(400)
	distinct := map[int]bool{}
	for _, v := range values {
		distinct[v] = true
	}
	if len(distinct) != 400 || assigned == 0 {
		t.Fatalf("two kafkajs members saw %d distinct values, the second was assigned %d partitions; want 400 and > 0", len(distinct), assigned)
	}
	if got := committedTotal(t, adm, "kg", "kjs-group"); got != 400 {
		t.Fatalf("committed offsets sum to %d, want 400", got)
	}
	produceN(t, addr, "kjs-group", 400, 440)
	values, _ = run(40)
	for _, v := range values {
		if v < 400 {
			t.Errorf("value %d consumed again after its commit", v)
		}
	}
}
