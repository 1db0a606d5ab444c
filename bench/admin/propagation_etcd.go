package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdPutWatch is B6's etcd floor: n serial puts under a prefix nobody else
// uses, each timed from issuing the put to receiving its watch event, in
// milliseconds. A broker learns of another broker's change the same way
// (a Txn, then its watch), so this is the least propagation can cost.
func EtcdPutWatch(ctx context.Context, endpoint string, n int) ([]float64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	const prefix = "/kbench-put-watch/"
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if _, ok := <-wch; !ok {
		return nil, errors.New("etcd watch closed before it was created")
	}
	value := string(make([]byte, 256))
	var out []float64
	for i := range n {
		key := prefix + strconv.Itoa(i%16)
		t := time.Now()
		if _, err := cli.Put(ctx, key, value); err != nil {
			return nil, err
		}
		for seen := false; !seen; {
			resp, ok := <-wch
			if !ok {
				return nil, errors.New("etcd watch ended")
			}
			for _, ev := range resp.Events {
				seen = seen || string(ev.Kv.Key) == key
			}
		}
		out = append(out, ms(time.Since(t)))
	}
	return out, nil
}

// EtcdPropagationSpec is B6 in etcd mode: a topic config altered through
// broker A, observed on broker B.
type EtcdPropagationSpec struct {
	A, B   string // broker addresses
	BID    int32  // B's node.id: the topic's one partition is placed on B
	Topic  string
	Cycles int
}

// EtcdPropagationResult holds samples in milliseconds.
type EtcdPropagationResult struct {
	Spec EtcdPropagationSpec
	// Enforced: from IncrementalAlterConfigs returning on A to the first
	// produce response from B that applies the new max.message.bytes (a
	// 2 KB record refused under 1000, accepted again under 1 MB). Produce
	// makes no etcd round trip, so this is the watch's propagation to the
	// broker's live state (plus at most one produce round trip of polling).
	Enforced []float64
	// Described: the round trip of a DescribeConfigs to B sent right after
	// the ack (on the other half of the changes); it must show the new
	// value (read-your-writes: B reads etcd's revision and waits for its
	// watch before answering). Stale counts those that did not.
	Described []float64
	Stale     int
	// Alter: IncrementalAlterConfigs round trips on A (etcd Txn + watch
	// back to A).
	Alter []float64
}

// EtcdPropagation flips max.message.bytes of spec.Topic between 1000 and
// 1 MB through A, 2 × Cycles times: half the changes timed by produce on B,
// half read back at once with DescribeConfigs on B.
func EtcdPropagation(ctx context.Context, spec EtcdPropagationSpec) (EtcdPropagationResult, error) {
	res := EtcdPropagationResult{Spec: spec}
	acl, err := newClient(spec.A, "kbench-admin")
	if err != nil {
		return res, err
	}
	defer closeBounded(acl)
	bcl, err := newClient(spec.B, "kbench-observer")
	if err != nil {
		return res, err
	}
	defer closeBounded(bcl)
	topicID, err := createOn(ctx, acl, spec.Topic, spec.BID)
	if err != nil {
		return res, err
	}
	batch := recordBatch(make([]byte, 2000), 1, time.Now())
	produce := func() (int16, error) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = spec.Topic, topicID // v13 names topics by id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := bcl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return 0, err
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		if code != 0 && code != kerr.MessageTooLarge.Code {
			return 0, fmt.Errorf("produce to B: %w", kerr.ErrorForCode(code))
		}
		return code, nil
	}
	if _, err := produce(); err != nil { // warm B's connection
		return res, err
	}
	for i := range 2 * spec.Cycles {
		value, want := "1000", kerr.MessageTooLarge.Code
		if i%2 == 1 {
			value, want = "1048576", 0
		}
		t := time.Now()
		if err := alterTopic(ctx, acl, spec.Topic, "max.message.bytes", value); err != nil {
			return res, err
		}
		ack := time.Now()
		res.Alter = append(res.Alter, ms(ack.Sub(t)))
		// Every other pair of changes is first read back with DescribeConfigs
		// (which catches B up with etcd, so it must not be timed as
		// propagation); the others are timed by produce alone.
		describeFirst := (i/2)%2 == 1
		if describeFirst {
			t := time.Now()
			got, err := describeTopicConfig(ctx, bcl, spec.Topic, "max.message.bytes")
			if err != nil {
				return res, err
			}
			res.Described = append(res.Described, ms(time.Since(t)))
			if got != value {
				res.Stale++
			}
		}
		for {
			code, err := produce()
			if err != nil {
				return res, err
			}
			if code == want {
				if !describeFirst {
					res.Enforced = append(res.Enforced, ms(time.Since(ack)))
				}
				break
			}
			if time.Since(ack) > 10*time.Second {
				return res, fmt.Errorf("broker B did not apply max.message.bytes=%s within 10 s", value)
			}
		}
	}
	return res, nil
}

// createOn creates a one-partition topic on leader and returns its id.
func createOn(ctx context.Context, cl *kgo.Client, topic string, leader int32) ([16]byte, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = []int32{leader}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return [16]byte{}, err
	}
	t := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	return t.TopicID, kerr.ErrorForCode(t.ErrorCode)
}

func alterTopic(ctx context.Context, cl *kgo.Client, topic, key, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)
}

func describeTopicConfig(ctx context.Context, cl *kgo.Client, topic, key string) (string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{key}
	req.Resources = append(req.Resources, r)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return "", err
	}
	dr := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if err := kerr.ErrorForCode(dr.ErrorCode); err != nil {
		return "", err
	}
	for _, c := range dr.Configs {
		if c.Name == key && c.Value != nil {
			return *c.Value, nil
		}
	}
	return "", nil
}
