package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/bench/stats"
)

// MutationSpec is B8: controller_mutation_rate against a create loop.
type MutationSpec struct {
	Addr, ClientID string
	Rate           float64 // partitions/s set on the client-id
	Duration       time.Duration
}

// MutationResult is what the create loop saw.
type MutationResult struct {
	Spec     MutationSpec
	Accepted int
	Refused  int // THROTTLING_QUOTA_EXCEEDED
	// Burst is the topics accepted up to and including the first response
	// with a throttle (the request that takes the bucket into debt), as the
	// simulation in internal/quota counts it; BurstEnd is when it came.
	Burst    int
	BurstEnd time.Duration
	// SteadyRate: accepted partitions/s after the burst, from the first to
	// the last acceptance (stats.SpanRate); AfterBurstRate: accepted after
	// the burst ÷ (duration − BurstEnd).
	SteadyRate, AfterBurstRate float64
	SteadyRatio                float64
	MaxThrottleMs              float64
	Version                    int16
}

// MutationRate creates 1-partition topics one per CreateTopics request for
// spec.Duration with a client that honours throttles (kgo waits out
// throttle_time_ms before its next request on the connection). The version
// is the newest both sides know (v7 against kbroker), so the quota is
// strict: over-quota requests are refused with THROTTLING_QUOTA_EXCEEDED.
func MutationRate(ctx context.Context, spec MutationSpec) (MutationResult, error) {
	res := MutationResult{Spec: spec, Burst: -1}
	cl, err := newClient(spec.Addr, spec.ClientID)
	if err != nil {
		return res, err
	}
	defer closeBounded(cl)
	prefix := fmt.Sprintf("b8-%d-", time.Now().UnixNano())
	var accepted []stats.Event
	start := time.Now()
	for i := 0; time.Since(start) < spec.Duration; i++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = fmt.Sprintf("%s%d", prefix, i)
		rt.NumPartitions, rt.ReplicationFactor = 1, 1
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err != nil {
			return res, fmt.Errorf("CreateTopics: %w", err)
		}
		res.Version = resp.Version
		at := time.Since(start)
		res.MaxThrottleMs = max(res.MaxThrottleMs, float64(resp.ThrottleMillis))
		for _, t := range resp.Topics {
			switch t.ErrorCode {
			case 0:
				res.Accepted++
				accepted = append(accepted, stats.Event{At: at, N: 1})
			case kerr.ThrottlingQuotaExceeded.Code:
				res.Refused++
			default:
				return res, fmt.Errorf("CreateTopics %s: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode))
			}
		}
		if res.Burst < 0 && (resp.ThrottleMillis > 0 || res.Refused > 0) {
			res.Burst, res.BurstEnd = res.Accepted, at
		}
	}
	if res.Burst < 0 {
		return res, fmt.Errorf("never throttled: %d topics accepted in %s", res.Accepted, spec.Duration)
	}
	res.SteadyRate, _ = stats.SpanRate(accepted, res.BurstEnd+time.Nanosecond, spec.Duration+time.Minute)
	res.AfterBurstRate = float64(res.Accepted-res.Burst) / (spec.Duration - res.BurstEnd).Seconds()
	res.SteadyRatio = res.SteadyRate / spec.Rate
	return res, nil
}
