// Package logging gives each part of the broker a named logger whose level
// can change at runtime, the way Kafka's log4j loggers can through the
// BROKER_LOGGER config resource (KIP-412).
package logging

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Root is the logger every other one inherits its level from.
const Root = "root"

// Loggers hands out named loggers and holds their levels.
type Loggers struct {
	base slog.Handler

	mu     sync.Mutex
	root   *slog.LevelVar
	levels map[string]*levelState // by logger name
}

type levelState struct {
	own *slog.LevelVar // the level set for this logger, if set
	set atomic.Bool    // false: inherit the root level
}

// New returns loggers writing to base, all at level until changed.
func New(base slog.Handler, level slog.Level) *Loggers {
	root := new(slog.LevelVar)
	root.Set(level)
	return &Loggers{base: base, root: root, levels: map[string]*levelState{}}
}

// Logger returns the logger called name (e.g. "kbroker.wire").
func (l *Loggers) Logger(name string) *slog.Logger {
	l.mu.Lock()
	st := l.state(name)
	l.mu.Unlock()
	return slog.New(&handler{inner: l.base.WithAttrs([]slog.Attr{slog.String("logger", name)}), loggers: l, st: st})
}

func (l *Loggers) state(name string) *levelState {
	st, ok := l.levels[name]
	if !ok {
		st = &levelState{own: new(slog.LevelVar)}
		l.levels[name] = st
	}
	return st
}

// Names lists every logger, root first.
func (l *Loggers) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := []string{Root}
	for n := range l.levels {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// Has reports whether name is a known logger.
func (l *Loggers) Has(name string) bool {
	if name == Root {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.levels[name]
	return ok
}

// Level is the effective level of name, in Kafka's words (INFO, DEBUG…).
func (l *Loggers) Level(name string) string {
	if name == Root {
		return levelName(l.root.Level())
	}
	l.mu.Lock()
	st := l.state(name)
	l.mu.Unlock()
	return levelName(l.effective(st))
}

func (l *Loggers) effective(st *levelState) slog.Level {
	if st.set.Load() {
		return st.own.Level()
	}
	return l.root.Level()
}

// SetLevel sets name's level from a Kafka level name.
func (l *Loggers) SetLevel(name, level string) error {
	lv, err := ParseLevel(level)
	if err != nil {
		return err
	}
	if name == Root {
		l.root.Set(lv)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.state(name)
	st.own.Set(lv)
	st.set.Store(true)
	return nil
}

// ResetLevel makes name inherit the root level again. The root itself
// cannot be reset (Kafka refuses that too).
func (l *Loggers) ResetLevel(name string) error {
	if name == Root {
		return fmt.Errorf("removing the log level of the root logger is not allowed")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state(name).set.Store(false)
	return nil
}

// Kafka's log4j levels and their slog equivalents.
var levels = []struct {
	name  string
	level slog.Level
}{
	{"TRACE", slog.LevelDebug - 4},
	{"DEBUG", slog.LevelDebug},
	{"INFO", slog.LevelInfo},
	{"WARN", slog.LevelWarn},
	{"ERROR", slog.LevelError},
	{"FATAL", slog.LevelError + 4},
}

// ParseLevel accepts a Kafka level name (case-insensitive).
func ParseLevel(s string) (slog.Level, error) {
	for _, l := range levels {
		if strings.EqualFold(s, l.name) {
			return l.level, nil
		}
	}
	return 0, fmt.Errorf("%s is not a valid log level: it must be one of FATAL, ERROR, WARN, INFO, DEBUG, TRACE", s)
}

func levelName(lv slog.Level) string {
	name := levels[0].name
	for _, l := range levels {
		if lv >= l.level {
			name = l.name
		}
	}
	return name
}

// handler filters records by its logger's effective level.
type handler struct {
	inner   slog.Handler
	loggers *Loggers
	st      *levelState
}

func (h *handler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= h.loggers.effective(h.st) && h.inner.Enabled(ctx, lv)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{inner: h.inner.WithAttrs(attrs), loggers: h.loggers, st: h.st}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name), loggers: h.loggers, st: h.st}
}
