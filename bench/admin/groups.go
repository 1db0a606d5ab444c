package admin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupName is the i-th synthetic group of the G4 scale case.
func GroupName(i int) string { return fmt.Sprintf("kbench-g4-%06d", i) }

// CommitGroups commits an offset for every partition of topic in each of n
// groups (GroupName(0…n-1)), one OffsetCommit v8 per group: simple commits
// (generation -1, no member), as an admin tool resetting offsets sends.
// conns connections share the groups.
func CommitGroups(ctx context.Context, addr, topic string, partitions int32, n, conns int) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for w := range conns {
		wg.Go(func() {
			c, err := dialRaw(ctx, addr, "kbench-g4")
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := w; i < n && ctx.Err() == nil; i += conns {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Version = 8
				req.Group, req.Generation = GroupName(i), -1
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic = topic
				for p := range partitions {
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(1000+i), -1
					t.Partitions = append(t.Partitions, rp)
				}
				req.Topics = append(req.Topics, t)
				resp := kmsg.NewPtrOffsetCommitResponse()
				resp.Version = req.Version
				if _, err := c.Do(req, resp, 30*time.Second); err != nil {
					errs <- fmt.Errorf("OffsetCommit %s: %w", req.Group, err)
					return
				}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							errs <- fmt.Errorf("OffsetCommit %s %s[%d]: %v", req.Group, rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil if none
}

// FetchGroupOnce sends one OffsetFetch v7 of every partition of group and
// reports whether it was answered without error (false while the group's
// coordinator is still replaying: COORDINATOR_LOAD_IN_PROGRESS), and the
// offsets it returned.
func FetchGroupOnce(ctx context.Context, addr, group, topic string, partitions int32) (bool, []int64) {
	c, err := dialRaw(ctx, addr, "kbench-g4")
	if err != nil {
		return false, nil
	}
	defer c.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = topic
	for p := range partitions {
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version
	if _, err := c.Do(req, resp, 5*time.Second); err != nil || resp.ErrorCode != 0 {
		return false, nil
	}
	var out []int64
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				return false, nil
			}
			out = append(out, rp.Offset)
		}
	}
	return true, out
}

// ListGroupsOnce sends one ListGroups v4 and returns how many groups it
// listed, or ok false while a coordinator shard is still replaying
// (COORDINATOR_LOAD_IN_PROGRESS): once it is true, every shard has loaded.
func ListGroupsOnce(ctx context.Context, addr string) (n int, ok bool) {
	c, err := dialRaw(ctx, addr, "kbench-g4")
	if err != nil {
		return 0, false
	}
	defer c.Close()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 4
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	if _, err := c.Do(req, resp, 10*time.Second); err != nil || resp.ErrorCode != 0 {
		return 0, false
	}
	return len(resp.Groups), true
}

// WarmGroupCoordinator looks up group's coordinator (FindCoordinator, which
// makes kbroker create `__consumer_offsets` on first use) and fetches its
// offsets, retrying until an answer has no error.
func WarmGroupCoordinator(ctx context.Context, addr, group string) error {
	cl, err := newClient(addr, "kbench-g4")
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	for {
		_, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
