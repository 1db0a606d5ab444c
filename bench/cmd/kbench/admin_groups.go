package main

// G4 (issue 15), kbroker only: committed offsets of many groups — how long
// the group coordinator takes to replay them from `__consumer_offsets`
// after a restart, and what a group costs in memory.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"kbroker/bench/admin"
	"kbroker/bench/broker"
)

var (
	g4Groups     = flag.Int("groups", 10000, "admin suite: G4 groups with committed offsets (-quick: 1000)")
	g4Partitions = flag.Int("group-partitions", 10, "admin suite: G4 partitions committed per group")
)

// g4Topic is the topic every G4 group commits offsets for.
const g4Topic = "g4"

// g4Template starts a kbroker in dir with g4Topic and a loaded group
// coordinator, and returns it running.
func (s *adminSuite) g4Template(ctx context.Context, dir string, partitions int32) (*broker.Broker, error) {
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: dir})
	if err != nil {
		return nil, err
	}
	if err := broker.CreateTopicPartitions(ctx, b.Addr, g4Topic, partitions); err != nil {
		b.Stop()
		return nil, err
	}
	// The first group request creates `__consumer_offsets`; wait until its
	// shards answer, so the memory baseline includes them.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := admin.WarmGroupCoordinator(wctx, b.Addr, admin.GroupName(0)); err != nil {
		b.Stop()
		return nil, fmt.Errorf("group coordinator not ready: %w", err)
	}
	return b, nil
}

// g4Restart is one restart of the broker in dir: exec → first Metadata
// answer, exec → first successful OffsetFetch of the last group committed,
// exec → a ListGroups answered without COORDINATOR_LOAD_IN_PROGRESS that
// lists every group (every shard has replayed its log), and the broker's
// RSS then.
type g4Restart struct {
	metadata, firstFetch, allLoaded time.Duration
	rss                             int64
}

func (s *adminSuite) g4RestartOnce(ctx context.Context, dir string, groups int, partitions int32) (g4Restart, error) {
	var r g4Restart
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{Dir: dir, NoWait: true})
	if err != nil {
		return r, err
	}
	defer b.Stop()
	wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	ready, err := admin.WaitMetadata(wctx, b.Addr, 2*time.Millisecond, b.Exited())
	if err != nil {
		return r, fmt.Errorf("restart: %w\n%s", err, b.LogTail(1000))
	}
	r.metadata = ready.Sub(b.Started)
	last := admin.GroupName(max(groups-1, 0))
	poll := func(what string, done func() bool) (time.Duration, error) {
		for !done() {
			select {
			case <-wctx.Done():
				return 0, fmt.Errorf("restart: waiting for %s: %w\n%s", what, wctx.Err(), b.LogTail(1000))
			case <-b.Exited():
				return 0, fmt.Errorf("restart: broker exited waiting for %s\n%s", what, b.LogTail(1000))
			case <-time.After(2 * time.Millisecond):
			}
		}
		return time.Since(b.Started), nil
	}
	var badOffsets error
	if r.firstFetch, err = poll("an OffsetFetch of "+last, func() bool {
		ok, offs := admin.FetchGroupOnce(wctx, b.Addr, last, g4Topic, partitions)
		if ok && groups > 0 && (len(offs) != int(partitions) || offs[0] != int64(1000+groups-1)) {
			badOffsets = fmt.Errorf("restart: %s fetched %v, want %d offsets of %d", last, offs, partitions, 1000+groups-1)
		}
		return ok
	}); err != nil {
		return r, err
	}
	if badOffsets != nil {
		return r, badOffsets
	}
	if r.allLoaded, err = poll("ListGroups to list every group", func() bool {
		n, ok := admin.ListGroupsOnce(wctx, b.Addr)
		return ok && n >= groups
	}); err != nil {
		return r, err
	}
	r.rss, err = broker.RSSBytes(b.Pid())
	return r, err
}

// caseG4 loads -groups groups × -group-partitions committed offsets into a
// template broker, then restarts it -cold-starts times; an identical broker
// without the groups, restarted the same way, is the memory baseline.
func (s *adminSuite) caseG4(ctx context.Context, sec *section) error {
	groups, partitions := *g4Groups, int32(*g4Partitions)
	if s.o.quick {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "groups" })
		if !set {
			groups = 1000
		}
	}
	sec.title = fmt.Sprintf("G4 / issue 15 — %d groups × %d partitions of committed offsets: replay after restart, memory per group", groups, partitions)

	emptyDir := filepath.Join(s.tmp, "g4-empty")
	b, err := s.g4Template(ctx, emptyDir, partitions)
	if err != nil {
		return err
	}
	b.Stop()

	dir := filepath.Join(s.tmp, "g4-template")
	if b, err = s.g4Template(ctx, dir, partitions); err != nil {
		return err
	}
	rss0, err := broker.RSSBytes(b.Pid())
	if err != nil {
		b.Stop()
		return err
	}
	t0 := time.Now()
	const conns = 4
	err = admin.CommitGroups(ctx, b.Addr, g4Topic, partitions, groups, conns)
	load := time.Since(t0)
	rss1, rerr := broker.RSSBytes(b.Pid())
	b.Stop()
	if err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	fmt.Fprintf(os.Stderr, "  G4 committed %d groups × %d partitions in %s\n", groups, partitions, load.Round(time.Millisecond))

	base, err := s.g4RestartOnce(ctx, emptyDir, 0, partitions)
	if err != nil {
		return fmt.Errorf("baseline restart: %w", err)
	}
	var meta, fetch, all, rss []float64
	for range s.o.ad.coldStarts {
		r, err := s.g4RestartOnce(ctx, dir, groups, partitions)
		if err != nil {
			return err
		}
		meta, fetch, all = append(meta, ms(r.metadata)), append(fetch, ms(r.firstFetch)), append(all, ms(r.allLoaded))
		rss = append(rss, float64(r.rss))
	}

	sec.printf("A broker gets a %d-partition topic and %d groups, each with a committed offset for every partition "+
		"(one simple OffsetCommit v8 per group, over %d connections): %s (%.0f OffsetCommits/s); the data directory is then %.1f MiB.\n\n",
		partitions, groups, conns, load.Round(time.Millisecond), float64(groups)/load.Seconds(), float64(dirSize(filepath.Join(dir, "data")))/mib)
	sec.printf(pctHeader)
	sec.printf("%s", pctRow("restart: exec → first Metadata answer (ms)", meta, "%.0f"))
	sec.printf("%s", pctRow("restart: exec → OffsetFetch of the last group answered (ms)", fetch, "%.0f"))
	sec.printf("%s", pctRow(fmt.Sprintf("restart: exec → ListGroups lists all %d groups (every shard replayed, ms)", groups), all, "%.0f"))
	_, _, _, allMax := pct(all)
	rssMed, _, _, _ := pct(rss)
	sec.printf("\nMemory: RSS grew by %.1f MiB while the groups were committed (%.0f bytes per group, %.0f per committed offset); "+
		"after a restart and replay the broker's RSS is %.1f MiB against %.1f MiB for the same broker without the groups: "+
		"%.0f bytes per group. (RSS of a Go process includes heap not yet returned to the OS, so these are upper bounds.)\n",
		float64(rss1-rss0)/mib, float64(rss1-rss0)/float64(groups), float64(rss1-rss0)/float64(groups)/float64(partitions),
		rssMed/mib, float64(base.rss)/mib, (rssMed-float64(base.rss))/float64(groups))
	sec.printf("\nGoal (issue 15): coordinator replay after restart < 1 s: exec → every group listed, max %.0f ms — %s\n", allMax, verdict(allMax < 1000))
	s.json["G4"] = map[string]any{"groups": groups, "partitions": partitions, "load_s": load.Seconds(),
		"restart_metadata_ms": meta, "restart_first_fetch_ms": fetch, "restart_all_loaded_ms": all,
		"rss_load_delta_bytes": rss1 - rss0, "rss_after_replay_bytes": rss, "rss_baseline_bytes": base.rss}
	return nil
}
