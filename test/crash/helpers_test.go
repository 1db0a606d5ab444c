// Package crash runs the real kbroker binary under the conditions a broker
// meets in production and a unit test cannot make: SIGKILL in the middle of
// admin alterations and produce traffic (every acknowledged change must
// survive, none half-applied), and resource exhaustion by hostile or idle
// clients (memory and connections stay bounded, well-behaved clients are
// still served). The binary is built once per package run; the tests of
// the request memory pool run the broker in-process, so that -race
// watches it.
package crash

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }

// proc is one run of the kbroker binary, with what these tests read of a
// running broker: its metrics and its memory.
type proc struct{ *testbin.Proc }

// newBroker makes a broker directory (its log printed if the test fails);
// sasl adds a SASL_PLAINTEXT listener.
func newBroker(t *testing.T, props map[string]string, sasl bool) *testbin.Broker {
	t.Helper()
	b := testbin.NewBroker(t, props)
	b.SASL = sasl
	return b
}

// run starts the broker and waits until it accepts connections.
func run(t *testing.T, b *testbin.Broker) proc {
	t.Helper()
	return proc{b.Start(t)}
}

// scrape reads the broker's /metrics and returns the unlabelled samples
// and the sum over labels of the labelled ones, by metric name.
func (p proc) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(testkit.ScrapeMetrics(t, p.MetricsAddr), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			// Labels may hold spaces; the value follows the closing brace.
			j := strings.LastIndexByte(line, '}')
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err == nil {
			out[name] += v
		}
	}
	return out
}

// statusBytes reads a "VmRSS:"-style line of /proc/<pid>/status, in bytes.
func (p proc) statusBytes(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		t.Fatalf("read /proc status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				t.Fatalf("parse %s: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.Pid())
	return 0
}
