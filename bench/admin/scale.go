package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaEntity returns the i-th of the synthetic entities B9 loads: half
// client-ids, a quarter users, a quarter (user, client-id) pairs, each with
// a producer and a consumer byte rate, so lookups walk every level shape.
func QuotaEntity(i int) kadm.AlterClientQuotaEntry {
	str := func(s string) *string { return &s }
	var e kadm.ClientQuotaEntity
	switch i % 4 {
	case 0, 1:
		e = kadm.ClientQuotaEntity{{Type: "client-id", Name: str(fmt.Sprintf("client-%07d", i))}}
	case 2:
		e = kadm.ClientQuotaEntity{{Type: "user", Name: str(fmt.Sprintf("user-%07d", i))}}
	default:
		e = kadm.ClientQuotaEntity{{Type: "user", Name: str(fmt.Sprintf("user-%07d", i))},
			{Type: "client-id", Name: str(fmt.Sprintf("client-%07d", i))}}
	}
	return kadm.AlterClientQuotaEntry{Entity: e, Ops: []kadm.AlterClientQuotaOp{
		{Key: "producer_byte_rate", Value: float64(1<<20 + i)},
		{Key: "consumer_byte_rate", Value: float64(2<<20 + i)},
	}}
}

// LoadQuotaEntities sets n synthetic entities with AlterClientQuotas
// requests of batch entities each.
func LoadQuotaEntities(ctx context.Context, addr string, n, batch int) error {
	cl, err := newClient(addr, "kbench-admin")
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	adm := kadm.NewClient(cl)
	for i := 0; i < n; i += batch {
		entries := make([]kadm.AlterClientQuotaEntry, 0, batch)
		for j := i; j < min(n, i+batch); j++ {
			entries = append(entries, QuotaEntity(j))
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		res, err := adm.AlterClientQuotas(rctx, entries)
		cancel()
		if err != nil {
			return fmt.Errorf("AlterClientQuotas at entity %d: %w", i, err)
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("AlterClientQuotas %v: %w (%s)", r.Entity, r.Err, r.ErrMessage)
			}
		}
	}
	return nil
}

// Timings are repeated request latencies in milliseconds and what each
// response weighed.
type Timings struct {
	Ms            []float64
	ResponseBytes int64 // of one response (the last)
	Items         int   // entities or config entries in one response
}

// DescribeQuotasAll times DescribeClientQuotas matching every entity
// (strict=false, no components), reps times on one connection.
func DescribeQuotasAll(ctx context.Context, addr string, reps int) (Timings, error) {
	var t Timings
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return t, err
	}
	defer c.Close()
	for range reps {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = 1
		req.Components = []kmsg.DescribeClientQuotasRequestComponent{}
		resp := kmsg.NewPtrDescribeClientQuotasResponse()
		resp.Version = 1
		start := time.Now()
		n, err := c.Do(req, resp, 60*time.Second)
		if err != nil {
			return t, fmt.Errorf("DescribeClientQuotas: %w", err)
		}
		t.Ms = append(t.Ms, ms(c.received.Sub(start)))
		if resp.ErrorCode != 0 {
			return t, fmt.Errorf("DescribeClientQuotas: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		t.ResponseBytes, t.Items = int64(n), len(resp.Entries)
	}
	return t, nil
}

// CreateTopicsWithConfigs creates n 1-partition topics named
// prefix-0000000…, each with three config overrides, batch per request.
func CreateTopicsWithConfigs(ctx context.Context, addr, prefix string, n, batch int) error {
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return err
	}
	defer c.Close()
	str := func(s string) *string { return &s }
	for i := 0; i < n; i += batch {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 4
		req.TimeoutMillis = 60000
		for j := i; j < min(n, i+batch); j++ {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = fmt.Sprintf("%s-%07d", prefix, j)
			rt.NumPartitions, rt.ReplicationFactor = 1, 1
			for _, kv := range [][2]string{
				{"retention.ms", fmt.Sprint(86400000 + j)},
				{"max.message.bytes", fmt.Sprint(1 << 20)},
				{"cleanup.policy", "delete"},
			} {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name, cfg.Value = kv[0], str(kv[1])
				rt.Configs = append(rt.Configs, cfg)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = req.Version
		if _, err := c.Do(req, resp, 120*time.Second); err != nil {
			return fmt.Errorf("CreateTopics at %d: %w", i, err)
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 {
				return fmt.Errorf("CreateTopics %s: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode))
			}
		}
	}
	return nil
}

// DescribeTopicConfigs times DescribeConfigs of every config of n topics
// (prefix-0000000…) in one request (no synonyms, no documentation, as
// kafka-configs.sh --describe --all asks), reps times.
func DescribeTopicConfigs(ctx context.Context, addr, prefix string, n, reps int) (Timings, error) {
	var t Timings
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return t, err
	}
	defer c.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	for i := range n {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = fmt.Sprintf("%s-%07d", prefix, i)
		req.Resources = append(req.Resources, r) // ConfigNames nil: all
	}
	for range reps {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.Version = req.Version
		start := time.Now()
		size, err := c.Do(req, resp, 120*time.Second)
		if err != nil {
			return t, fmt.Errorf("DescribeConfigs: %w", err)
		}
		t.Ms = append(t.Ms, ms(c.received.Sub(start)))
		items := 0
		for _, r := range resp.Resources {
			if r.ErrorCode != 0 {
				return t, fmt.Errorf("DescribeConfigs %s: %v", r.ResourceName, kerr.ErrorForCode(r.ErrorCode))
			}
			items += len(r.Configs)
		}
		t.ResponseBytes, t.Items = int64(size), items
	}
	return t, nil
}

// AlterTopicConfig times reps changes of retention.ms on one topic, with
// IncrementalAlterConfigs (SET) or, if legacy, AlterConfigs (which replaces
// the topic's whole override set, so it sends all three overrides).
func AlterTopicConfig(ctx context.Context, addr, topic string, reps int, legacy bool) (Timings, error) {
	var t Timings
	c, err := dialRaw(ctx, addr, "kbench-admin")
	if err != nil {
		return t, err
	}
	defer c.Close()
	str := func(s string) *string { return &s }
	for i := range reps {
		value := fmt.Sprint(3600000 + i)
		var req kmsg.Request
		var resp kmsg.Response
		if legacy {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Version = 2
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			for _, kv := range [][2]string{{"retention.ms", value}, {"max.message.bytes", fmt.Sprint(1 << 20)}, {"cleanup.policy", "delete"}} {
				cfg := kmsg.NewAlterConfigsRequestResourceConfig()
				cfg.Name, cfg.Value = kv[0], str(kv[1])
				res.Configs = append(res.Configs, cfg)
			}
			r.Resources = append(r.Resources, res)
			p := kmsg.NewPtrAlterConfigsResponse()
			p.Version = r.Version
			req, resp = r, p
		} else {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Version = 1
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value, cfg.Op = "retention.ms", str(value), kmsg.IncrementalAlterConfigOpSet
			res.Configs = append(res.Configs, cfg)
			r.Resources = append(r.Resources, res)
			p := kmsg.NewPtrIncrementalAlterConfigsResponse()
			p.Version = r.Version
			req, resp = r, p
		}
		start := time.Now()
		if _, err := c.Do(req, resp, 30*time.Second); err != nil {
			return t, err
		}
		t.Ms = append(t.Ms, ms(c.received.Sub(start)))
		var code int16
		switch p := resp.(type) {
		case *kmsg.AlterConfigsResponse:
			code = p.Resources[0].ErrorCode
		case *kmsg.IncrementalAlterConfigsResponse:
			code = p.Resources[0].ErrorCode
		}
		if code != 0 {
			return t, fmt.Errorf("alter %s: %v", topic, kerr.ErrorForCode(code))
		}
	}
	return t, nil
}

// WaitMetadata polls addr every poll with a fresh connection and a
// Metadata v4 request for no topics until one is answered with a broker
// list, and returns when that happened.
func WaitMetadata(ctx context.Context, addr string, poll time.Duration, exited <-chan struct{}) (time.Time, error) {
	for {
		if ok := metadataOnce(ctx, addr); ok {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-exited:
			return time.Time{}, fmt.Errorf("broker exited before answering Metadata")
		case <-time.After(poll):
		}
	}
}

func metadataOnce(ctx context.Context, addr string) bool {
	c, err := dialRaw(ctx, addr, "kbench-coldstart")
	if err != nil {
		return false
	}
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 4
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 4
	if _, err := c.Do(req, resp, 5*time.Second); err != nil {
		return false
	}
	return len(resp.Brokers) > 0
}
