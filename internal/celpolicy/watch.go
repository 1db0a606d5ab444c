package celpolicy

import (
	"context"
	"log/slog"
	"os"
	"time"
)

// WatchFile re-reads path whenever its modification time or size changes,
// polling every interval until ctx ends: a new rule set is compiled
// whole before it replaces the one in effect, and one that does not
// compile (or a file that cannot be read) leaves the rules in effect as
// they are and is logged. The caller has loaded the file once already.
func (e *Engine) WatchFile(ctx context.Context, path string, interval time.Duration, log *slog.Logger) {
	last, _ := os.Stat(path)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			if last != nil {
				log.Error("policy file cannot be read; the rules in effect stay", "file", path, "err", err)
			}
			last = nil
			continue
		}
		if last != nil && fi.ModTime().Equal(last.ModTime()) && fi.Size() == last.Size() {
			continue
		}
		last = fi
		set, err := LoadFile(path)
		if err != nil {
			log.Error("policy file changed but does not compile; the rules in effect stay", "file", path, "err", err)
			continue
		}
		e.Swap(set)
		log.Info("policy rules reloaded", "file", path, "rules", len(set.Rules))
	}
}
