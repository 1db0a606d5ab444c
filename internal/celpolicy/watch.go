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
//
// A change is loaded once the file has stayed the same for one interval,
// so that a file being written (truncated, then filled) is not read half
// way; writing a new file and renaming it over the old one is safer still.
func (e *Engine) WatchFile(ctx context.Context, path string, interval time.Duration, log *slog.Logger) {
	loaded, _ := os.Stat(path)
	var seen os.FileInfo // the last stat, to see the file settle
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
			if loaded != nil {
				log.Error("policy file cannot be read; the rules in effect stay", "file", path, "err", err)
			}
			loaded, seen = nil, nil
			continue
		}
		settled := sameFile(fi, seen)
		seen = fi
		if sameFile(fi, loaded) || !settled {
			continue
		}
		loaded = fi
		set, err := LoadFile(path)
		if err != nil {
			log.Error("policy file changed but does not compile; the rules in effect stay", "file", path, "err", err)
			continue
		}
		e.Swap(set)
		log.Info("policy rules reloaded", "file", path, "rules", len(set.Rules))
	}
}

func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size() && os.SameFile(a, b)
}
