package auth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) ACL {
	return ACL{rt, name, pt, principal, host, op, PermissionAllow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) ACL {
	return ACL{rt, name, pt, principal, host, op, PermissionDeny}
}

type authzCase struct {
	name      string
	principal string
	host      string
	op        Operation
	rt        ResourceType
	resource  string
	want      bool
}

func runAuthzCases(t *testing.T, a *Authorizer, cases []authzCase) {
	t.Helper()
	for _, c := range cases {
		host := c.host
		if host == "" {
			host = "10.0.0.1"
		}
		if got := a.Authorize(c.principal, host, c.op, c.rt, c.resource); got != c.want {
			t.Errorf("%s: Authorize(%s, %s, %s, %s, %q) = %v, want %v", c.name, c.principal, host, c.op, c.rt, c.resource, got, c.want)
		}
	}
}

func TestAuthorizerRules(t *testing.T) {
	const alice, bob, carol = "User:alice", "User:bob", "User:carol"
	acls := []ACL{
		// Literal, implied operations.
		allow(ResourceTopic, "orders", PatternLiteral, alice, "*", OpRead),
		allow(ResourceTopic, "orders", PatternLiteral, alice, "*", OpAlterConfigs),
		// DENY wins over ALLOW, and a DENY of READ does not deny DESCRIBE.
		allow(ResourceTopic, "payments", PatternLiteral, bob, "*", OpAll),
		deny(ResourceTopic, "payments", PatternLiteral, bob, "*", OpRead),
		deny(ResourceTopic, "payments", PatternLiteral, bob, "*", OpAlterConfigs),
		// Prefixed.
		allow(ResourceTopic, "logs-", PatternPrefixed, carol, "*", OpWrite),
		deny(ResourceTopic, "logs-secret", PatternPrefixed, carol, "*", OpAll),
		// Wildcard resource and wildcard principal.
		allow(ResourceGroup, "*", PatternLiteral, alice, "*", OpRead),
		allow(ResourceTopic, "public", PatternLiteral, "User:*", "*", OpRead),
		deny(ResourceTopic, "public", PatternLiteral, "User:*", "192.168.0.66", OpAll),
		// Host exact.
		allow(ResourceTopic, "internal", PatternLiteral, alice, "10.0.0.1", OpWrite),
		// DENY ALL on a prefix via wildcard principal, then an ALLOW for one user that DENY still beats.
		deny(ResourceTopic, "blocked", PatternPrefixed, "User:*", "*", OpAll),
		allow(ResourceTopic, "blocked-topic", PatternLiteral, alice, "*", OpAll),
		// Cluster.
		allow(ResourceCluster, ClusterName, PatternLiteral, bob, "*", OpAlter),
		// A DENY for someone else makes the resource "have ACLs".
		deny(ResourceTopic, "guarded", PatternLiteral, bob, "*", OpRead),
		// Types are separate: a group ACL says nothing about a topic of the same name.
		allow(ResourceGroup, "shared-name", PatternLiteral, alice, "*", OpRead),
	}
	for _, allowIfNoACL := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowEveryoneIfNoACL=%v", allowIfNoACL), func(t *testing.T) {
			a := NewAuthorizer(acls, []string{"User:admin", "Group:ops"}, allowIfNoACL)
			if a.Len() != len(acls) {
				t.Fatalf("Len = %d", a.Len())
			}
			runAuthzCases(t, a, []authzCase{
				{"super user, no ACL", "User:admin", "", OpAlter, ResourceCluster, ClusterName, true},
				{"super user beats DENY", "User:admin", "", OpRead, ResourceTopic, "blocked-x", true},
				{"super user of another principal type", "Group:ops", "", OpDelete, ResourceTopic, "payments", true},
				{"super user type is case-sensitive", "user:admin", "", OpRead, ResourceTopic, "payments", false},

				{"literal allow", alice, "", OpRead, ResourceTopic, "orders", true},
				{"literal other op", alice, "", OpWrite, ResourceTopic, "orders", false},
				{"READ implies DESCRIBE", alice, "", OpDescribe, ResourceTopic, "orders", true},
				{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", alice, "", OpDescribeConfigs, ResourceTopic, "orders", true},
				{"READ does not imply DESCRIBE_CONFIGS", carol, "", OpDescribeConfigs, ResourceTopic, "logs-app", false},
				{"literal is exact", alice, "", OpRead, ResourceTopic, "orders2", allowIfNoACL},
				{"other principal on a resource with ACLs", carol, "", OpRead, ResourceTopic, "orders", false},

				{"ALL allows any op", bob, "", OpWrite, ResourceTopic, "payments", true},
				{"DENY wins over ALL", bob, "", OpRead, ResourceTopic, "payments", false},
				{"DENY READ does not deny DESCRIBE", bob, "", OpDescribe, ResourceTopic, "payments", true},
				{"DENY ALTER_CONFIGS does not deny DESCRIBE_CONFIGS", bob, "", OpDescribeConfigs, ResourceTopic, "payments", true},

				{"prefixed allow", carol, "", OpWrite, ResourceTopic, "logs-app", true},
				{"prefix equal to name", carol, "", OpWrite, ResourceTopic, "logs-", true},
				{"WRITE implies DESCRIBE via prefix", carol, "", OpDescribe, ResourceTopic, "logs-app", true},
				{"not a prefix", carol, "", OpWrite, ResourceTopic, "log", allowIfNoACL},
				{"longer prefix DENY wins", carol, "", OpWrite, ResourceTopic, "logs-secret-1", false},
				{"prefixed DENY ALL denies DESCRIBE", carol, "", OpDescribe, ResourceTopic, "logs-secret", false},

				{"wildcard resource", alice, "", OpRead, ResourceGroup, "any-group", true},
				{"wildcard resource other principal", bob, "", OpRead, ResourceGroup, "any-group", false},
				{"wildcard resource name itself", alice, "", OpRead, ResourceGroup, "*", true},
				{"wildcard principal", carol, "", OpRead, ResourceTopic, "public", true},
				{"wildcard principal, other principal type", "Group:x", "", OpRead, ResourceTopic, "public", true},
				{"wildcard principal DENY from one host", carol, "192.168.0.66", OpRead, ResourceTopic, "public", false},

				{"host exact", alice, "10.0.0.1", OpWrite, ResourceTopic, "internal", true},
				{"host other", alice, "10.0.0.2", OpWrite, ResourceTopic, "internal", false},

				{"prefixed wildcard-principal DENY beats literal ALLOW", alice, "", OpRead, ResourceTopic, "blocked-topic", false},

				{"cluster", bob, "", OpAlter, ResourceCluster, ClusterName, true},
				{"ALTER implies DESCRIBE on cluster", bob, "", OpDescribe, ResourceCluster, ClusterName, true},
				{"cluster other op", bob, "", OpClusterAction, ResourceCluster, ClusterName, false},

				{"someone else's DENY means ACLs exist", alice, "", OpRead, ResourceTopic, "guarded", false},
				{"no ACL at all on resource", alice, "", OpRead, ResourceTopic, "unrelated", allowIfNoACL},
				{"no ACL of that type", alice, "", OpWrite, ResourceTransactionalID, "tx", allowIfNoACL},
				{"types are separate", alice, "", OpRead, ResourceTopic, "shared-name", allowIfNoACL},
				{"resource type out of range", alice, "", OpRead, ResourceType(100), "x", allowIfNoACL},
				{"negative resource type", alice, "", OpRead, ResourceType(-1), "x", allowIfNoACL},
			})
		})
	}
}

func TestNilAuthorizerAllowsEverything(t *testing.T) {
	var a *Authorizer
	if !a.Authorize("User:x", "h", OpAlter, ResourceCluster, ClusterName) || !a.AuthorizeByResourceType("User:x", "h", OpWrite, ResourceTopic) {
		t.Fatal("nil authorizer denied")
	}
}

func TestEmptyAuthorizer(t *testing.T) {
	if NewAuthorizer(nil, nil, false).Authorize("User:x", "h", OpRead, ResourceTopic, "t") {
		t.Error("no ACLs, allow.everyone.if.no.acl.found=false: allowed")
	}
	if !NewAuthorizer(nil, nil, true).Authorize("User:x", "h", OpRead, ResourceTopic, "t") {
		t.Error("no ACLs, allow.everyone.if.no.acl.found=true: denied")
	}
}

// referenceAuthorize is the rule set written as plainly as possible (a scan of every ACL, as Kafka's
// StandardAuthorizerData.findResult applied to each) to check the indexed implementation against.
func referenceAuthorize(acls []ACL, superUsers []string, allowIfNoACL bool, principal, host string, op Operation, rt ResourceType, name string) bool {
	for _, s := range superUsers {
		if s == principal {
			return true
		}
	}
	found, allowed := false, false
	for _, a := range acls {
		if a.ResourceType != rt {
			continue
		}
		applies := a.PatternType == PatternLiteral && (a.ResourceName == name || a.ResourceName == "*") ||
			a.PatternType == PatternPrefixed && strings.HasPrefix(name, a.ResourceName)
		if !applies {
			continue
		}
		found = true
		if a.Principal != principal && a.Principal != "User:*" || a.Host != host && a.Host != "*" {
			continue
		}
		opMatch := a.Operation == OpAll || a.Operation == op
		if !opMatch && a.Permission == PermissionAllow {
			switch op {
			case OpDescribe:
				opMatch = a.Operation == OpRead || a.Operation == OpWrite || a.Operation == OpDelete || a.Operation == OpAlter
			case OpDescribeConfigs:
				opMatch = a.Operation == OpAlterConfigs
			}
		}
		if !opMatch {
			continue
		}
		if a.Permission != PermissionAllow {
			return false
		}
		allowed = true
	}
	if allowed {
		return true
	}
	return !found && allowIfNoACL
}

func TestAuthorizerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "ab", "ba", "aa", "abc", "abd", "b-", "*", ""}
	names := []string{}
	for _, x := range alphabet {
		for _, y := range []string{"", "a", "b", "c", "ab", "-x"} {
			names = append(names, x+y)
		}
	}
	principals := []string{"User:alice", "User:bob", "User:*", "Group:x"}
	hosts := []string{"1.1.1.1", "2.2.2.2", "*"}
	for round := 0; round < 40; round++ {
		var acls []ACL
		for range 1 + rng.IntN(60) {
			acls = append(acls, ACL{
				ResourceType: []ResourceType{ResourceTopic, ResourceGroup}[rng.IntN(2)],
				ResourceName: names[rng.IntN(len(names))],
				PatternType:  []PatternType{PatternLiteral, PatternPrefixed}[rng.IntN(2)],
				Principal:    principals[rng.IntN(len(principals))],
				Host:         hosts[rng.IntN(len(hosts))],
				Operation:    Operation(2 + rng.IntN(13)),
				Permission:   []Permission{PermissionAllow, PermissionAllow, PermissionDeny}[rng.IntN(3)],
			})
		}
		supers := []string{"User:root"}
		allowIfNoACL := round%2 == 1
		a := NewAuthorizer(acls, supers, allowIfNoACL)
		for _, name := range names {
			for _, p := range []string{"User:alice", "User:bob", "Group:x", "User:root"} {
				for _, h := range []string{"1.1.1.1", "2.2.2.2"} {
					for op := Operation(2); op <= 14; op++ {
						for _, rt := range []ResourceType{ResourceTopic, ResourceGroup} {
							want := referenceAuthorize(acls, supers, allowIfNoACL, p, h, op, rt, name)
							if got := a.Authorize(p, h, op, rt, name); got != want {
								t.Fatalf("round %d: Authorize(%s, %s, %s, %s, %q) = %v, reference %v\nACLs: %v", round, p, h, op, rt, name, got, want, acls)
							}
						}
					}
				}
			}
		}
	}
}

func TestRadixTreeFindsEveryPrefix(t *testing.T) {
	keys := []string{"abc", "ab", "abd", "a", "b", "abcdef", "abx", "zz", "abcd", "x"}
	root := &radixNode{}
	for _, k := range keys {
		root.insert(k).rules = &ruleSet{anyPrincipal: []rule{{host: k}}}
	}
	for _, name := range []string{"abcdefg", "abd", "abx", "b", "zzz", "q", "", "abcde", "a"} {
		var got []string
		for n, rest := root, name; n != nil; n, rest = n.next(rest) {
			if n.rules != nil {
				got = append(got, n.rules.anyPrincipal[0].host)
			}
		}
		var want []string
		for _, k := range []string{"a", "ab", "abc", "abcd", "abcdef", "abd", "abx", "b", "x", "zz"} { // by length order along a path
			if strings.HasPrefix(name, k) {
				want = append(want, k)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("prefixes of %q = %v, want %v", name, got, want)
		}
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	const alice = "User:alice"
	for _, tc := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"no ACLs", nil, false},
		{"literal allow", []ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, true},
		{"ALL counts", []ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, true},
		{"implied ops do not count", []ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, false},
		{"other principal", []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpWrite)}, false},
		{"other host", []ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "9.9.9.9", OpWrite)}, false},
		{"literal allow dominated by literal deny", []ACL{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false},
		{"literal allow dominated by prefixed deny", []ACL{
			allow(ResourceTopic, "team-t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "team", PatternPrefixed, alice, "*", OpWrite)}, false},
		{"prefixed allow not dominated by literal deny", []ACL{
			allow(ResourceTopic, "team", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "team", PatternLiteral, alice, "*", OpWrite)}, true},
		{"prefixed allow dominated by shorter prefixed deny", []ACL{
			allow(ResourceTopic, "team-a", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "team", PatternPrefixed, "User:*", "*", OpAll)}, false},
		{"wildcard allow", []ACL{allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)}, true},
		{"wildcard deny beats wildcard allow", []ACL{
			allow(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite)}, false},
		{"wildcard deny before allow", []ACL{
			deny(ResourceTopic, "*", PatternLiteral, alice, "*", OpWrite),
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false},
		{"one undominated allow is enough", []ACL{
			allow(ResourceTopic, "x", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "x", PatternLiteral, alice, "*", OpWrite),
			allow(ResourceTopic, "y", PatternLiteral, alice, "*", OpWrite)}, true},
	} {
		a := NewAuthorizer(tc.acls, []string{"User:admin"}, false)
		if got := a.AuthorizeByResourceType(alice, "10.0.0.1", OpWrite, ResourceTopic); got != tc.want {
			t.Errorf("%s: AuthorizeByResourceType = %v, want %v", tc.name, got, tc.want)
		}
	}
	a := NewAuthorizer(nil, []string{"User:admin"}, false)
	if !a.AuthorizeByResourceType("User:admin", "h", OpWrite, ResourceTopic) {
		t.Error("super user denied")
	}
	if !NewAuthorizer(nil, nil, true).AuthorizeByResourceType(alice, "h", OpWrite, ResourceTopic) {
		t.Error("allow.everyone.if.no.acl.found with no ACLs denied")
	}
}

// The produce path authorizes every partition of every request: it must never allocate.
func TestAuthorizeDoesNotAllocate(t *testing.T) {
	a, queries := benchAuthorizer(10000)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		q := queries[i%len(queries)]
		i++
		a.Authorize(q.principal, q.host, q.op, q.rt, q.resource)
	}); n != 0 {
		t.Fatalf("Authorize allocates %v times per call", n)
	}
}

// benchAuthorizer builds n ACLs shaped like a multi-tenant cluster: per-tenant literal topics and groups,
// per-tenant prefixes, some DENYs, wildcard-principal and wildcard-resource ACLs; and queries that hit
// literal, prefixed and unmatched resources.
func benchAuthorizer(n int) (*Authorizer, []authzCase) {
	var acls []ACL
	for i := 0; len(acls) < n; i++ {
		tenant := fmt.Sprintf("User:tenant-%d", i%500)
		switch i % 10 {
		case 0, 1, 2, 3:
			acls = append(acls, allow(ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral, tenant, "*", OpWrite))
		case 4:
			acls = append(acls, allow(ResourceTopic, fmt.Sprintf("tenant-%d.", i%500), PatternPrefixed, tenant, "*", OpAll))
		case 5:
			acls = append(acls, allow(ResourceGroup, fmt.Sprintf("group-%d", i), PatternLiteral, tenant, "*", OpRead))
		case 6:
			acls = append(acls, deny(ResourceTopic, fmt.Sprintf("tenant-%d.secret", i%500), PatternPrefixed, "User:*", "*", OpRead))
		case 7:
			acls = append(acls, allow(ResourceTopic, fmt.Sprintf("shared-%d", i%50), PatternLiteral, "User:*", "*", OpRead))
		case 8:
			acls = append(acls, allow(ResourceTopic, fmt.Sprintf("topic-%d", i-8), PatternLiteral, tenant, fmt.Sprintf("10.0.%d.%d", i%250, i%200), OpRead))
		case 9:
			acls = append(acls, allow(ResourceCluster, ClusterName, PatternLiteral, tenant, "*", OpIdempotentWrite))
		}
	}
	acls = acls[:n]
	queries := []authzCase{
		{principal: "User:tenant-1", host: "10.1.2.3", op: OpWrite, rt: ResourceTopic, resource: "topic-11"},
		{principal: "User:tenant-4", host: "10.1.2.3", op: OpWrite, rt: ResourceTopic, resource: "tenant-4.orders"},
		{principal: "User:tenant-4", host: "10.1.2.3", op: OpRead, rt: ResourceTopic, resource: "tenant-4.secret.keys"},
		{principal: "User:tenant-9", host: "10.1.2.3", op: OpWrite, rt: ResourceTopic, resource: "unknown-topic-name"},
		{principal: "User:tenant-9", host: "10.1.2.3", op: OpIdempotentWrite, rt: ResourceCluster, resource: ClusterName},
	}
	return NewAuthorizer(acls, []string{"User:admin"}, false), queries
}

func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{0, 100, 10000} {
		b.Run(fmt.Sprintf("acls=%d", n), func(b *testing.B) {
			a, queries := benchAuthorizer(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := &queries[i%len(queries)]
				a.Authorize(q.principal, q.host, q.op, q.rt, q.resource)
			}
		})
	}
}

func BenchmarkAuthorizeParallel(b *testing.B) {
	a, queries := benchAuthorizer(10000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			q := &queries[i%len(queries)]
			a.Authorize(q.principal, q.host, q.op, q.rt, q.resource)
			i++
		}
	})
}

func BenchmarkNewAuthorizer10000(b *testing.B) {
	var acls []ACL
	for i := 0; i < 10000; i++ {
		pt := PatternLiteral
		if i%5 == 0 {
			pt = PatternPrefixed
		}
		acls = append(acls, allow(ResourceTopic, fmt.Sprintf("t-%d", i), pt, fmt.Sprintf("User:u%d", i%100), "*", OpRead))
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		NewAuthorizer(acls, nil, false)
	}
}
