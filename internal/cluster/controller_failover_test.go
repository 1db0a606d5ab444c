package cluster_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

// liveIDs are the node ids of tc's brokers that have not been closed.
func (tc *testCluster) liveIDs() []int32 {
	var ids []int32
	for i, b := range tc.brokers {
		if b != nil {
			ids = append(ids, int32(i+1))
		}
	}
	return ids
}

// createLedBy creates topic with one partition whose replicas are the live
// brokers, leader first, and waits until every live broker has it with
// its whole ISR.
func (tc *testCluster) createLedBy(t *testing.T, topic string, leader int32) {
	t.Helper()
	replicas := []int32{leader}
	for _, id := range tc.liveIDs() {
		if id != leader {
			replicas = append(replicas, id)
		}
	}
	tc.createOn(t, topic, replicas, nil)
}

// createOn creates topic with configs and one partition on replicas (live
// brokers; the first leads) through that leader, and waits until every
// live broker has it with its whole ISR.
func (tc *testCluster) createOn(t *testing.T, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	leader := replicas[0]
	rt := topicToCreate(topic, -1, -1, configs)
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, rt)
	if got := send[*kmsg.CreateTopicsResponse](t, tc.addr(leader), req).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("creating %s: %v %s", topic, kerr.ErrorForCode(got.ErrorCode), deref(got.ErrorMessage))
	}
	for _, id := range tc.liveIDs() {
		eventually(t, fmt.Sprintf("broker %d to see %s led by %d with its whole ISR", id, topic, leader), func() bool {
			ps := partitionsOf(t, tc.addr(id), topic)
			return len(ps) == 1 && ps[0].Leader == leader && len(ps[0].ISR) == len(replicas)
		})
	}
}

// The controller also leads a partition and dies (Close: its lease, with
// its registration and its campaign key, goes at once). Another broker
// wins the election, and its first pass elects a new leader at once: it
// does not wait for the next periodic pass (every 2 s), which it would if
// it ran its pass only on the change of the live brokers, a change it
// often sees before it knows it won. Repeated with each new controller, as
// one lucky round proves nothing.
func TestNewControllerElectsLeadersAtOnce(t *testing.T) {
	tc := startCluster(t, 4, nil, nil)
	const limit = 700 * time.Millisecond
	for round := 0; len(tc.liveIDs()) > 1; round++ {
		live := tc.liveIDs()
		watcher := live[len(live)-1]
		// The newest broker campaigns last, so it is the controller only
		// when it is the last one left.
		var ctrl int32
		eventually(t, "a live controller other than the watching broker", func() bool {
			ctrl = metadata(t, tc.addr(watcher)).ControllerID
			return slices.Contains(live, ctrl) && ctrl != watcher
		})
		topic := fmt.Sprint("led-by-controller-", round)
		tc.createLedBy(t, topic, ctrl)

		// Watch from a broker that stays, over one connection, so each
		// look is a Metadata round trip and nothing more.
		cl := testkit.Client(t, "", kgo.SeedBrokers(tc.addr(watcher)))
		var gone, elected time.Time
		done := make(chan error, 1)
		go func() {
			ctx := testkit.Context(t, 20*time.Second)
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			for ctx.Err() == nil {
				raw, err := cl.SeedBrokers()[0].Request(ctx, req)
				now := time.Now()
				resp, _ := raw.(*kmsg.MetadataResponse)
				if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
					if gone.IsZero() && !slices.Contains(brokerIDs(resp), ctrl) {
						gone = now
					}
					if l := resp.Topics[0].Partitions[0].Leader; l >= 0 && l != ctrl {
						elected = now
						done <- nil
						return
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			done <- ctx.Err()
		}()
		if err := tc.brokers[ctrl-1].Close(); err != nil {
			t.Fatal(err)
		}
		tc.brokers[ctrl-1] = nil
		if err := <-done; err != nil {
			t.Fatalf("round %d: no new leader after controller %d closed: %v", round, ctrl, err)
		}
		if gone.IsZero() {
			gone = elected // both in one look
		}
		took := elected.Sub(gone)
		t.Logf("round %d: controller %d closed; a new leader %v after broker %d saw it gone", round, ctrl, took.Round(time.Millisecond), watcher)
		if took > limit {
			t.Errorf("round %d: the new controller elected a leader %v after the old one (%d) was gone, want within %v", round, took.Round(time.Millisecond), ctrl, limit)
		}
	}
}
