package broker_test

import (
	"errors"
	"log/slog"
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
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
	"kbroker/policy"
)

const policyRules = `rules:
- name: retention-min
  on: [alter-configs, create-topic]
  match: '!resource.name.startsWith("keep.") && "retention.ms" in changes && changes["retention.ms"] != null'
  validate: millis(changes["retention.ms"]) >= duration("1h")
  message: '"retention.ms of " + resource.name + " below 1h: " + changes["retention.ms"]'
- name: platform-only
  on: alter-configs
  match: '"min.insync.replicas" in changes'
  validate: principal.type == "User" && principal.name == "platform"
  message: 'principal.full + " on " + client.listener + " may not change min.insync.replicas"'
- name: max-partitions
  on: [create-topic, create-partitions]
  validate: topic.partitions <= 4
- name: producer-cap
  on: alter-client-quotas
  match: '"producer_byte_rate" in quotas'
  validate: quotas["producer_byte_rate"] <= double(bytes("1MiB"))
  message: '"producer_byte_rate of " + resource.name + " above 1 MiB/s"'
`

func writeFileNow(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func policyViolation(t *testing.T, what string, err error, msg, want string) {
	t.Helper()
	if !errors.Is(err, kerr.PolicyViolation) || msg != want {
		t.Errorf("%s: %v %q, want POLICY_VIOLATION %q", what, err, msg, want)
	}
}

// TestPolicyFileOverTCP runs a rule file on a real broker with real
// clients: per resource in a multi-resource AlterConfigs, validate-only,
// the SASL principal and listener seen by a rule, topic creation,
// partitions and quotas, the Go policy after the rules, the metric and
// the audit line.
func TestPolicyFileOverTCP(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policies.yaml")
	writeFileNow(t, file, policyRules)
	var logs testkit.LogBuffer
	var goSaw []string
	var mu sync.Mutex
	goPolicy := policy.AlterConfigFunc(func(r policy.AlterConfigRequest) error {
		mu.Lock()
		goSaw = append(goSaw, r.Resource.Name+" "+r.Requester.Principal)
		mu.Unlock()
		if r.Resource.Name == "go.says.no" {
			return errors.New("the Go policy says no")
		}
		return nil
	})
	b := brokertest.Start(t, config.Properties{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a" user_platform="p";`,
		"metrics.listener":    "127.0.0.1:0",
		"kbroker.policy.file": file,
	}, broker.WithAlterConfigPolicy(goPolicy), broker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx := testkit.Context(t, 30*time.Second)
	adm := kadm.NewClient(testkit.Client(t, b.Addr()))
	for _, topic := range []string{"a.one", "keep.two", "go.says.no"} {
		testkit.CreateTopic(t, adm, topic, 1, nil)
	}

	short := []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("60000")}}
	for _, validateOnly := range []bool{true, false} {
		alter := adm.AlterTopicConfigs
		if validateOnly {
			alter = adm.ValidateAlterTopicConfigs
		}
		rs, err := alter(ctx, short, "a.one", "keep.two")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			switch r.Name {
			case "a.one":
				policyViolation(t, "a.one", r.Err, r.ErrMessage, "retention.ms of a.one below 1h: 60000 (policy rule retention-min)")
			case "keep.two":
				if r.Err != nil {
					t.Errorf("keep.two (validate only %v): %v %s", validateOnly, r.Err, r.ErrMessage)
				}
			}
		}
	}
	described, err := adm.DescribeTopicConfigs(ctx, "a.one", "keep.two")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range described {
		for _, c := range rc.Configs {
			if want := map[string]string{"a.one": "604800000", "keep.two": "60000"}[rc.Name]; c.Key == "retention.ms" && c.MaybeValue() != want {
				t.Errorf("%s retention.ms = %s, want %s", rc.Name, c.MaybeValue(), want)
			}
		}
	}

	// The rules allowed go.says.no's change; the Go policy, after them, did not.
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("3600000")}}, "go.says.no")
	if err != nil {
		t.Fatal(err)
	}
	policyViolation(t, "go policy", rs[0].Err, rs[0].ErrMessage, "the Go policy says no")

	// Over SASL: the rule sees the authenticated principal and the listener.
	minISR := []kadm.AlterConfig{{Name: "min.insync.replicas", Value: kadm.StringPtr("1")}}
	// alice first: a change to the value already set is no change, and
	// Kafka leaves it out of the policy's view.
	for _, c := range []struct{ user, pass, want string }{
		{"alice", "a", "User:alice on SASL_PLAINTEXT may not change min.insync.replicas (policy rule platform-only)"},
		{"platform", "p", ""},
	} {
		user, pass, want := c.user, c.pass, c.want
		sasl := kadm.NewClient(testkit.Client(t, b.Addrs()[1], kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())))
		rs, err := sasl.AlterTopicConfigs(ctx, minISR, "keep.two")
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if rs[0].Err != nil {
				t.Errorf("%s: %v %s", user, rs[0].Err, rs[0].ErrMessage)
			}
			continue
		}
		policyViolation(t, user, rs[0].Err, rs[0].ErrMessage, want)
	}
	mu.Lock()
	if !strings.Contains(strings.Join(goSaw, ","), "keep.two User:platform") {
		t.Errorf("the Go policy did not see the principal: %v", goSaw)
	}
	mu.Unlock()

	// Topic creation and partitions.
	created, _ := adm.CreateTopic(ctx, 5, 1, nil, "a.big") // its error is the topic's
	policyViolation(t, "create", created.Err, created.ErrMessage, "the change is not allowed by policy rule max-partitions (policy rule max-partitions)")
	grown, err := adm.CreatePartitions(ctx, 4, "a.one")
	if err != nil {
		t.Fatal(err)
	}
	policyViolation(t, "create-partitions", grown["a.one"].Err, grown["a.one"].ErrMessage, "the change is not allowed by policy rule max-partitions (policy rule max-partitions)")
	if grown, err = adm.CreatePartitions(ctx, 3, "a.one"); err != nil || grown["a.one"].Err != nil {
		t.Errorf("grow a.one to 4: %v %v", err, grown["a.one"].Err)
	}

	// Quotas.
	alice := kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("alice")}}
	for rate, want := range map[float64]string{2 << 20: "producer_byte_rate of users/alice above 1 MiB/s (policy rule producer-cap)", 1 << 20: ""} {
		qs, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate}}}})
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if qs[0].Err != nil {
				t.Errorf("rate %v: %v", rate, qs[0].Err)
			}
			continue
		}
		policyViolation(t, "quota", qs[0].Err, qs[0].ErrMessage, want)
	}

	metrics := testkit.ScrapeMetrics(t, b.MetricsAddr())
	for _, line := range []string{
		`kbroker_policy_rejections_total{operation="alter-configs",rule="retention-min"} 2`,
		`kbroker_policy_rejections_total{operation="alter-configs",rule="platform-only"} 1`,
		`kbroker_policy_rejections_total{operation="create-topic",rule="max-partitions"} 1`,
		`kbroker_policy_rejections_total{operation="create-partitions",rule="max-partitions"} 1`,
		`kbroker_policy_rejections_total{operation="alter-client-quotas",rule="producer-cap"} 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
	audit := logs.String()
	if !strings.Contains(audit, `msg="policy rejected" logger=kbroker.audit principal=User:alice`) ||
		!strings.Contains(audit, `operation=alter-configs resource="topic keep.two" rule=platform-only`) {
		t.Errorf("no audit line of alice's rejection in:\n%s", audit)
	}
}

// TestPolicyFileThatDoesNotCompileStopsStartup: the broker refuses to start
// and names the file, the line and the CEL error.
func TestPolicyFileThatDoesNotCompileStopsStartup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policies.yaml")
	writeFileNow(t, file, "rules:\n- name: typo\n  on: alter-configs\n  validate: chnages.size() == 0\n")
	b, err := broker.New(config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "kbroker.policy.file": file})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Start()
	if err == nil {
		b.Close()
		t.Fatal("started with a rule that does not compile")
	}
	if want := file + `:4: rule "typo": validate: undeclared reference to 'chnages'`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Start: %v, want %s…", err, want)
	}
}

// TestPolicyFileReloadUnderLoad: a broken edit keeps the rules in effect;
// a good one replaces them whole while requests keep coming, and every
// request sees one rule set or the other, never a mix.
func TestPolicyFileReloadUnderLoad(t *testing.T) {
	defer broker.SetPolicyPollInterval(10 * time.Millisecond)()
	file := filepath.Join(t.TempDir(), "policies.yaml")
	// Each set has two rules on the same change; a request that saw half
	// of one set and half of the other would be rejected by a rule of
	// the other set, or by none.
	set := func(name string) string {
		return "rules:\n- name: " + name + "-first\n  on: alter-configs\n  validate: 'true'\n" +
			"- name: " + name + "-second\n  on: alter-configs\n  validate: 'false'\n  message: '\"" + name + "\"'\n"
	}
	// Written as an operator should: a new file renamed over the old one.
	writeFile := func(t *testing.T, path, text string) {
		tmp := path + ".new"
		writeFileNow(t, tmp, text)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, file, set("a"))
	b := brokertest.Start(t, config.Properties{"kbroker.policy.file": file})
	ctx := testkit.Context(t, 30*time.Second)
	adm := kadm.NewClient(testkit.Client(t, b.Addr()))
	testkit.CreateTopic(t, adm, "t", 1, nil)
	change := []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("3600000")}}
	rejectedBy := func() string {
		rs, err := adm.ValidateAlterTopicConfigs(ctx, change, "t")
		if err != nil {
			t.Error(err)
			return ""
		}
		return rs[0].ErrMessage
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := rejectedBy(); got != want; got = rejectedBy() {
			if time.Now().After(deadline) {
				t.Fatalf("rejected by %q, want %q", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("a (policy rule a-second)")
	// A broken edit: the old rules stay.
	writeFile(t, file, set("b")+"- name: broken\n  on: alter-configs\n  validate: '1 +'\n")
	time.Sleep(200 * time.Millisecond)
	if got := rejectedBy(); got != "a (policy rule a-second)" {
		t.Fatalf("after a broken edit: %q", got)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got := rejectedBy(); got != "a (policy rule a-second)" && got != "b (policy rule b-second)" {
					t.Errorf("a request saw neither rule set whole: %q", got)
					return
				}
			}
		}()
	}
	for i := range 10 {
		name := []string{"b", "a"}[i%2]
		writeFile(t, file, set(name))
		waitFor(name + " (policy rule " + name + "-second)")
	}
	close(stop)
	wg.Wait()
}

// TestStoredPoliciesReachEveryBroker: a rule set stored in the metadata
// store (etcd) is in effect on every broker, except one whose policy file
// takes precedence; one that does not compile is refused; removing it
// lifts it.
func TestStoredPoliciesReachEveryBroker(t *testing.T) {
	store := etcdtest.Start(t)
	file := filepath.Join(t.TempDir(), "policies.yaml")
	writeFileNow(t, file, "- name: no-file-topics\n  on: create-topic\n  validate: '!resource.name.startsWith(\"file.\")'\n")
	var brokers []*broker.Broker
	for id := 1; id <= 2; id++ {
		props := config.Properties{
			"node.id": strconv.Itoa(id), "metadata.etcd.endpoints": store.Endpoint(),
			"metadata.etcd.session.timeout.ms": "2000", "metadata.etcd.request.timeout.ms": "1000",
		}
		if id == 2 {
			props["kbroker.policy.file"] = file
		}
		brokers = append(brokers, brokertest.Start(t, props))
	}
	ctx := testkit.Context(t, 30*time.Second)
	cl := testkit.Client(t, brokers[0].Addr())
	adms := []*kadm.Client{kadm.NewClient(cl), kadm.NewClient(testkit.Client(t, brokers[1].Addr()))}
	// rejectedBy is the rule that rejects creating topic on broker i ("" none),
	// asked of that broker (a client sends CreateTopics to the controller).
	rejectedBy := func(i int, topic string) string {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly, req.TimeoutMillis = true, 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(i+1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.CreateTopicsResponse).Topics[0]
		if r.ErrorCode == 0 {
			return ""
		}
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("%s on broker %d: %v %s", topic, i+1, kerr.ErrorForCode(r.ErrorCode), msg)
		}
		return msg[strings.LastIndex(msg, "(policy rule ")+len("(policy rule ") : len(msg)-1]
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	stored := "rules:\n- name: no-tmp-topics\n  on: create-topic\n  validate: '!resource.name.startsWith(\"tmp.\")'\n"
	rs, err := adms[1].AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "kbroker.policy.rules", Value: &stored}})
	if err != nil || rs[0].Err != nil {
		t.Fatalf("store the rules: %v %v", err, rs)
	}
	eventually("broker 1 uses the stored rules", func() bool { return rejectedBy(0, "tmp.x") == "no-tmp-topics" })
	if got := rejectedBy(0, "file.x"); got != "" {
		t.Errorf("broker 1 ran the other broker's file: %q", got)
	}
	if got, file := rejectedBy(1, "tmp.x"), rejectedBy(1, "file.x"); got != "" || file != "no-file-topics" {
		t.Errorf("broker 2 (with a file): tmp.x rejected by %q, file.x by %q", got, file)
	}

	broken := "rules:\n- name: broken\n  on: create-topic\n  validate: 'resource.name > 1'\n"
	rs, err = adms[0].AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "kbroker.policy.rules", Value: &broken}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rs[0].Err, kerr.InvalidConfig) || !strings.Contains(rs[0].ErrMessage, `kbroker.policy.rules:4: rule "broken": validate:`) {
		t.Errorf("a broken rule set: %v %s", rs[0].Err, rs[0].ErrMessage)
	}
	if got := rejectedBy(0, "tmp.x"); got != "no-tmp-topics" {
		t.Errorf("after a refused set: %q", got)
	}

	rs, err = adms[0].AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "kbroker.policy.rules"}})
	if err != nil || rs[0].Err != nil {
		t.Fatalf("remove the rules: %v %v", err, rs)
	}
	eventually("the stored rules are removed", func() bool { return rejectedBy(0, "tmp.x") == "" })
}
