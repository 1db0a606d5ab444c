package wire

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// A client that misbehaves in a loop (reconnecting to send the same request
// the broker refuses, failing SASL with the same password) would log the same
// line at every attempt: one kafka-python consumer polling for an API kbroker
// does not serve made hundreds of lines a minute, drowning everything else.
// So per-connection lines are limited per client and message: the first is
// logged, then at most one per logLimitInterval, which says how many like it
// were suppressed meanwhile.
const (
	logLimitInterval = 30 * time.Second
	// maxLimitedLines bounds the limiter's memory whatever the number of
	// clients; past it, lines whose interval is over are forgotten, and if
	// none is, new lines are logged unlimited rather than tracked.
	maxLimitedLines = 4096
)

// logLimiter decides which repeats of a line are logged.
type logLimiter struct {
	interval time.Duration
	mu       sync.Mutex
	lines    map[limitedLineKey]*limitedLine
}

type limitedLineKey struct{ client, line string }

type limitedLine struct {
	next       time.Time // when the next repeat may be logged
	suppressed int       // repeats not logged since the last one that was
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, lines: map[limitedLineKey]*limitedLine{}}
}

// allow reports whether the line of client may be logged now, and if so how
// many repeats of it were suppressed since it last was.
func (l *logLimiter) allow(client, line string, now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := limitedLineKey{client, line}
	if e := l.lines[key]; e != nil {
		if now.Before(e.next) {
			e.suppressed++
			return false, 0
		}
		suppressed, e.suppressed, e.next = e.suppressed, 0, now.Add(l.interval)
		return true, suppressed
	}
	if len(l.lines) >= maxLimitedLines {
		l.forgetExpired(now)
		if len(l.lines) >= maxLimitedLines {
			return true, 0
		}
	}
	l.lines[key] = &limitedLine{next: now.Add(l.interval)}
	return true, 0
}

// forgetExpired drops the lines whose interval is over: their next repeat
// would be logged anyway. Suppressed counts they held are lost.
func (l *logLimiter) forgetExpired(now time.Time) {
	for k, e := range l.lines {
		if !now.Before(e.next) {
			delete(l.lines, k)
		}
	}
}

// logLimited logs msg with args on c's logger unless the same line from the
// same client (its IP address: a reconnecting client gets a new port each
// time) was logged less than an interval ago.
func (c *Conn) logLimited(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !c.log.Enabled(ctx, level) {
		return
	}
	ok, suppressed := c.srv.logLimits.allow(c.RemoteIP(), fmt.Sprint(append([]any{msg}, args...)...), time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	c.log.Log(ctx, level, msg, args...)
}
