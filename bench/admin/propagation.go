package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PropagationSpec is B6: how soon a lowered producer_byte_rate reaches a
// live connection.
type PropagationSpec struct {
	Addr, Topic, ClientID string
	High, Low             float64 // bytes/s; the quota alternates High → Low → High
	Cycles                int
	ProbeBytes            int // value bytes of one probe produce; must exceed Low × 1 s
}

// PropagationResult holds one sample per cycle, in milliseconds.
type PropagationResult struct {
	Spec PropagationSpec
	// Latency: from AlterClientQuotas(Low) returning to the first produce
	// response on the live connection that carries throttle_time_ms > 0.
	Latency []float64
	// Control: the same produce request on an unquota'd client-id, just
	// before the alter: the floor Latency cannot go below.
	Control []float64
	// AlterLow, AlterHigh: how long AlterClientQuotas took (durable commit
	// and apply) for each direction.
	AlterLow, AlterHigh []float64
	// Probe: the round trip of the throttled probe alone; ThrottleMs: the
	// throttle it carried.
	Probe, ThrottleMs []float64
	FirstProbe        int     // cycles whose very first probe after the ack was throttled
	Missed            int     // cycles with no throttle within three probes
	MinThrottleMs     float64 // smallest throttle that counted as the signal
}

// Propagation alternates the quota of spec.ClientID between High and Low.
// Each cycle: wait until the High bucket certainly holds one probe plus
// 0.2 s of High (so an un-propagated change cannot throttle the first
// probe), send a control probe on another client-id, lower the quota, and
// right after the alter returns send probes of ProbeBytes on the live
// quota'd connection. The Low bucket holds at most Low × 1 s < ProbeBytes,
// so the first probe that sees the new quota is throttled. Then raise the
// quota again and send one small produce at the High quota.
func Propagation(ctx context.Context, spec PropagationSpec) (PropagationResult, error) {
	res := PropagationResult{Spec: spec, MinThrottleMs: -1}
	if float64(spec.ProbeBytes) <= spec.Low {
		return res, fmt.Errorf("probe of %d B does not exceed the low quota's burst %.0f B", spec.ProbeBytes, spec.Low)
	}
	admCl, err := newClient(spec.Addr, "kbench-admin")
	if err != nil {
		return res, err
	}
	defer closeBounded(admCl)
	adm := kadm.NewClient(admCl)
	td, err := adm.ListTopics(ctx, spec.Topic)
	if err != nil {
		return res, err
	}
	topicID := td[spec.Topic].ID
	set := func(v float64) (time.Duration, error) {
		t := time.Now()
		err := setQuotas(ctx, adm, Quota{"client-id", spec.ClientID, "producer_byte_rate", v})
		return time.Since(t), err
	}
	if _, err := set(spec.High); err != nil {
		return res, err
	}
	pcl, err := newClient(spec.Addr, spec.ClientID)
	if err != nil {
		return res, err
	}
	defer closeBounded(pcl)
	ccl, err := newClient(spec.Addr, "kbench-control")
	if err != nil {
		return res, err
	}
	defer closeBounded(ccl)

	big := recordBatch(make([]byte, spec.ProbeBytes), 1, time.Now())
	small := recordBatch(make([]byte, 1024), 1, time.Now())
	send := func(cl *kgo.Client, batch []byte) (int32, error) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = spec.Topic, topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 0
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		resp, err := req.RequestWith(rctx, cl)
		if err != nil {
			return 0, err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, fmt.Errorf("produce error code %d", p.ErrorCode)
				}
			}
		}
		return resp.ThrottleMillis, nil
	}
	probe := func(cl *kgo.Client) (int32, error) { return send(cl, big) }
	// Warm both connections (and the quota'd client's sensor).
	if _, err := probe(pcl); err != nil {
		return res, err
	}
	if _, err := probe(ccl); err != nil {
		return res, err
	}
	// Refill: from the debt one probe leaves under Low (ProbeBytes − Low)
	// to one probe plus 0.2 s of High in credit, at the High rate.
	refill := time.Duration((2*float64(spec.ProbeBytes) - spec.Low + 0.2*spec.High) / spec.High * float64(time.Second))

	for range spec.Cycles {
		select {
		case <-time.After(refill):
		case <-ctx.Done():
			return res, ctx.Err()
		}
		t := time.Now()
		if _, err := probe(ccl); err != nil {
			return res, fmt.Errorf("control probe: %w", err)
		}
		res.Control = append(res.Control, ms(time.Since(t)))

		d, err := set(spec.Low)
		if err != nil {
			return res, err
		}
		ack := time.Now()
		res.AlterLow = append(res.AlterLow, ms(d))
		got := false
		for k := range 3 {
			sent := time.Now()
			th, err := probe(pcl)
			if err != nil {
				return res, fmt.Errorf("probe: %w", err)
			}
			if th > 0 {
				res.Latency = append(res.Latency, ms(time.Since(ack)))
				res.Probe = append(res.Probe, ms(time.Since(sent)))
				res.ThrottleMs = append(res.ThrottleMs, float64(th))
				if k == 0 {
					res.FirstProbe++
				}
				if res.MinThrottleMs < 0 || float64(th) < res.MinThrottleMs {
					res.MinThrottleMs = float64(th)
				}
				got = true
				break
			}
		}
		if !got {
			res.Missed++
		}
		if d, err = set(spec.High); err != nil {
			return res, err
		}
		res.AlterHigh = append(res.AlterHigh, ms(d))
		// The producer keeps running at High: one small produce moves its
		// bucket to the High rate now. (Without traffic, the quota engine
		// would settle the whole High period at Low once the next change
		// arrives: a change no request saw is skipped.)
		if _, err := send(pcl, small); err != nil {
			return res, fmt.Errorf("small probe: %w", err)
		}
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
