package main

// The authorizer's cost on the hot path: B1's produce workload against a
// broker with the built-in authorizer and a large ACL set, and against the
// same broker without an authorizer, in interleaved pairs (A/B, then B/A)
// so drift over the run cancels out of the median ratio.

import (
	"context"
	"fmt"
	"os"
	"time"

	"kbroker/bench/admin"
	"kbroker/bench/broker"
	"kbroker/bench/workload"
)

const (
	aclAdmin, aclAdminPassword = "bench-admin", "bench-admin-secret"
	aclBatch                   = 1000
)

// caseACLProduce measures produce throughput with s.o.ad.acls ACLs loaded
// vs no authorizer.
func (s *adminSuite) caseACLProduce(ctx context.Context, sec *section) error {
	n := s.o.ad.acls
	sec.title = fmt.Sprintf("ACL — produce throughput with %d ACLs vs no authorizer", n)
	type pairRes struct {
		None, ACLs, Ratio float64
		LoadMs            float64
	}
	var pairs []pairRes
	for pair := range s.o.ad.aclPairs {
		var pr pairRes
		order := []bool{false, true}
		if pair%2 == 1 {
			order = []bool{true, false}
		}
		for _, withACLs := range order {
			mbps, load, err := s.aclProduce(ctx, withACLs, fmt.Sprintf("ACL-%s-%d", map[bool]string{true: "acls", false: "none"}[withACLs], pair+1))
			if err != nil {
				return err
			}
			if withACLs {
				pr.ACLs, pr.LoadMs = mbps, ms(load)
			} else {
				pr.None = mbps
			}
		}
		pr.Ratio = pr.ACLs / pr.None
		fmt.Fprintf(os.Stderr, "  ACL pair %d: none %.1f MB/s, %d ACLs %.1f MB/s → %.3f (ACLs loaded in %.0f ms)\n", pair+1, pr.None, n, pr.ACLs, pr.Ratio, pr.LoadMs)
		pairs = append(pairs, pr)
	}
	ratio := med(pairs, func(p pairRes) float64 { return p.Ratio })
	sec.printf("Two fresh brokers per pair, each with a PLAINTEXT and a SASL_PLAINTEXT listener (SCRAM admin `%s`): one without an authorizer, "+
		"one with `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`, `super.users=User:%s` and %d ACLs created by the admin "+
		"in CreateAcls requests of %d (literal and prefixed topic ACLs and group ACLs of 500 users, `User:*` ones, DENYs, and ACLs of "+
		"User:ANONYMOUS on other topics) including CREATE and WRITE on the bench topic for User:ANONYMOUS. B1 1 KiB produce (worker process, "+
		"acks=1, 1 s warm-up, 5 s window) on the PLAINTEXT listener as User:ANONYMOUS, so every request is authorized against the full set; "+
		"%d pair(s), order alternating.\n\n", aclAdmin, aclAdmin, n, aclBatch, len(pairs))
	sec.printf("| pair | no authorizer MB/s | %d ACLs MB/s | ratio | ACL load ms |\n|---:|---:|---:|---:|---:|\n", n)
	for i, p := range pairs {
		sec.printf("| %d | %.1f | %.1f | %.3f | %.0f |\n", i+1, p.None, p.ACLs, p.Ratio, p.LoadMs)
	}
	sec.printf("| median | %.1f | %.1f | %.3f | |\n", med(pairs, func(p pairRes) float64 { return p.None }),
		med(pairs, func(p pairRes) float64 { return p.ACLs }), ratio)
	sec.printf("\nGoal ratio ≥ 0.97: %.3f — %s (single runs on a shared box drift; trust the median of several pairs).\n", ratio, verdict(ratio >= 0.97))
	s.json["ACLproduce"] = map[string]any{"acls": n, "pairs": pairs, "ratio": ratio}
	return nil
}

// aclProduce runs one side of a pair on a fresh broker and returns its
// produce throughput (MB/s) and how long loading the ACLs took.
func (s *adminSuite) aclProduce(ctx context.Context, withACLs bool, name string) (float64, time.Duration, error) {
	props := []string{
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
		"kbroker.scram.bootstrap.users=SCRAM-SHA-256=[name=" + aclAdmin + ",password=" + aclAdminPassword + "]",
	}
	if withACLs {
		props = append(props, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:"+aclAdmin)
	}
	b, err := broker.StartWith(ctx, broker.Kbroker, s.r.bins, s.tmp, broker.StartOptions{SASLPlaintext: true, Props: props, Metrics: s.o.ad.profileDir != ""})
	if err != nil {
		return 0, 0, err
	}
	defer b.Stop()
	topic := topicName("acl")
	var load time.Duration
	if withACLs {
		t0 := time.Now()
		if err := admin.LoadACLs(ctx, admin.ACLLoad{SASLAddr: b.SASLAddr, User: aclAdmin, Password: aclAdminPassword,
			N: s.o.ad.acls, Batch: aclBatch, Topic: topic}); err != nil {
			return 0, 0, err
		}
		load = time.Since(t0)
	}
	if err := broker.CreateTopic(ctx, b.Addr, topic); err != nil {
		return 0, 0, err
	}
	spec := workload.Spec{Kind: workload.KindProduce, Addr: b.Addr, Topic: topic, ClientID: "bench-acl", RecordBytes: 1024,
		Warmup: time.Second, Duration: 5 * time.Second}
	wait := s.profile(ctx, b, name, 6)
	defer wait()
	res, _, _, err := s.r.runLoad(ctx, spec, b)
	if err != nil {
		return 0, 0, err
	}
	if res.Errors > 0 {
		return 0, 0, fmt.Errorf("%d failed records: %s", res.Errors, res.FirstErr)
	}
	return float64(res.Bytes) / res.Seconds / 1e6, load, nil
}
