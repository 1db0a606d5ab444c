package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	bolt "go.etcd.io/bbolt"

	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/testbin"
	"kbroker/internal/testkit"
)

// crashProps is a broker with the ACL and SCRAM APIs enabled: the built-in
// authorizer (the PLAINTEXT listener's ANONYMOUS is a super user, so the
// streams may do anything) and a SASL_PLAINTEXT listener on which the
// SCRAM credentials written by the streams are tried after each restart.
var crashProps = map[string]string{
	"authorizer.class.name":   "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":             "User:ANONYMOUS",
	"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
	"num.partitions":          "1",
}

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// A broker SIGKILLed at a random moment while admin clients stream config
// alterations (topics, the cluster default and broker 1), client quota
// alterations, ACL creations and deletions and SCRAM upserts and deletions,
// and a producer streams records with acks=all, comes back over the same
// data with: the metadata file consistent (bbolt's own check); every
// acknowledged alteration in place, later acknowledged values over earlier
// ones; no alteration half-applied within a resource (all its keys, ACL
// bindings or SCRAM mechanisms, or none); the SCRAM password of the
// surviving alteration accepted; every acknowledged record at its offset.
// KBROKER_CRASH_ROUNDS and KBROKER_CRASH_SEED repeat or replay a run.
func TestKill9KeepsAcknowledgedAlterations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the kbroker binary")
	}
	dir := newBroker(t, crashProps, true)
	killAlterations(t, dir, envInt("KBROKER_CRASH_ROUNDS", 10), func() {
		checkMetadataFile(t, filepath.Join(dir.DataDir(), "kbroker-metadata.db"))
	})
}

// The same on the etcd backend: the broker keeps its metadata in an etcd
// running inside the test process, which outlives every kill, so an
// alteration is acknowledged only once etcd has committed it and none is
// half-applied across the keys one request writes. Fewer rounds: the
// store is etcd's, the broker's part (one transaction per request) is
// what is checked.
func TestKill9KeepsAcknowledgedAlterationsOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the kbroker binary")
	}
	props := map[string]string{
		"metadata.etcd.endpoints": etcdtest.Start(t).Endpoint(),
		// The killed broker's registration lives until its lease expires,
		// and a restart under the same node.id waits for that: keep it short.
		"metadata.etcd.session.timeout.ms": "2000",
	}
	for k, v := range crashProps {
		props[k] = v
	}
	dir := newBroker(t, props, true)
	killAlterations(t, dir, envInt("KBROKER_CRASH_ETCD_ROUNDS", 3), nil)
}

// killAlterations runs rounds of alteration and produce streams against
// the broker of dir, SIGKILLs it at a random moment in each, runs
// checkStore (if any) on what the killed broker left, restarts it and
// checks every acknowledged alteration and record.
func killAlterations(t *testing.T, dir *testbin.Broker, rounds int, checkStore func()) {
	seed := uint64(envInt("KBROKER_CRASH_SEED", int(time.Now().UnixNano()%1e15)))
	t.Logf("seed %d (replay with KBROKER_CRASH_SEED=%d), %d rounds", seed, seed, rounds)
	rng := rand.New(rand.NewPCG(seed, 0))

	p := run(t, dir)
	adm := kadm.NewClient(testkit.Client(t, p.Addr))
	for _, tp := range cfgTopics {
		testkit.CreateTopic(t, adm, tp, 1, nil)
	}
	testkit.CreateTopic(t, adm, dataTopic, dataPartitions, nil)

	l := newLedger()
	var records testkit.AckedRecords
	for round := 1; round <= rounds; round++ {
		start := time.Now()
		killAfter := time.Duration(rng.IntN(700)) * time.Millisecond
		runUntilKilled(t, p, round, killAfter, rng, l, &records)
		early, acks := l.newRound()
		if len(early) > 0 {
			t.Fatalf("round %d: alterations failed before the kill:\n%s", round, strings.Join(early[:min(len(early), 10)], "\n"))
		}
		if checkStore != nil {
			checkStore()
		}
		logBefore := dir.LogSize()
		p = run(t, dir)
		checkAlterations(t, p, l)
		checkRecords(t, p.Addr, &records)
		checkCleanRecovery(t, dir, logBefore)
		if t.Failed() {
			t.Fatalf("round %d failed (seed %d)", round, seed)
		}
		t.Logf("round %d: SIGKILL %v after every stream's first acknowledgement; acknowledged %v; %d alterations and %d records acknowledged in all, all found; round took %v",
			round, killAfter, acks, l.total, records.Count(), time.Since(start).Round(time.Millisecond))
	}
	t.Logf("%d resources had an alteration in flight at a kill; the store had committed %d of them (allowed: unanswered, not acknowledged)", l.unanswered, l.applied)
	if l.unanswered == 0 {
		t.Errorf("no kill landed while an alteration was in flight; the test proved nothing about half-applied alterations")
	}
}

// runUntilKilled runs every alteration stream and the producer against p,
// waits until each has been acknowledged at least once, lets them run for
// killAfter more, and SIGKILLs the broker.
func runUntilKilled(t *testing.T, p proc, round int, killAfter time.Duration, rng *rand.Rand, l *ledger, records *testkit.AckedRecords) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, s := range streams {
		srng := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RetryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer cl.Close()
			for ctx.Err() == nil {
				s.step(ctx, cl, srng, l)
			}
		})
	}
	wg.Go(func() { produceLoop(ctx, p.Addr, round, records, l) })

	names := []string{"produce"}
	for _, s := range streams {
		names = append(names, s.name)
	}
	ok := testkit.WaitFor(15*time.Second, func() bool {
		for _, n := range names {
			if l.ackedBy(n) == 0 {
				return false
			}
		}
		return true
	})

	if !ok {
		l.setKilled(true)
		p.Kill9(t)
		cancel()
		wg.Wait()
		early, acks := l.newRound()
		t.Fatalf("round %d: not every stream was acknowledged within 15s: %v; failures: %v", round, acks, early)
	}
	time.Sleep(killAfter)
	l.setKilled(true)
	p.Kill9(t)
	cancel()
	wg.Wait()
	l.setKilled(false)
}

// checkMetadataFile opens the metadata file the killed broker left, before
// any broker touches it again, and runs bbolt's consistency check.
func checkMetadataFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("metadata file after SIGKILL: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var errs []string
		for err := range tx.Check() {
			errs = append(errs, err.Error())
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d problems: %s", len(errs), strings.Join(errs[:min(len(errs), 5)], "; "))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("metadata file after SIGKILL fails bbolt's check: %v", err)
	}
}

// checkCleanRecovery fails on error-level lines or metadata reloads in the
// log of the run that started after offset from.
func checkCleanRecovery(t *testing.T, d *testbin.Broker, from int64) {
	t.Helper()
	out, err := os.ReadFile(d.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out[min(from, int64(len(out))):]), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "reloading") {
			t.Errorf("restart after SIGKILL logged: %s", line)
		}
	}
}

// checkAlterations reads every resource the streams touched back from the
// restarted broker and checks it against the ledger.
func checkAlterations(t *testing.T, p proc, l *ledger) {
	t.Helper()
	ctx := testkit.Context(t, 30*time.Second)
	cl := testkit.Client(t, p.Addr)
	adm := kadm.NewClient(cl)

	topics, err := adm.DescribeTopicConfigs(ctx, cfgTopics...)
	if err != nil {
		t.Fatalf("describe topic configs: %v", err)
	}
	for _, tp := range cfgTopics {
		rc, err := topics.On(tp, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			t.Fatalf("describe %s: %v", tp, err)
		}
		checkConfigState(t, l, "topic/"+tp, rc, kmsg.ConfigSourceDynamicTopicConfig, topicKeys)
	}
	for _, b := range []struct {
		name   string
		ids    []int32
		source kmsg.ConfigSource
	}{{"", nil, kmsg.ConfigSourceDynamicDefaultBrokerConfig}, {"1", []int32{1}, kmsg.ConfigSourceDynamicBrokerConfig}} {
		rcs, err := adm.DescribeBrokerConfigs(ctx, b.ids...)
		if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
			t.Fatalf("describe broker %q: %v %v", b.name, err, rcs)
		}
		checkConfigState(t, l, "broker/"+b.name, rcs[0], b.source, brokerKeys)
	}
	checkQuotas(t, ctx, adm, l)
	checkACLs(t, ctx, cl, l)
	checkSCRAM(t, ctx, adm, p, l)
}

func checkConfigState(t *testing.T, l *ledger, res string, rc kadm.ResourceConfig, source kmsg.ConfigSource, keys []valueKey) {
	t.Helper()
	found := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == source && c.Value != nil {
			found[c.Key] = *c.Value
		}
	}
	relevant := map[string]string{}
	for _, k := range keys {
		if v, ok := found[k.name]; ok {
			relevant[k.name] = v
		}
	}
	state, err := stateOf(keys, relevant)
	if err != nil {
		t.Errorf("%s: %v", res, err)
		return
	}
	l.check(t, res, state)
}

func checkQuotas(t *testing.T, ctx context.Context, adm *kadm.Client, l *ledger) {
	t.Helper()
	for _, e := range quotaEntities {
		var comps []kadm.DescribeClientQuotaComponent
		for _, c := range e {
			comps = append(comps, kadm.DescribeClientQuotaComponent{Type: c.Type, MatchName: c.Name, MatchType: 0}) // 0: exact name
		}
		described, err := adm.DescribeClientQuotas(ctx, true, comps)
		if err != nil {
			t.Fatalf("describe quotas of %s: %v", quotaName(e), err)
		}
		found := map[string]string{}
		for _, d := range described {
			if quotaName(d.Entity) != quotaName(e) {
				continue
			}
			for _, v := range d.Values {
				found[v.Key] = strconv.FormatFloat(v.Value, 'f', -1, 64)
			}
		}
		keys := quotaKeys
		if e[0].Type == "ip" {
			keys = ipQuotaKeys
		}
		state, err := stateOf(keys, found)
		if err != nil {
			t.Errorf("%s: %v", quotaName(e), err)
			continue
		}
		l.check(t, quotaName(e), state)
	}
}

func checkACLs(t *testing.T, ctx context.Context, cl *kgo.Client, l *ledger) {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("describe ACLs: %v", err)
	}
	bindings := map[string]int{} // group → bindings found
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			if r.ResourceType == kmsg.ACLResourceTypeTopic && a.Principal == aclPrincipal {
				bindings["acl/"+r.ResourceName]++
			}
		}
	}
	for _, group := range l.resources("acl/") {
		switch n := bindings[group]; n {
		case 0:
			l.check(t, group, 0)
		case len(aclOps):
			l.check(t, group, 1)
		default:
			t.Errorf("%s: half-applied: %d of the %d bindings created in one request", group, n, len(aclOps))
		}
		delete(bindings, group)
	}
	for group := range bindings {
		t.Errorf("%s: bindings the streams never sent", group)
	}
}

func checkSCRAM(t *testing.T, ctx context.Context, adm *kadm.Client, p proc, l *ledger) {
	t.Helper()
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("describe SCRAM users: %v", err)
	}
	for _, user := range scramUsers {
		res := "scram/" + user
		iters := map[kadm.ScramMechanism]int32{}
		for _, ci := range described[user].CredInfos {
			iters[ci.Mechanism] = ci.Iterations
		}
		state := 0
		switch {
		case len(iters) == 0:
		case len(iters) != 2 || iters[kadm.ScramSha256] != iters[kadm.ScramSha512]:
			t.Errorf("%s: half-applied: mechanisms %v after upserts of both in one request", res, iters)
			continue
		default:
			state = int(iters[kadm.ScramSha256]) - 4096
		}
		l.check(t, res, state)
		if state > 0 {
			checkSCRAMLogin(t, p, user, scramPassword(state))
		}
	}
}

// checkSCRAMLogin authenticates with both mechanisms on the SASL listener.
func checkSCRAMLogin(t *testing.T, p proc, user, pass string) {
	t.Helper()
	auth := scram.Auth{User: user, Pass: pass}
	for _, mech := range []struct {
		name string
		opt  kgo.Opt
	}{{"SCRAM-SHA-256", kgo.SASL(auth.AsSha256Mechanism())}, {"SCRAM-SHA-512", kgo.SASL(auth.AsSha512Mechanism())}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.SASLAddr), mech.opt, kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil {
			t.Errorf("scram/%s: %s login with the password of the surviving alteration: %v", user, mech.name, err)
		}
	}
}

// checkRecords reads dataTopic to its end and checks every acknowledged
// record is at its offset, offsets without gaps.
func checkRecords(t *testing.T, addr string, acked *testkit.AckedRecords) {
	t.Helper()
	adm := kadm.NewClient(testkit.Client(t, addr))
	listed, err := adm.ListEndOffsets(testkit.Context(t, 10*time.Second), dataTopic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	ends := map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	listed.Each(func(o kadm.ListedOffset) {
		ends[o.Partition] = o.Offset
		starts[o.Partition] = kgo.NewOffset().AtStart()
	})
	got := map[int32][]*kgo.Record{}
	cl := testkit.Client(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dataTopic: starts}), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := testkit.Context(t, 30*time.Second)
	for {
		done := true
		for p, end := range ends {
			if int64(len(got[p])) < end {
				done = false
			}
		}
		if done {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: end offsets %v not reached in 30s", dataTopic, ends)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("consume partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := int64(len(got[r.Partition])); r.Offset != want {
				t.Fatalf("partition %d: offset %d where %d was expected (gap)", r.Partition, r.Offset, want)
			}
			got[r.Partition] = append(got[r.Partition], r)
		})
	}
	stored := acked.Stored()
	lost := 0
	for p, offs := range stored {
		for off, v := range offs {
			if off >= int64(len(got[p])) || string(got[p][off].Value) != v {
				if lost++; lost <= 5 {
					t.Errorf("partition %d offset %d: acknowledged %q is gone", p, off, v)
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged records lost", lost)
	}
}
