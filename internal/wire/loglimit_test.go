package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

func TestRepeatedLineIsLoggedOncePerIntervalWithTheSuppressedCount(t *testing.T) {
	l := newLogLimiter(time.Minute)
	t0 := time.Now()
	if ok, n := l.allow("10.0.0.1", "closing connection: x", t0); !ok || n != 0 {
		t.Fatalf("first line: logged %v, suppressed %d; want logged, 0", ok, n)
	}
	for i := 1; i <= 5; i++ {
		if ok, _ := l.allow("10.0.0.1", "closing connection: x", t0.Add(time.Duration(i)*time.Second)); ok {
			t.Fatalf("repeat %d within the interval was logged", i)
		}
	}
	// Other clients and other lines have their own allowance.
	if ok, _ := l.allow("10.0.0.2", "closing connection: x", t0); !ok {
		t.Error("another client's line was suppressed")
	}
	if ok, _ := l.allow("10.0.0.1", "closing connection: y", t0); !ok {
		t.Error("another line of the same client was suppressed")
	}
	ok, n := l.allow("10.0.0.1", "closing connection: x", t0.Add(time.Minute))
	if !ok || n != 5 {
		t.Fatalf("first repeat after the interval: logged %v, suppressed %d; want logged, 5", ok, n)
	}
	if ok, _ := l.allow("10.0.0.1", "closing connection: x", t0.Add(time.Minute+time.Second)); ok {
		t.Fatal("the interval did not restart after the line was logged")
	}
}

func TestLogLimiterMemoryIsBounded(t *testing.T) {
	l := newLogLimiter(time.Minute)
	t0 := time.Now()
	for i := 0; i < 3*maxLimitedLines; i++ {
		if ok, _ := l.allow(strings.Repeat("c", i%50)+string(rune(i)), "line", t0); !ok {
			t.Fatalf("first line of client %d suppressed", i)
		}
	}
	if len(l.lines) > maxLimitedLines {
		t.Fatalf("limiter tracks %d lines, bound is %d", len(l.lines), maxLimitedLines)
	}
	// Once their intervals are over, the old lines make room for new ones.
	l.allow("new client", "line", t0.Add(time.Minute))
	if ok, _ := l.allow("new client", "line", t0.Add(time.Minute+time.Second)); ok {
		t.Fatal("a new client's repeat was not limited once old lines expired")
	}
}

// versionsOf serves exactly the listed APIs, at every version kmsg knows.
type versionsOf []kmsg.Key

func (v versionsOf) Supports(key int16) (min, max int16, ok bool) {
	for _, k := range v {
		if int16(k) == key {
			return 0, k.Request().MaxVersion(), true
		}
	}
	return 0, 0, false
}

func TestAnAPIThatIsNotServedIsNamedInTheError(t *testing.T) {
	frame := testkit.Header(int16(kmsg.LeaderAndISR), 0, 1, false)
	_, err := parseRequest(frame, versionsOf{kmsg.ApiVersions})
	if err == nil || !strings.Contains(err.Error(), "LeaderAndISR (key 4) is not served") {
		t.Fatalf("error = %v, want it to name LeaderAndISR (key 4)", err)
	}
	_, err = parseRequest(testkit.Header(999, 0, 1, false), versionsOf{kmsg.ApiVersions})
	if err == nil || !strings.Contains(err.Error(), "unknown API key 999") {
		t.Fatalf("error = %v, want unknown API key 999", err)
	}
}
