package auth

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	lit := func(name string) ACL {
		return ACL{ResourceTopic, name, PatternLiteral, "User:alice", "*", OpRead, PermissionAllow}
	}
	pre := func(name string) ACL {
		return ACL{ResourceTopic, name, PatternPrefixed, "User:alice", "*", OpRead, PermissionAllow}
	}
	match := func(name string) Filter {
		f := MatchAll
		f.ResourceType, f.PatternType, f.ResourceName = ResourceTopic, PatternMatch, ptr(name)
		return f
	}
	for _, tc := range []struct {
		name   string
		filter Filter
		acl    ACL
		want   bool
	}{
		{"match all", MatchAll, lit("orders"), true},
		{"resource type", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, lit("orders"), false},
		{"literal filter exact", Filter{ResourceTopic, ptr("orders"), PatternLiteral, nil, nil, OpAny, PermissionAny}, lit("orders"), true},
		{"literal filter other name", Filter{ResourceTopic, ptr("orders"), PatternLiteral, nil, nil, OpAny, PermissionAny}, lit("payments"), false},
		{"literal filter does not expand wildcard", Filter{ResourceTopic, ptr("orders"), PatternLiteral, nil, nil, OpAny, PermissionAny}, lit("*"), false},
		{"literal filter skips prefixed", Filter{ResourceTopic, ptr("orders"), PatternLiteral, nil, nil, OpAny, PermissionAny}, pre("orders"), false},
		{"literal filter nil name", Filter{ResourceTopic, nil, PatternLiteral, nil, nil, OpAny, PermissionAny}, lit("x"), true},
		{"prefixed filter exact only", Filter{ResourceTopic, ptr("ord"), PatternPrefixed, nil, nil, OpAny, PermissionAny}, pre("ord"), true},
		{"prefixed filter is not MATCH", Filter{ResourceTopic, ptr("orders"), PatternPrefixed, nil, nil, OpAny, PermissionAny}, pre("ord"), false},
		{"any pattern exact name literal", Filter{ResourceTopic, ptr("ord"), PatternAny, nil, nil, OpAny, PermissionAny}, lit("ord"), true},
		{"any pattern exact name prefixed", Filter{ResourceTopic, ptr("ord"), PatternAny, nil, nil, OpAny, PermissionAny}, pre("ord"), true},
		{"any pattern is not MATCH", Filter{ResourceTopic, ptr("orders"), PatternAny, nil, nil, OpAny, PermissionAny}, pre("ord"), false},
		{"MATCH literal", match("orders"), lit("orders"), true},
		{"MATCH wildcard", match("orders"), lit("*"), true},
		{"MATCH prefix", match("orders"), pre("ord"), true},
		{"MATCH whole name as prefix", match("orders"), pre("orders"), true},
		{"MATCH longer prefix", match("orders"), pre("orders-eu"), false},
		{"MATCH other literal", match("orders"), lit("ord"), false},
		{"MATCH prefixed star is literal text", match("orders"), pre("*"), false},
		{"MATCH other type", match("orders"), ACL{ResourceGroup, "orders", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow}, false},
		{"MATCH without name", Filter{ResourceTopic, nil, PatternMatch, nil, nil, OpAny, PermissionAny}, pre("x"), true},
		{"principal exact", Filter{ResourceAny, nil, PatternAny, ptr("User:alice"), nil, OpAny, PermissionAny}, lit("x"), true},
		{"principal does not expand wildcard", Filter{ResourceAny, nil, PatternAny, ptr("User:alice"), nil, OpAny, PermissionAny},
			ACL{ResourceTopic, "x", PatternLiteral, "User:*", "*", OpRead, PermissionAllow}, false},
		{"host exact", Filter{ResourceAny, nil, PatternAny, nil, ptr("*"), OpAny, PermissionAny}, lit("x"), true},
		{"host other", Filter{ResourceAny, nil, PatternAny, nil, ptr("10.0.0.1"), OpAny, PermissionAny}, lit("x"), false},
		{"operation", Filter{ResourceAny, nil, PatternAny, nil, nil, OpWrite, PermissionAny}, lit("x"), false},
		{"operation ALL is not ANY", Filter{ResourceAny, nil, PatternAny, nil, nil, OpAll, PermissionAny}, lit("x"), false},
		{"permission", Filter{ResourceAny, nil, PatternAny, nil, nil, OpAny, PermissionDeny}, lit("x"), false},
	} {
		if got := tc.filter.Matches(tc.acl); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilterValidate(t *testing.T) {
	if err := MatchAll.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{ResourceUnknown, nil, PatternAny, nil, nil, OpAny, PermissionAny}, "Unknown patternFilter."},
		{Filter{ResourceType(42), nil, PatternAny, nil, nil, OpAny, PermissionAny}, "Unknown patternFilter."},
		{Filter{ResourceAny, nil, PatternUnknown, nil, nil, OpAny, PermissionAny}, "Unknown patternFilter."},
		{Filter{ResourceAny, nil, PatternAny, nil, nil, OpUnknown, PermissionAny}, "Unknown entryFilter."},
		{Filter{ResourceAny, nil, PatternAny, nil, nil, OpAny, Permission(-3)}, "Unknown entryFilter."},
	} {
		if err := tc.f.Validate(); err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidACL) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.f, err, tc.want)
		}
	}
}

func TestValidateNew(t *testing.T) {
	good := ACL{ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow}
	if err := ValidateNew(good); err != nil {
		t.Fatal(err)
	}
	cluster := ACL{ResourceCluster, "kafka-cluster", PatternLiteral, "Group:ops", "10.0.0.1", OpAlter, PermissionDeny}
	if err := ValidateNew(cluster); err != nil {
		t.Fatal(err)
	}
	with := func(f func(*ACL)) ACL { a := good; f(&a); return a }
	for _, tc := range []struct {
		acl  ACL
		want string
	}{
		{with(func(a *ACL) { a.ResourceType, a.ResourceName = ResourceCluster, "my-cluster" }), "The only valid name for the CLUSTER resource is kafka-cluster"},
		{with(func(a *ACL) { a.ResourceName = "" }), "Invalid empty resource name"},
		{with(func(a *ACL) { a.ResourceType = ResourceAny }), "Invalid resourceType ANY"},
		{with(func(a *ACL) { a.ResourceType = ResourceUnknown }), "Invalid resourceType UNKNOWN"},
		{with(func(a *ACL) { a.ResourceType = 99 }), "Invalid resourceType UNKNOWN"},
		{with(func(a *ACL) { a.PatternType = PatternMatch }), "Invalid patternType MATCH"},
		{with(func(a *ACL) { a.PatternType = PatternAny }), "Invalid patternType ANY"},
		{with(func(a *ACL) { a.Operation = OpAny }), "Invalid operation ANY"},
		{with(func(a *ACL) { a.Operation = OpUnknown }), "Invalid operation UNKNOWN"},
		{with(func(a *ACL) { a.Permission = PermissionAny }), "Invalid permissionType ANY"},
		{with(func(a *ACL) { a.Principal = "alice" }), "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
	} {
		err := ValidateNew(tc.acl)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidACL) {
			t.Errorf("ValidateNew(%v) = %v, want %q", tc.acl, err, tc.want)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:Bob ; User:Alice;;CN=x,O=y:z ")
	if err != nil || !slices.Equal(got, []string{"User:Bob", "User:Alice", "CN=x,O=y:z"}) {
		t.Fatalf("ParseSuperUsers = %q, %v", got, err)
	}
	if got, err := ParseSuperUsers(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %q %v", got, err)
	}
	if _, err := ParseSuperUsers("User:Bob;Alice"); err == nil || !strings.Contains(err.Error(), "principalType:principalName but got Alice") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnumNamesAndParsing(t *testing.T) {
	if OpDescribeConfigs.String() != "DESCRIBE_CONFIGS" || ResourceTransactionalID.String() != "TRANSACTIONAL_ID" ||
		PatternPrefixed.String() != "PREFIXED" || PermissionDeny.String() != "DENY" || Operation(99).String() != "UNKNOWN" ||
		ResourceType(-1).String() != "UNKNOWN" {
		t.Error("String()")
	}
	if op, err := ParseOperation("describe-configs"); err != nil || op != OpDescribeConfigs {
		t.Error(op, err)
	}
	if rt, err := ParseResourceType("Topic"); err != nil || rt != ResourceTopic {
		t.Error(rt, err)
	}
	if pt, err := ParsePatternType("4"); err != nil || pt != PatternPrefixed {
		t.Error(pt, err)
	}
	if p, err := ParsePermission("allow"); err != nil || p != PermissionAllow {
		t.Error(p, err)
	}
	for _, bad := range []string{"", "unknown", "0", "nope", "16"} {
		if _, err := ParseOperation(bad); err == nil {
			t.Errorf("ParseOperation(%q) accepted", bad)
		}
	}
	if !slices.Contains(SupportedOperations(ResourceTopic), OpDescribeConfigs) || SupportedOperations(ResourceAny) != nil {
		t.Error("SupportedOperations")
	}
	if !IsBuiltinAuthorizerClass("org.apache.kafka.metadata.authorizer.StandardAuthorizer") ||
		!IsBuiltinAuthorizerClass("kafka.security.authorizer.AclAuthorizer") || IsBuiltinAuthorizerClass("") ||
		IsBuiltinAuthorizerClass("com.example.Custom") {
		t.Error("IsBuiltinAuthorizerClass")
	}
	if UserPrincipal("alice") != "User:alice" {
		t.Error("UserPrincipal")
	}
}
