package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The many-partitions figures of issue 18: creating topics by the
// thousand, Metadata of every topic. Latencies stop at the response's last
// byte, so the client's decoding of a large answer is not counted.

// CreatePartitionedTopics creates n topics named prefix-0000000… with
// partitions each, batch topics per CreateTopics request, and times each
// request.
func CreatePartitionedTopics(ctx context.Context, addr, prefix string, n int, partitions int32, batch int) (Timings, error) {
	var t Timings
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return t, err
	}
	defer c.Close()
	for i := 0; i < n; i += batch {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 4
		req.TimeoutMillis = 120000
		for j := i; j < min(n, i+batch); j++ {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = fmt.Sprintf("%s-%07d", prefix, j)
			rt.NumPartitions, rt.ReplicationFactor = partitions, 1
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = req.Version
		start := time.Now()
		size, err := c.Do(req, resp, 300*time.Second)
		if err != nil {
			return t, fmt.Errorf("CreateTopics at %d: %w", i, err)
		}
		t.Ms = append(t.Ms, ms(c.received.Sub(start)))
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				return t, fmt.Errorf("CreateTopics %s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
		}
		t.ResponseBytes, t.Items = int64(size), len(resp.Topics)*int(partitions)
	}
	return t, nil
}

// MetadataAll times Metadata v12 of every topic (topics null), reps times
// on one connection; Items is the partitions answered.
func MetadataAll(ctx context.Context, addr string, reps int) (Timings, error) {
	var t Timings
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return t, err
	}
	defer c.Close()
	for range reps {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		req.Topics = nil // all
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = req.Version
		start := time.Now()
		size, err := c.Do(req, resp, 120*time.Second)
		if err != nil {
			return t, fmt.Errorf("Metadata: %w", err)
		}
		t.Ms = append(t.Ms, ms(c.received.Sub(start)))
		n := 0
		for _, rt := range resp.Topics {
			n += len(rt.Partitions)
		}
		t.ResponseBytes, t.Items = int64(size), n
	}
	return t, nil
}
