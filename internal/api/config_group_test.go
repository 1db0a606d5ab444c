package api_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/cluster/etcdtest"
	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
	"kbroker/policy"
)

const groupType = kmsg.ConfigResourceTypeGroupConfig

// TestDescribeGroupConfigsReportsKafkasKeysWithBrokerSynonyms: a group,
// existing or not, describes exactly Kafka 4.0's group configs, each
// inherited from its group.* broker synonym (static when server.properties
// sets it, else Kafka's default), with types and documentation; the key
// without a broker synonym reports its default under its own name.
func TestDescribeGroupConfigsReportsKafkasKeysWithBrokerSynonyms(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"group.consumer.session.timeout.ms": "50000"})
	cl, _ := client(t, b)
	cfgs, res := describe(t, cl, groupType, "no-such-group-yet")
	if res.ErrorCode != 0 {
		t.Fatalf("describe: %d %v", res.ErrorCode, res.ErrorMessage)
	}
	var names []string
	for n := range cfgs {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "share.auto.offset.reset",
		"share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.session.timeout.ms"}
	if !slices.Equal(names, want) {
		t.Fatalf("group configs %v, want Kafka 4.0's %v", names, want)
	}
	st := cfgs["consumer.session.timeout.ms"]
	if val(st) != "50000" || st.Source != kmsg.ConfigSourceStaticBrokerConfig || st.ReadOnly || st.IsSensitive ||
		st.ConfigType != kmsg.ConfigTypeInt || st.Documentation == nil {
		t.Errorf("consumer.session.timeout.ms = %s source %v read-only %v type %v doc %v", val(st), st.Source, st.ReadOnly, st.ConfigType, st.Documentation)
	}
	if s := st.ConfigSynonyms; len(s) != 2 || s[0].Name != "group.consumer.session.timeout.ms" || *s[0].Value != "50000" ||
		s[0].Source != kmsg.ConfigSourceStaticBrokerConfig || *s[1].Value != "45000" || s[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("consumer.session.timeout.ms synonyms = %+v", s)
	}
	hb := cfgs["consumer.heartbeat.interval.ms"]
	if val(hb) != "5000" || hb.Source != kmsg.ConfigSourceDefaultConfig || len(hb.ConfigSynonyms) != 1 || hb.ConfigSynonyms[0].Name != "group.consumer.heartbeat.interval.ms" {
		t.Errorf("consumer.heartbeat.interval.ms = %s source %v synonyms %+v", val(hb), hb.Source, hb.ConfigSynonyms)
	}
	reset := cfgs["share.auto.offset.reset"]
	if val(reset) != "latest" || reset.ConfigType != kmsg.ConfigTypeString || len(reset.ConfigSynonyms) != 1 ||
		reset.ConfigSynonyms[0].Name != "share.auto.offset.reset" || reset.ConfigSynonyms[0].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("share.auto.offset.reset = %s type %v synonyms %+v", val(reset), reset.ConfigType, reset.ConfigSynonyms)
	}
	if _, res := describe(t, cl, groupType, ""); res.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("empty group name: code %d, want INVALID_REQUEST", res.ErrorCode)
	}
}

// TestAlterGroupConfigsAsKafka: SET and DELETE of a group that does not
// exist, Kafka's refusals (unknown key, APPEND to a non-list, values
// outside the broker's limits, a session timeout not above the heartbeat
// interval, a bad type), validate-only, and AlterConfigs replacing the
// whole set.
func TestAlterGroupConfigsAsKafka(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"group.consumer.min.session.timeout.ms": "6000"})
	cl, _ := client(t, b)
	set, del, app := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend

	if code, msg := incremental(t, cl, groupType, "g", false, op("consumer.session.timeout.ms", set, "50000")); code != 0 {
		t.Fatalf("SET: %d %s", code, msg)
	}
	cfgs, _ := describe(t, cl, groupType, "g")
	st := cfgs["consumer.session.timeout.ms"]
	if val(st) != "50000" || st.Source != kmsg.ConfigSourceGroupConfig || len(st.ConfigSynonyms) != 2 ||
		st.ConfigSynonyms[0].Source != kmsg.ConfigSourceGroupConfig || st.ConfigSynonyms[1].Name != "group.consumer.session.timeout.ms" {
		t.Fatalf("after SET consumer.session.timeout.ms = %s source %v synonyms %+v", val(st), st.Source, st.ConfigSynonyms)
	}

	for _, tc := range []struct {
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.sesion.timeout.ms", set, "50000")}, kerr.InvalidConfig.Code,
			"Unknown group config name: consumer.sesion.timeout.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", set, "1"), op("no.such.key", set, "1")}, kerr.InvalidConfig.Code,
			"Unknown group config name: no.such.key"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", app, "1")}, kerr.InvalidConfig.Code,
			"Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", set, "5999")}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", set, "60001")}, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.heartbeat.interval.ms", set, "4999")}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.heartbeat.interval.ms", set, "15001")}, kerr.InvalidConfig.Code,
			"consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", set, "8000"), op("consumer.heartbeat.interval.ms", set, "8000")},
			kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("share.record.lock.duration.ms", set, "10000")}, kerr.InvalidConfig.Code,
			"share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("consumer.session.timeout.ms", set, "soon")}, kerr.InvalidConfig.Code,
			"Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{op("share.auto.offset.reset", set, "none")}, kerr.InvalidConfig.Code,
			"Invalid value none for configuration share.auto.offset.reset: String must be one of: latest, earliest"},
	} {
		code, msg := incremental(t, cl, groupType, "g", false, tc.ops...)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s=%s: %v %q, want %v %q", tc.ops[0].Name, *tc.ops[0].Value, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}

	// Validate-only checks and changes nothing.
	if code, msg := incremental(t, cl, groupType, "g", true, op("consumer.session.timeout.ms", set, "55000")); code != 0 {
		t.Fatalf("validate-only: %d %s", code, msg)
	}
	if code, _ := incremental(t, cl, groupType, "g", true, op("consumer.session.timeout.ms", set, "1")); code != kerr.InvalidConfig.Code {
		t.Errorf("validate-only of a bad value: %d, want INVALID_CONFIG", code)
	}
	cfgs, _ = describe(t, cl, groupType, "g")
	if v := val(cfgs["consumer.session.timeout.ms"]); v != "50000" {
		t.Fatalf("validate-only changed the value to %s", v)
	}

	// Legacy AlterConfigs: the request is the group's whole set.
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = groupType, "g"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx(t), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	cfgs, _ = describe(t, cl, groupType, "g")
	if st, reset := cfgs["consumer.session.timeout.ms"], cfgs["share.auto.offset.reset"]; st.Source != kmsg.ConfigSourceDefaultConfig ||
		val(reset) != "earliest" || reset.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after AlterConfigs: session %s (%v), reset %s (%v)", val(st), st.Source, val(reset), reset.Source)
	}
	if code, _ := incremental(t, cl, groupType, "g", false, op("share.auto.offset.reset", del, "")); code != 0 {
		t.Fatalf("DELETE: %d", code)
	}
	cfgs, _ = describe(t, cl, groupType, "g")
	if reset := cfgs["share.auto.offset.reset"]; val(reset) != "latest" || reset.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("after DELETE share.auto.offset.reset = %s (%v)", val(reset), reset.Source)
	}
}

// TestGroupConfigChangesGoThroughPolicyAndAudit: the alter-config policy
// sees a group's change as a GROUP resource, and the applied change is
// audited once.
func TestGroupConfigChangesGoThroughPolicyAndAudit(t *testing.T) {
	var seen []policy.ConfigResource
	alter := policy.AlterConfigFunc(func(r policy.AlterConfigRequest) error {
		seen = append(seen, r.Resource)
		if v := r.Configs["consumer.heartbeat.interval.ms"]; v != nil && *v == "7000" {
			return errors.New("heartbeats of 7 s are not allowed here")
		}
		return nil
	})
	var logs testkit.LogBuffer
	b := brokertest.StartWith(t, config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()},
		broker.WithAlterConfigPolicy(alter), broker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	cl, _ := client(t, b)
	set := kmsg.IncrementalAlterConfigOpSet
	if code, msg := incremental(t, cl, groupType, "g", false, op("consumer.heartbeat.interval.ms", set, "7000")); code != kerr.PolicyViolation.Code || msg != "heartbeats of 7 s are not allowed here" {
		t.Fatalf("policy: %d %q", code, msg)
	}
	if code, msg := incremental(t, cl, groupType, "g", false, op("consumer.heartbeat.interval.ms", set, "6000")); code != 0 {
		t.Fatalf("allowed change: %d %s", code, msg)
	}
	if len(seen) != 2 || seen[0] != (policy.ConfigResource{Type: policy.Group, Name: "g"}) {
		t.Fatalf("policy saw %+v", seen)
	}
	var audit []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "logger=kbroker.audit") {
			audit = append(audit, line)
		}
	}
	if len(audit) != 1 {
		t.Fatalf("want one audit line, got %q", audit)
	}
	for _, want := range []string{"resource_type=group", "resource=g", "key=consumer.heartbeat.interval.ms", "old=null", "new=6000"} {
		if !strings.Contains(audit[0], want) {
			t.Errorf("audit line %q lacks %q", audit[0], want)
		}
	}
}

// TestGroupConfigsPersistAcrossRestartOnBbolt: a group's configs survive a
// restart, and the stored overrides are what GroupSettings answers from.
func TestGroupConfigsPersistAcrossRestartOnBbolt(t *testing.T) {
	dir := t.TempDir()
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := brokertest.StartWith(t, props)
	cl, _ := client(t, b)
	alterGroup(t, cl, "g", "consumer.session.timeout.ms", "52000")
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// The broker is down: read its store as the coordinator's hook does.
	configs := configsOver(t, props, func() (meta.Backend, error) { return meta.OpenBolt(filepath.Join(dir, broker.MetadataFile)) })
	session, heartbeat, ok := configs.GroupSettings("g")
	if !ok || session != 52*time.Second || heartbeat != 5*time.Second {
		t.Fatalf("GroupSettings(g) = %v, %v, %v; want 52s, 5s (the broker's), true", session, heartbeat, ok)
	}
	if _, _, ok := configs.GroupSettings("other"); ok {
		t.Fatal("GroupSettings of a group without overrides must be ok=false")
	}
	configs.close()

	b2 := brokertest.StartWith(t, props)
	cl2, _ := client(t, b2)
	cfgs, _ := describe(t, cl2, groupType, "g")
	if st := cfgs["consumer.session.timeout.ms"]; val(st) != "52000" || st.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after restart consumer.session.timeout.ms = %s (%v)", val(st), st.Source)
	}
}

// TestGroupConfigsOnEtcdAreLiveAndPersist: on a shared etcd store, a
// change made over the protocol reaches another store's GroupSettings
// through its watch (what a coordinator on another broker reads), and
// survives the broker's restart.
func TestGroupConfigsOnEtcdAreLiveAndPersist(t *testing.T) {
	etcd := etcdtest.Start(t)
	props := config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "node.id": "1",
		"metadata.etcd.endpoints": etcd.Endpoint()}
	b := brokertest.StartWith(t, props)
	cl, _ := client(t, b)

	other := configsOver(t, config.Properties{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "node.id": "2"},
		func() (meta.Backend, error) {
			return meta.OpenEtcd(context.Background(), meta.EtcdOptions{Endpoints: []string{etcd.Endpoint()}})
		})
	defer other.close()
	if _, _, ok := other.GroupSettings("g"); ok {
		t.Fatal("GroupSettings before any change must be ok=false")
	}
	alterGroup(t, cl, "g", "consumer.heartbeat.interval.ms", "6000")
	deadline := time.Now().Add(10 * time.Second)
	for {
		session, heartbeat, ok := other.GroupSettings("g")
		if ok {
			if session != 45*time.Second || heartbeat != 6*time.Second {
				t.Fatalf("GroupSettings(g) = %v, %v; want 45s (the broker's), 6s", session, heartbeat)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change never reached the other store's GroupSettings")
		}
		time.Sleep(20 * time.Millisecond)
	}

	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := brokertest.StartWith(t, props)
	cl2, _ := client(t, b2)
	cfgs, _ := describe(t, cl2, groupType, "g")
	if hb := cfgs["consumer.heartbeat.interval.ms"]; val(hb) != "6000" || hb.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after restart consumer.heartbeat.interval.ms = %s (%v)", val(hb), hb.Source)
	}
}

// TestListConfigResources: v1 lists every topic, every live broker (as
// BROKER and BROKER_LOGGER) and the groups with configs, filtered by type;
// v0 lists client-metrics resources, of which kbroker has none; a type
// outside the listable ones fails with UNSUPPORTED_VERSION.
func TestListConfigResources(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	if _, err := adm.CreateTopic(ctx(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	alterGroup(t, cl, "g", "consumer.session.timeout.ms", "50000")

	listed, err := adm.ListConfigResources(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, r := range listed.Resources {
		all = append(all, r.Type.String()+" "+r.Name)
	}
	for _, want := range []string{"TOPIC t", "BROKER 1", "BROKER_LOGGER 1", "GROUP_CONFIG g"} {
		if !slices.Contains(all, want) {
			t.Errorf("unfiltered list %v lacks %q", all, want)
		}
	}

	groups, err := adm.ListConfigResources(ctx(t), kadm.ConfigResourceGroupConfig)
	if err != nil || len(groups.Resources) != 1 || groups.Resources[0].Name != "g" {
		t.Fatalf("groups only: %v %+v", err, groups)
	}

	// Raw, since kgo raises the version to the highest both sides speak.
	v0 := kmsg.NewPtrListConfigResourcesRequest()
	v0.Version = 0
	if resp := testkit.Dial(t, b.Addr()).RoundTrip(v0).(*kmsg.ListConfigResourcesResponse); resp.ErrorCode != 0 || len(resp.ConfigResources) != 0 {
		t.Fatalf("v0: %+v; want no client-metrics resources", resp)
	}

	bad := kmsg.NewPtrListConfigResourcesRequest()
	bad.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig), 64}
	resp, err := bad.RequestWith(ctx(t), cl)
	if err != nil || resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ConfigResources) != 0 {
		t.Fatalf("unknown type: %v %+v", err, resp)
	}
}

// alterGroup sets one config of a group (kadm has no group-config call).
func alterGroup(t *testing.T, cl *kgo.Client, group, key, value string) {
	t.Helper()
	if code, msg := incremental(t, cl, groupType, group, false, op(key, kmsg.IncrementalAlterConfigOpSet, value)); code != 0 {
		t.Fatalf("altering group %s: %v %s", group, kerr.ErrorForCode(code), msg)
	}
}

// storeConfigs is the dynamic configuration of a broker over a store
// opened outside any broker, as a coordinator's hook reads it.
type storeConfigs struct {
	*dynconfig.Configs
	close func()
}

func configsOver(t *testing.T, props config.Properties, open func() (meta.Backend, error)) storeConfigs {
	t.Helper()
	cfg, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := open()
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.DiscardHandler)
	store, err := meta.Open(backend, discard)
	if err != nil {
		t.Fatal(err)
	}
	var once bool
	closeStore := func() {
		if !once {
			once = true
			store.Close()
		}
	}
	t.Cleanup(closeStore)
	return storeConfigs{dynconfig.New(dynconfig.Options{Broker: cfg, Store: store, Logger: discard, Audit: discard}), closeStore}
}

// TestGroupConfigTakesEffectAtTheNextHeartbeat: a consumer group's
// heartbeat interval and session timeout follow its group configs over the
// protocol, with no restart and no rejoin: the next ConsumerGroupHeartbeat
// answers with the new interval, and deleting the override brings back the
// broker's.
func TestGroupConfigTakesEffectAtTheNextHeartbeat(t *testing.T) {
	b := brokertest.Start(t, nil)
	cl, adm := client(t, b)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "hb-topic"); err != nil {
		t.Fatal(err)
	}
	heartbeat := func(memberID string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "hb-group", memberID, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 60_000
			req.SubscribedTopicNames = []string{"hb-topic"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		for {
			resp, err := req.RequestWith(ctx, cl)
			if errors.Is(err, kerr.CoordinatorNotAvailable) { // the offsets topic is being created
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.CoordinatorNotAvailable.Code {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if resp.ErrorCode != 0 {
				t.Fatalf("heartbeat: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
			}
			return resp
		}
	}
	first := heartbeat("member-1", 0)
	if first.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("heartbeat interval %d ms, want the broker's 5000", first.HeartbeatIntervalMillis)
	}
	alterGroup(t, cl, "hb-group", "consumer.heartbeat.interval.ms", "7000")
	if got := heartbeat("member-1", first.MemberEpoch).HeartbeatIntervalMillis; got != 7000 {
		t.Fatalf("after the group config: heartbeat interval %d ms, want 7000", got)
	}
	del := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = groupType, "hb-group"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = "consumer.heartbeat.interval.ms", kmsg.IncrementalAlterConfigOpDelete
	res.Configs = append(res.Configs, c)
	del.Resources = append(del.Resources, res)
	if resp, err := del.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("deleting the override: %v %+v", err, resp)
	}
	if got := heartbeat("member-1", first.MemberEpoch).HeartbeatIntervalMillis; got != 5000 {
		t.Fatalf("after deleting the override: heartbeat interval %d ms, want 5000 again", got)
	}

	// OffsetFetch v9 naming a member checks it against the group (Kafka's
	// validateOffsetFetch).
	for _, tc := range []struct {
		member string
		epoch  int32
		want   int16
	}{
		{"member-1", first.MemberEpoch, 0},
		{"someone-else", first.MemberEpoch, kerr.UnknownMemberID.Code},
		{"member-1", first.MemberEpoch + 1, kerr.FencedMemberEpoch.Code},
	} {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "hb-group", kmsg.StringPtr(tc.member), tc.epoch
		f.Groups = append(f.Groups, g)
		resp, err := f.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Groups[0].ErrorCode; got != tc.want {
			t.Errorf("OffsetFetch v9 as %s at epoch %d: %v, want %v", tc.member, tc.epoch, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}
