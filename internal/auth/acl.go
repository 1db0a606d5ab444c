package auth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The ACL enums carry Kafka's wire codes (AclOperation, ResourceType, PatternType, AclPermissionType), so
// a kmsg.ACLOperation converts with Operation(x) and back with kmsg.ACLOperation(op).
type (
	ResourceType int8
	PatternType  int8
	Operation    int8
	Permission   int8
)

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7 // ACL APIs v3+ (KIP-373)
)

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters only: any pattern type, exact name
	PatternMatch    PatternType = 2 // filters only: every pattern that applies to the literal name
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15 // KIP-939, newest Kafka only
)

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

const (
	// ClusterName is the only valid name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// WildcardResource as a LITERAL resource name matches every resource of its type.
	WildcardResource = "*"
	// WildcardPrincipal in an ACL matches every principal, whatever its type.
	WildcardPrincipal = "User:*"
	// WildcardHost in an ACL matches every client address.
	WildcardHost = "*"
	// AnonymousPrincipal is the principal of unauthenticated (PLAINTEXT, certificate-less SSL) connections.
	AnonymousPrincipal = "User:ANONYMOUS"
)

// UserPrincipal is the principal Kafka's DefaultKafkaPrincipalBuilder forms for a SASL authorization id
// (or a TLS distinguished name).
func UserPrincipal(name string) string { return "User:" + name }

// Names as Java's enum name(): they appear in Kafka's error messages ("Invalid operation ANY") and CLI output.
var (
	resourceTypeNames = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	patternTypeNames  = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames    = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
		"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
		"TWO_PHASE_COMMIT"}
	permissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

// Kafka's fromCode maps every code it does not know to UNKNOWN; so do these.
func enumName(names []string, code int8) string {
	if code < 0 || int(code) >= len(names) {
		return names[0]
	}
	return names[code]
}

func (t ResourceType) String() string { return enumName(resourceTypeNames, int8(t)) }
func (t PatternType) String() string  { return enumName(patternTypeNames, int8(t)) }
func (o Operation) String() string    { return enumName(operationNames, int8(o)) }
func (p Permission) String() string   { return enumName(permissionNames, int8(p)) }

// parseEnum accepts Java's enum names case-insensitively, with '-' or ' ' for '_' (kafka-acls.sh style), or a
// decimal code; it is for CLIs and config files, never for the wire.
func parseEnum(names []string, kind, s string) (int8, error) {
	norm := strings.ToUpper(strings.NewReplacer("-", "_", " ", "_").Replace(strings.TrimSpace(s)))
	for i, n := range names {
		if n == norm && i != 0 {
			return int8(i), nil
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 && n < len(names) {
		return int8(n), nil
	}
	return 0, fmt.Errorf("unknown %s %q (valid: %s)", kind, s, strings.Join(names[1:], ", "))
}

func ParseResourceType(s string) (ResourceType, error) {
	v, err := parseEnum(resourceTypeNames, "resource type", s)
	return ResourceType(v), err
}

func ParsePatternType(s string) (PatternType, error) {
	v, err := parseEnum(patternTypeNames, "pattern type", s)
	return PatternType(v), err
}

func ParseOperation(s string) (Operation, error) {
	v, err := parseEnum(operationNames, "operation", s)
	return Operation(v), err
}

func ParsePermission(s string) (Permission, error) {
	v, err := parseEnum(permissionNames, "permission type", s)
	return Permission(v), err
}

// SupportedOperations lists the operations that mean something on a resource type (Kafka's
// AclEntry.supportedOperations; kafka-acls.sh refuses others, the broker stores them anyway).
func SupportedOperations(rt ResourceType) []Operation {
	switch rt {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// ACL is one access control entry bound to a resource pattern (Kafka's AclBinding).
type ACL struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string // "Type:Name", e.g. "User:alice", or WildcardPrincipal
	Host         string // client IP address, or WildcardHost
	Operation    Operation
	Permission   Permission
}

// String has the shape of Kafka's AclBinding.toString, for logs.
func (a ACL) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission)
}

// Filter selects ACLs for DescribeAcls and DeleteAcls (Kafka's AclBindingFilter). ResourceAny, PatternAny,
// OpAny and PermissionAny match every value; a nil ResourceName, Principal or Host matches any.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// MatchAll is the filter that selects every ACL.
var MatchAll = Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}

// Matches follows ResourcePatternFilter.matches and AccessControlEntryFilter.matches: principal and host are
// compared exactly (a filter for "User:alice" does not select a "User:*" ACL); a named filter with pattern
// type ANY selects that exact name under any pattern type; MATCH selects every ACL that would apply to the
// literal name: the LITERAL name itself, the LITERAL wildcard "*", and every PREFIXED prefix of the name.
func (f Filter) Matches(a ACL) bool {
	return f.matchesPattern(a) && f.matchesEntry(a)
}

func (f Filter) matchesPattern(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == PatternAny || f.PatternType == a.PatternType {
		return name == a.ResourceName
	}
	// MATCH against a concrete pattern.
	switch a.PatternType {
	case PatternLiteral:
		return name == a.ResourceName || a.ResourceName == WildcardResource
	case PatternPrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

func (f Filter) matchesEntry(a ACL) bool {
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == a.Permission
}

// ErrInvalidACL marks every ValidateNew and Filter.Validate rejection; Kafka answers them with
// INVALID_REQUEST (42) and the error's message.
var ErrInvalidACL = errors.New("invalid ACL")

type aclError struct{ msg string }

func (e *aclError) Error() string        { return e.msg }
func (e *aclError) Is(target error) bool { return target == ErrInvalidACL }

func invalidACL(format string, args ...any) error {
	return &aclError{msg: fmt.Sprintf(format, args...)}
}

// Validate rejects filters with UNKNOWN elements (an enum code the broker does not know), with the messages
// of Kafka's AclControlManager.validateFilter.
func (f Filter) Validate() error {
	if enumCode(resourceTypeNames, int8(f.ResourceType)) == 0 || enumCode(patternTypeNames, int8(f.PatternType)) == 0 {
		return invalidACL("Unknown patternFilter.")
	}
	if enumCode(operationNames, int8(f.Operation)) == 0 || enumCode(permissionNames, int8(f.Permission)) == 0 {
		return invalidACL("Unknown entryFilter.")
	}
	return nil
}

// enumCode maps codes outside the known range to 0 (UNKNOWN), as Kafka's fromCode does.
func enumCode(names []string, code int8) int8 {
	if code < 0 || int(code) >= len(names) {
		return 0
	}
	return code
}

// ValidateNew applies CreateAcls' per-creation checks in Kafka's order (AclApis.handleCreateAcls, then
// AclControlManager.validateNewAcl), with Kafka's messages. Every rejection is ErrInvalidACL (INVALID_REQUEST).
// The v0-only-LITERAL rule depends on the request version and stays with the handler.
func ValidateNew(a ACL) error {
	rt := ResourceType(enumCode(resourceTypeNames, int8(a.ResourceType)))
	if rt == ResourceCluster && a.ResourceName != ClusterName {
		return invalidACL("The only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if a.ResourceName == "" {
		return invalidACL("Invalid empty resource name")
	}
	if rt == ResourceUnknown || rt == ResourceAny {
		return invalidACL("Invalid resourceType %s", rt)
	}
	if a.PatternType != PatternLiteral && a.PatternType != PatternPrefixed {
		return invalidACL("Invalid patternType %s", a.PatternType)
	}
	if op := Operation(enumCode(operationNames, int8(a.Operation))); op == OpUnknown || op == OpAny {
		return invalidACL("Invalid operation %s", op)
	}
	if a.Permission != PermissionAllow && a.Permission != PermissionDeny {
		return invalidACL("Invalid permissionType %s", a.Permission)
	}
	if !strings.Contains(a.Principal, ":") {
		return invalidACL("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", a.Principal)
	}
	return nil
}

// ParseSuperUsers parses super.users ("User:Bob;User:Alice"): semicolon-separated, blanks trimmed and
// skipped, each entry "Type:Name" (Kafka's SecurityUtils.parseKafkaPrincipal; the type is case-sensitive).
func ParseSuperUsers(v string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(v, ";") {
		p := strings.TrimSpace(part)
		if p == "" {
			continue
		}
		if !strings.Contains(p, ":") {
			return nil, fmt.Errorf("super.users: expected a string in format principalType:principalName but got %s", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Authorizer class names that select the built-in authorizer (authorizer.class.name): KRaft's
// StandardAuthorizer and the ZooKeeper-era AclAuthorizer / SimpleAclAuthorizer, so a server.properties copied
// from any Kafka version works unchanged.
var builtinAuthorizerClasses = map[string]bool{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer": true,
	"kafka.security.authorizer.AclAuthorizer":                 true,
	"kafka.security.auth.SimpleAclAuthorizer":                 true,
}

// IsBuiltinAuthorizerClass reports whether authorizer.class.name selects the built-in authorizer. An empty
// value means no authorizer (everything allowed, ACL APIs answer SECURITY_DISABLED).
func IsBuiltinAuthorizerClass(name string) bool {
	return builtinAuthorizerClasses[strings.TrimSpace(name)]
}
