package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

// The resources the alteration streams change. Names are prefixed by kind
// in the ledger ("topic/…", "broker/…", "quota/…", "acl/…", "scram/…").
var (
	cfgTopics = []string{"crash-cfg-0", "crash-cfg-1", "crash-cfg-2"}
	topicKeys = []valueKey{
		{"retention.ms", 1_000_000_000}, {"segment.ms", 2_000_000_000}, {"delete.retention.ms", 3_000_000_000},
		{"file.delete.delay.ms", 4_000_000_000}, {"flush.ms", 5_000_000_000},
	}
	// brokerKeys go to the cluster default ("") and to broker 1 in one
	// request; values far above their defaults so nothing is rolled or
	// deleted meanwhile.
	brokerKeys = []valueKey{
		{"log.retention.ms", 1_000_000_000}, {"log.roll.ms", 2_000_000_000},
		{"log.cleaner.delete.retention.ms", 3_000_000_000}, {"log.segment.delete.delay.ms", 4_000_000_000},
	}
	quotaKeys = []valueKey{
		{"producer_byte_rate", 10_000_000}, {"consumer_byte_rate", 20_000_000},
		{"request_percentage", 1_000_000}, {"controller_mutation_rate", 2_000_000},
	}
	ipQuotaKeys = []valueKey{{"connection_creation_rate", 1_000_000}}
	// quotaEntities are users and clients no test client is, so the quotas
	// never slow the streams down.
	quotaEntities = []kadm.ClientQuotaEntity{
		{{Type: "user", Name: kadm.StringPtr("crash-u0")}},
		{{Type: "user", Name: kadm.StringPtr("crash-u1")}, {Type: "client-id", Name: kadm.StringPtr("crash-c")}},
		{{Type: "client-id", Name: kadm.StringPtr("crash-c2")}},
		{{Type: "ip", Name: kadm.StringPtr("10.9.9.9")}},
	}
	scramUsers = []string{"crash-s0", "crash-s1", "crash-s2"}
)

// aclOps are the operations of one ACL group: one CreateAcls request adds
// all three for a topic named after the group, one DeleteAcls removes them.
var aclOps = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}

const aclPrincipal = "User:crash-acl"

// seqs numbers alterations across streams and rounds: a sequence number is
// what an alteration writes. SCRAM alterations write theirs as the
// iteration count, 4096 + seq ≤ 16384, so they have their own numbers
// (about 100 per round: enough for over a hundred rounds).
var seqs, scramSeqs atomic.Int64

func nextSeq() int { return int(seqs.Add(1)) }

func quotaName(e kadm.ClientQuotaEntity) string {
	s := "quota"
	for _, c := range e {
		s += "/" + c.Type + "=" + *c.Name
	}
	return s
}

func scramPassword(seq int) string { return "crash-pw-" + strconv.Itoa(seq) }

// stream is one sequence of alterations against the broker; each call of
// step sends one request and records its answers in the ledger.
type stream struct {
	name string
	step func(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger)
}

var streams = []stream{
	{"topic-configs", stepTopicConfigs},
	{"broker-configs", stepBrokerConfigs},
	{"quotas", stepQuotas},
	{"acls", stepACLs},
	{"scram", stepSCRAM},
}

// alterOps sets every key to base+seq, or (remove) deletes every key.
func alterOps(keys []valueKey, seq int, remove bool) []kadm.AlterConfig {
	var ops []kadm.AlterConfig
	for _, k := range keys {
		if remove {
			ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k.name})
			continue
		}
		v := strconv.FormatInt(k.base+int64(seq), 10)
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k.name, Value: &v})
	}
	return ops
}

// alteration picks the next alteration: its sequence number, whether it
// removes, and the state it leaves.
func alteration(rng *rand.Rand) (seq int, remove bool, state int) {
	seq = nextSeq()
	remove = rng.IntN(8) == 0
	if remove {
		return seq, true, 0
	}
	return seq, false, seq
}

// recordConfigs records per-resource answers of an IncrementalAlterConfigs.
func recordConfigs(l *ledger, name, kind string, names []string, state int, resps kadm.AlterConfigsResponses, err error) {
	for _, n := range names {
		res := kind + "/" + n
		if err != nil {
			l.done(name, res, state, err)
			continue
		}
		r, ok := resps.On(n, nil)
		switch {
		case ok != nil:
			l.done(name, res, state, fmt.Errorf("no answer for %q", n))
		case r.Err != nil:
			l.done(name, res, state, fmt.Errorf("%w: %s", r.Err, r.ErrMessage))
		default:
			l.done(name, res, state, nil)
		}
	}
}

// stepTopicConfigs alters one to three topics in one request, all with the
// same alteration.
func stepTopicConfigs(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger) {
	seq, remove, state := alteration(rng)
	topics := append([]string(nil), cfgTopics...)
	rng.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	topics = topics[:1+rng.IntN(len(topics))]
	for _, tp := range topics {
		l.send("topic/"+tp, state)
	}
	resps, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, alterOps(topicKeys, seq, remove), topics...)
	recordConfigs(l, "topic-configs", "topic", topics, state, resps, err)
}

// stepBrokerConfigs alters the cluster default and broker 1 in one request.
func stepBrokerConfigs(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger) {
	seq, remove, state := alteration(rng)
	l.send("broker/", state)
	l.send("broker/1", state)
	ops := alterOps(brokerKeys, seq, remove)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"", "1"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for _, op := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = op.Name, op.Value
			c.Op = kmsg.IncrementalAlterConfigOpSet
			if op.Op == kadm.DeleteConfig {
				c.Op = kmsg.IncrementalAlterConfigOpDelete
			}
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	for _, name := range []string{"", "1"} {
		res := "broker/" + name
		if err != nil {
			l.done("broker-configs", res, state, err)
			continue
		}
		found := false
		for _, r := range resp.Resources {
			if r.ResourceName == name {
				found = true
				l.done("broker-configs", res, state, kerr.ErrorForCode(r.ErrorCode))
			}
		}
		if !found {
			l.done("broker-configs", res, state, fmt.Errorf("no answer for broker %q", name))
		}
	}
}

// stepQuotas alters one or two quota entities in one request.
func stepQuotas(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger) {
	seq, remove, state := alteration(rng)
	n := 1 + rng.IntN(2)
	picked := rng.Perm(len(quotaEntities))[:n]
	var entries []kadm.AlterClientQuotaEntry
	for _, i := range picked {
		e := quotaEntities[i]
		keys := quotaKeys
		if e[0].Type == "ip" {
			keys = ipQuotaKeys
		}
		var ops []kadm.AlterClientQuotaOp
		for _, k := range keys {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: k.name, Value: float64(k.base + int64(seq)), Remove: remove})
		}
		entries = append(entries, kadm.AlterClientQuotaEntry{Entity: e, Ops: ops})
		l.send(quotaName(e), state)
	}
	resps, err := kadm.NewClient(cl).AlterClientQuotas(ctx, entries)
	for _, en := range entries {
		res := quotaName(en.Entity)
		if err != nil {
			l.done("quotas", res, state, err)
			continue
		}
		var answer error = fmt.Errorf("no answer for %s", res)
		for _, r := range resps {
			if quotaName(r.Entity) == res {
				answer = r.Err
				if answer != nil {
					answer = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
				}
			}
		}
		l.done("quotas", res, state, answer)
	}
}

// stepACLs creates a new ACL group (three bindings, one request) or
// deletes one that may exist.
func stepACLs(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger) {
	existing := l.resources("acl/")
	if len(existing) == 0 || rng.IntN(5) < 3 {
		group := "acl/crash-acl-" + strconv.Itoa(nextSeq())
		l.send(group, 1)
		req := kmsg.NewPtrCreateACLsRequest()
		for _, op := range aclOps {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeTopic, group[len("acl/"):]
			c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = aclPrincipal, "*", op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			for _, r := range resp.Results {
				if err = kerr.ErrorForCode(r.ErrorCode); err != nil {
					break
				}
			}
		}
		l.done("acls", group, 1, err)
		return
	}
	group := existing[rng.IntN(len(existing))]
	l.send(group, 0)
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	name := group[len("acl/"):]
	f.ResourceType, f.ResourceName = kmsg.ACLResourceTypeTopic, &name
	f.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
	}
	l.done("acls", group, 0, err)
}

// stepSCRAM upserts both mechanisms of one user with the alteration's
// iteration count and password (one transaction per user), or deletes both.
func stepSCRAM(ctx context.Context, cl *kgo.Client, rng *rand.Rand, l *ledger) {
	seq := int(scramSeqs.Add(1))
	remove, state := rng.IntN(8) == 0, seq
	if remove {
		state = 0
	}
	user := scramUsers[rng.IntN(len(scramUsers))]
	res := "scram/" + user
	var del []kadm.DeleteSCRAM
	var up []kadm.UpsertSCRAM
	if remove {
		if l.stateOf(res) == 0 {
			// Deleting what does not exist is RESOURCE_NOT_FOUND; upsert instead.
			remove, state = false, seq
		} else {
			del = []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramSha256}, {User: user, Mechanism: kadm.ScramSha512}}
		}
	}
	if !remove {
		for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
			up = append(up, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: int32(4096 + seq), Password: scramPassword(seq)})
		}
	}
	l.send(res, state)
	resps, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, del, up)
	if err == nil {
		if r, ok := resps[user]; !ok {
			err = fmt.Errorf("no answer for %s", user)
		} else if r.Err != nil {
			err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	l.done("scram", res, state, err)
}

// ---- produce -------------------------------------------------------------

const (
	dataTopic      = "crash-data"
	dataPartitions = 2
)

// produceLoop streams records of round to dataTopic until ctx ends, at a
// modest rate so the admin streams share the CPU, and records every
// acknowledged one. Failures before the kill go to the ledger.
func produceLoop(ctx context.Context, addr string, round int, acked *testkit.AckedRecords, l *ledger) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(100),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		l.done("produce", "records", 0, err)
		return
	}
	defer cl.Close()
	var inflight sync.WaitGroup
	for seq := 0; ctx.Err() == nil; seq++ {
		if seq%20 == 19 {
			time.Sleep(2 * time.Millisecond)
		}
		v := fmt.Sprintf("round%d-seq%07d", round, seq)
		inflight.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: dataTopic, Partition: int32(seq % dataPartitions), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer inflight.Done()
			if err != nil {
				l.done("produce", "records", 0, err)
				return
			}
			acked.Add(r.Partition, r.Offset, v)
			l.mu.Lock()
			l.acks["produce"]++
			l.mu.Unlock()
		})
	}
	cl.Close() // fails whatever is still buffered
	inflight.Wait()
}
