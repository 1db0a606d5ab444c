package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"kbroker/internal/testkit"
)

// Debian's Python Kafka clients: kafka-python (python3-kafka, its own
// protocol code) and confluent-kafka (python3-confluent-kafka, on
// librdkafka). scripts/test installs both; they are packaged for Debian's
// own interpreter, which may not be the python3 first on PATH.

// pythonWith returns a python3 that can import module: Debian's
// /usr/bin/python3 first, then python3 on PATH. Locally a missing package
// skips the test; in CI (CI set) it fails it, since scripts/test installs
// the packages.
func pythonWith(t *testing.T, module, debianPackage string) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, py := range candidates {
		if exec.Command(py, "-c", "import "+module).Run() == nil {
			return py
		}
	}
	if os.Getenv("CI") == "" {
		t.Skipf("no python3 here imports %s (apt-get install %s; scripts/test does); set CI=1 to make this a failure", module, debianPackage)
	}
	t.Fatalf("no python3 imports %s under CI (tried %v)", module, candidates)
	return ""
}

// runPython runs a script of test/interop/python and decodes the JSON
// object it prints into out.
func runPython(t *testing.T, py, script string, out any, args ...string) {
	t.Helper()
	stdout := runCmd(t, 150*time.Second, "", py, append([]string{filepath.Join("python", script)}, args...)...)
	if err := json.Unmarshal([]byte(stdout), out); err != nil {
		t.Fatalf("%s %v printed %q: %v", script, args, stdout, err)
	}
}

// wantValues fails unless got holds exactly the values from..to-1, each
// once.
func wantValues(t *testing.T, what string, got []int, from, to int) {
	t.Helper()
	sorted := slices.Sorted(slices.Values(got))
	want := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		want = append(want, i)
	}
	if !slices.Equal(sorted, want) {
		t.Fatalf("%s: got %d values %v, want each of %d..%d once", what, len(got), sorted, from, to-1)
	}
}

// kafka-python produces (acks=all) and reads back what it produced.
func TestKafkaPythonRoundTrip(t *testing.T) {
	py := pythonWith(t, "kafka", "python3-kafka")
	addr := startBroker(t, nil)
	testkit.CreateTopic(t, newAdmin(t, addr), "kp-roundtrip", 3, nil)
	var res struct{ Values []int }
	runPython(t, py, "kafka_python.py", &res, "roundtrip", addr, "kp-roundtrip", "100")
	wantValues(t, "kafka-python read back", res.Values, 0, 100)
	if got := endOffsets(t, newAdmin(t, addr), "kp-roundtrip"); got[0]+got[1]+got[2] != 100 {
		t.Fatalf("end offsets %v, want 100 records in all", got)
	}
}

// Two kafka-python KafkaConsumers of one group split the partitions (the
// second joins once the first has records) and commit synchronously; the
// commits are what the broker keeps, and a second run reads only what was
// produced since.
func TestKafkaPythonConsumerGroup(t *testing.T) {
	py := pythonWith(t, "kafka", "python3-kafka")
	addr := startBroker(t, groupProps)
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "kp-group", 4, nil)
	produceN(t, addr, "kp-group", 0, 400)

	var res struct {
		Values                        []int
		FirstAssigned, SecondAssigned int
	}
	runPython(t, py, "kafka_python.py", &res, "group", addr, "kp-group", "kpg", "400")
	distinct := map[int]bool{}
	for _, v := range res.Values {
		distinct[v] = true
	}
	if len(distinct) != 400 {
		t.Fatalf("two kafka-python members saw %d distinct values, want 400", len(distinct))
	}
	if res.SecondAssigned == 0 || res.FirstAssigned == 0 || res.FirstAssigned+res.SecondAssigned != 4 {
		t.Fatalf("members held %d and %d partitions at the end, want the 4 split between both", res.FirstAssigned, res.SecondAssigned)
	}
	if got := committedTotal(t, adm, "kpg", "kp-group"); got != 400 {
		t.Fatalf("committed offsets sum to %d, want 400", got)
	}
	produceN(t, addr, "kp-group", 400, 440)
	runPython(t, py, "kafka_python.py", &res, "group", addr, "kp-group", "kpg", "40")
	for _, v := range res.Values {
		if v < 400 {
			t.Errorf("value %d consumed again after its commit", v)
		}
	}
}

// confluent-kafka produces (acks=all) and reads back what it produced.
func TestConfluentKafkaRoundTrip(t *testing.T) {
	py := pythonWith(t, "confluent_kafka", "python3-confluent-kafka")
	addr := startBroker(t, nil)
	testkit.CreateTopic(t, newAdmin(t, addr), "ck-roundtrip", 3, nil)
	var res struct{ Values []int }
	runPython(t, py, "confluent.py", &res, "roundtrip", addr, "ck-roundtrip", "100")
	wantValues(t, "confluent-kafka read back", res.Values, 0, 100)
}

// A confluent-kafka Consumer subscribes, commits each record, and closes;
// restarted, it resumes from its committed offsets and reads only the
// records produced since.
func TestConfluentKafkaConsumerResumesFromCommits(t *testing.T) {
	py := pythonWith(t, "confluent_kafka", "python3-confluent-kafka")
	addr := startBroker(t, groupProps)
	adm := newAdmin(t, addr)
	testkit.CreateTopic(t, adm, "ck-group", 3, nil)
	produceN(t, addr, "ck-group", 0, 60)

	var res struct{ Values []int }
	runPython(t, py, "confluent.py", &res, "group", addr, "ck-group", "ckg", "60")
	wantValues(t, "first run", res.Values, 0, 60)
	if got := committedTotal(t, adm, "ckg", "ck-group"); got != 60 {
		t.Fatalf("committed offsets sum to %d after the first run, want 60", got)
	}
	produceN(t, addr, "ck-group", 60, 90)
	runPython(t, py, "confluent.py", &res, "group", addr, "ck-group", "ckg", strconv.Itoa(1000))
	wantValues(t, "the restarted consumer", res.Values, 60, 90)
	if got := committedTotal(t, adm, "ckg", "ck-group"); got != 90 {
		t.Fatalf("committed offsets sum to %d after the second run, want 90", got)
	}
}
