package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
)

func listTopicsAs(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	var names []string
	for _, tp := range issue(t, cl, req).(*kmsg.MetadataResponse).Topics {
		names = append(names, *tp.Topic)
	}
	return names
}

func TestACLSemantics(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	adm := kadm.NewClient(admin)
	ctx := ctxT(t)
	for _, name := range []string{"orders-eu", "orders-us", "payments"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	alice := client(t, addr, scram256("alice", alicePass))

	t.Run("super user bypasses ACLs", func(t *testing.T) {
		if got := listTopicsAs(t, admin); len(got) != 3 {
			t.Fatalf("admin sees %v", got)
		}
	})
	t.Run("unauthorized topics are hidden", func(t *testing.T) {
		if got := listTopicsAs(t, alice); len(got) != 0 {
			t.Fatalf("alice sees %v without ACLs", got)
		}
	})
	t.Run("prefixed ALLOW and DENY wins", func(t *testing.T) {
		b := kadm.NewACLs().Allow("User:alice").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead)
		if _, err := adm.CreateACLs(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := listTopicsAs(t, alice); len(got) != 2 { // READ implies DESCRIBE
			t.Fatalf("alice sees %v, want the two orders- topics", got)
		}
		deny := kadm.NewACLs().Deny("User:*").Topics("orders-us").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe)
		if _, err := adm.CreateACLs(ctx, deny); err != nil {
			t.Fatal(err)
		}
		if got := listTopicsAs(t, alice); len(got) != 1 || got[0] != "orders-eu" {
			t.Fatalf("alice sees %v, want only orders-eu", got)
		}
		described, err := adm.DescribeACLs(ctx, kadm.NewACLs().ResourcePatternType(kadm.ACLPatternMatch).Topics("orders-us").Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range described {
			n += len(d.Described)
		}
		if n != 2 {
			t.Fatalf("MATCH filter found %d ACLs, want 2: %+v", n, described)
		}
	})
}

func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	addr := start(t, secured(config.Properties{"allow.everyone.if.no.acl.found": "true"})).Addr()
	adm := adminClient(t, addr)
	ctx := ctxT(t)
	for _, name := range []string{"open", "guarded"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	guard := kadm.NewACLs().Allow("User:admin").Topics("guarded").Operations(kadm.OpRead)
	if _, err := adm.CreateACLs(ctx, guard); err != nil {
		t.Fatal(err)
	}
	alice := client(t, addr, scram256("alice", alicePass))
	if got := listTopicsAs(t, alice); len(got) != 1 || got[0] != "open" {
		t.Fatalf("alice sees %v, want only the topic without ACLs", got)
	}
}

func TestACLAPIsWithoutAuthorizerAnswerSecurityDisabled(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if code := issue(t, admin, d).(*kmsg.DescribeACLsResponse).ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without authorizer: %v", kerr.ErrorForCode(code))
	}
	c := kmsg.NewPtrCreateACLsRequest()
	c.Creations = topicACL("x", kmsg.ACLOperationRead)
	if code := issue(t, admin, c).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without authorizer: %v", kerr.ErrorForCode(code))
	}
}

func TestCreateACLsValidation(t *testing.T) {
	addr := start(t, secured(nil)).Addr()
	admin := client(t, addr, scram256("admin", adminPass))
	req := kmsg.NewPtrCreateACLsRequest()
	bad := acl(kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLOperationAlter)
	good := acl(kmsg.ACLResourceTypeTopic, "x", kmsg.ACLOperationRead)
	req.Creations = []kmsg.CreateACLsRequestCreation{bad, good, good}
	res := issue(t, admin, req).(*kmsg.CreateACLsResponse).Results
	if res[0].ErrorCode != kerr.InvalidRequest.Code || res[1].ErrorCode != 0 || res[2].ErrorCode != 0 {
		t.Fatalf("results %+v", res)
	}
	d := kmsg.NewPtrDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := issue(t, admin, d).(*kmsg.DescribeACLsResponse)
	if len(resp.Resources) != 1 || len(resp.Resources[0].ACLs) != 1 {
		t.Fatalf("a duplicate creation was stored twice: %+v", resp.Resources)
	}
}

func TestSCRAMAdmin(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	adm := adminClient(t, addr)
	ctx := ctxT(t)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-pass"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert: %v %v", err, altered.Error())
	}
	produceConsume(t, addr, scram512("bob", "bob-pass"), "bobs")
	described, err := adm.DescribeUserSCRAMs(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if info := described["bob"].CredInfos; len(info) != 1 || info[0].Iterations != 8192 || info[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("described %+v", described["bob"])
	}
	// Kafka's per-user errors.
	raw := client(t, addr, scram256("admin", adminPass))
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := func(name string, mech int8, iter int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iter, []byte("salt"), make([]byte, 32)
		return u
	}
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "ghost", 1
	dup := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	dup.Name, dup.Mechanism = "twice", 1
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del, dup}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("few", 1, 100), up("mech", 9, 4096), up("", 1, 4096), up("twice", 1, 4096)}
	want := map[string]*kerr.Error{"ghost": kerr.ResourceNotFound, "twice": kerr.DuplicateResource,
		"few": kerr.UnacceptableCredential, "mech": kerr.UnsupportedSaslMechanism, "": kerr.UnacceptableCredential}
	for _, r := range issue(t, raw, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		if r.ErrorCode != want[r.User].Code {
			t.Errorf("user %q: %v, want %v", r.User, kerr.ErrorForCode(r.ErrorCode), want[r.User])
		}
	}
	d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"ghost", "bob", "bob"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		d.Users = append(d.Users, u)
	}
	for _, r := range issue(t, raw, d).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
		w := map[string]*kerr.Error{"ghost": kerr.ResourceNotFound, "bob": kerr.DuplicateResource}[r.User]
		if r.ErrorCode != w.Code {
			t.Errorf("describe %q: %v, want %v", r.User, kerr.ErrorForCode(r.ErrorCode), w)
		}
	}
}

// A bootstrap user that already has a credential keeps it: the broker does
// not reset a changed password at restart.
func TestBootstrapUserOnlyWhenAbsent(t *testing.T) {
	dir := t.TempDir()
	props := secured(config.Properties{"log.dirs": dir, "listeners": "SASL_PLAINTEXT://127.0.0.1:0"})
	b := start(t, props)
	adm := adminClient(t, b.Addr())
	if _, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "changed"}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b2 := start(t, props)
	if err := client(t, b2.Addr(), scram256("alice", "changed")).Ping(ctxT(t)); err != nil {
		t.Fatalf("changed password lost at restart: %v", err)
	}
}
