package auth

import (
	"sort"
	"strings"
)

// Authorizer answers "may this principal, from this host, do this operation on this resource?" with the
// semantics of Kafka's StandardAuthorizer (KRaft):
//
//   - a super user (super.users) may do everything, whatever the ACLs say;
//   - the ACLs that apply to a resource are the LITERAL ones with its exact name, the LITERAL wildcard "*"
//     and every PREFIXED one whose name is a prefix of (or equal to) the resource name, of the same type;
//   - an ACL applies to a request when its principal is the request's or "User:*" and its host is the
//     request's address or "*";
//   - a matching DENY wins over any ALLOW;
//   - ALLOW ACLs imply operations: READ, WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS; DENY ACLs deny only their own operation; ALL (either permission) matches any;
//   - with no ACL at all on the resource (of any principal, host or operation) the answer is
//     allow.everyone.if.no.acl.found; otherwise no matching ALLOW means denied.
//
// An Authorizer is immutable and safe for concurrent use. The owner builds a new one on every ACL change
// and publishes it through an atomic.Pointer; Authorize takes no lock and allocates nothing.
type Authorizer struct {
	superUsers   map[string]struct{}
	allowIfNoACL bool
	types        [numResourceTypes]*typeIndex // by ResourceType code; nil when the type has no ACLs
	count        int
}

const numResourceTypes = 8

// typeIndex holds the ACLs of one resource type, indexed so that the rules that apply to a name are found
// without scanning unrelated ACLs: a map for LITERAL names, one set for the LITERAL wildcard, and a radix tree
// of PREFIXED names walked along the resource name.
type typeIndex struct {
	literal  map[string]*ruleSet
	wildcard *ruleSet
	prefixed *radixNode // root; nil when the type has no PREFIXED ACLs
	acls     []ACL      // every ACL of the type, for AuthorizeByResourceType
}

// ruleSet is the ACLs of one resource pattern, grouped by principal (sorted, binary-searched) so that a
// resource with thousands of principals' ACLs costs a search, not a scan. It is never empty.
type ruleSet struct {
	byPrincipal  []principalRules
	anyPrincipal []rule // principal "User:*"
}

type principalRules struct {
	principal string
	rules     []rule
}

type rule struct {
	host  string
	op    Operation
	allow bool // Kafka treats every non-ALLOW permission as DENY
}

type verdict uint8

const (
	noMatch verdict = iota
	allowed
	denied
)

// NewAuthorizer indexes acls. superUsers are "Type:Name" strings (see ParseSuperUsers); allowEveryoneIfNoACL
// is allow.everyone.if.no.acl.found. ACLs with a resource type outside Kafka's range or a pattern type other
// than LITERAL/PREFIXED are dropped (and not counted by Len): no request could match them.
func NewAuthorizer(acls []ACL, superUsers []string, allowEveryoneIfNoACL bool) *Authorizer {
	a := &Authorizer{superUsers: make(map[string]struct{}, len(superUsers)), allowIfNoACL: allowEveryoneIfNoACL}
	for _, u := range superUsers {
		a.superUsers[u] = struct{}{}
	}
	type groups struct {
		literal, prefixed map[string][]ACL
		wildcard          []ACL
		all               []ACL
	}
	var byType [numResourceTypes]*groups
	for _, acl := range acls {
		rt := int(acl.ResourceType)
		if rt < 0 || rt >= numResourceTypes {
			continue
		}
		g := byType[rt]
		if g == nil {
			g = &groups{literal: map[string][]ACL{}, prefixed: map[string][]ACL{}}
			byType[rt] = g
		}
		switch {
		case acl.PatternType == PatternLiteral && acl.ResourceName == WildcardResource:
			g.wildcard = append(g.wildcard, acl)
		case acl.PatternType == PatternLiteral:
			g.literal[acl.ResourceName] = append(g.literal[acl.ResourceName], acl)
		case acl.PatternType == PatternPrefixed:
			g.prefixed[acl.ResourceName] = append(g.prefixed[acl.ResourceName], acl)
		default:
			continue // ANY/MATCH/UNKNOWN are not patterns an ACL can have
		}
		g.all = append(g.all, acl)
		a.count++
	}
	for rt, g := range byType {
		if g == nil || len(g.all) == 0 {
			continue
		}
		idx := &typeIndex{literal: make(map[string]*ruleSet, len(g.literal)), acls: g.all}
		for name, list := range g.literal {
			idx.literal[name] = newRuleSet(list)
		}
		if len(g.wildcard) > 0 {
			idx.wildcard = newRuleSet(g.wildcard)
		}
		if len(g.prefixed) > 0 {
			idx.prefixed = &radixNode{}
			for name, list := range g.prefixed {
				idx.prefixed.insert(name).rules = newRuleSet(list)
			}
		}
		a.types[rt] = idx
	}
	return a
}

func newRuleSet(acls []ACL) *ruleSet {
	s := &ruleSet{}
	byPrincipal := map[string][]rule{}
	for _, acl := range acls {
		r := rule{host: acl.Host, op: acl.Operation, allow: acl.Permission == PermissionAllow}
		if acl.Principal == WildcardPrincipal {
			s.anyPrincipal = append(s.anyPrincipal, r)
		} else {
			byPrincipal[acl.Principal] = append(byPrincipal[acl.Principal], r)
		}
	}
	for p, rules := range byPrincipal {
		s.byPrincipal = append(s.byPrincipal, principalRules{principal: p, rules: rules})
	}
	sort.Slice(s.byPrincipal, func(i, j int) bool { return s.byPrincipal[i].principal < s.byPrincipal[j].principal })
	return s
}

// Len is the number of ACLs the authorizer holds.
func (a *Authorizer) Len() int { return a.count }

// IsSuperUser reports whether principal is listed in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool {
	_, ok := a.superUsers[principal]
	return ok
}

// Authorize decides one action. principal is "Type:Name" (e.g. "User:alice"), host the client's IP address
// as text, name the resource's literal name (ClusterName for CLUSTER). A nil Authorizer allows everything,
// like a broker without authorizer.class.name.
func (a *Authorizer) Authorize(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a == nil {
		return true
	}
	if _, ok := a.superUsers[principal]; ok {
		return true
	}
	if rt < 0 || int(rt) >= numResourceTypes || a.types[rt] == nil {
		return a.allowIfNoACL
	}
	idx := a.types[rt]
	found, allow := false, false
	// check folds one applicable rule set into the result; it returns true on DENY, which ends the search.
	check := func(s *ruleSet) bool {
		found = true
		switch s.eval(principal, host, op) {
		case denied:
			return true
		case allowed:
			allow = true
		}
		return false
	}
	if s := idx.literal[name]; s != nil && check(s) {
		return false
	}
	if s := idx.wildcard; s != nil && check(s) { // never also in literal: no double counting for name "*"
		return false
	}
	for n, rest := idx.prefixed, name; n != nil; {
		if n.rules != nil && check(n.rules) {
			return false
		}
		n, rest = n.next(rest)
	}
	if allow {
		return true
	}
	if !found {
		return a.allowIfNoACL
	}
	return false
}

func (s *ruleSet) eval(principal, host string, op Operation) verdict {
	v := noMatch
	if rules := s.rulesOf(principal); rules != nil {
		if v = evalRules(rules, host, op); v == denied {
			return denied
		}
	}
	switch evalRules(s.anyPrincipal, host, op) {
	case denied:
		return denied
	case allowed:
		v = allowed
	}
	return v
}

func (s *ruleSet) rulesOf(principal string) []rule {
	lo, hi := 0, len(s.byPrincipal)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.byPrincipal[m].principal < principal {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.byPrincipal) && s.byPrincipal[lo].principal == principal {
		return s.byPrincipal[lo].rules
	}
	return nil
}

func evalRules(rules []rule, host string, op Operation) verdict {
	v := noMatch
	for i := range rules {
		r := &rules[i]
		if r.host != WildcardHost && r.host != host {
			continue
		}
		if !r.matches(op) {
			continue
		}
		if !r.allow {
			return denied
		}
		v = allowed
	}
	return v
}

// matches is StandardAuthorizerData.findResult's operation test: implied operations apply to ALLOW only.
func (r *rule) matches(op Operation) bool {
	if r.op == OpAll || r.op == op {
		return true
	}
	if !r.allow {
		return false
	}
	switch op {
	case OpDescribe:
		return r.op == OpRead || r.op == OpWrite || r.op == OpDelete || r.op == OpAlter
	case OpDescribeConfigs:
		return r.op == OpAlterConfigs
	}
	return false
}

// AuthorizeByResourceType answers "may principal do op on at least one resource of type rt?", as Kafka's
// Authorizer.authorizeByResourceType (KIP-679): InitProducerId and idempotent Produce without
// IDEMPOTENT_WRITE on the cluster need WRITE on some topic. Like Kafka it first authorizes a dummy resource
// (so super users and allow.everyone.if.no.acl.found apply), then looks for an ALLOW pattern (op or ALL,
// no implied operations) not dominated by a DENY: a LITERAL "*" DENY denies all, a LITERAL ALLOW is
// dominated by a LITERAL DENY of the same name or a PREFIXED DENY of a prefix, a PREFIXED ALLOW by a PREFIXED
// DENY of a prefix. Not on a hot path: it scans the type's ACLs.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op Operation, rt ResourceType) bool {
	if a == nil || a.Authorize(principal, host, op, rt, "hardcode") {
		return true
	}
	if rt < 0 || int(rt) >= numResourceTypes || a.types[rt] == nil {
		return false
	}
	denyLiteral, denyPrefixed := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefixed []string
	wildcardAllow := false
	for _, acl := range a.types[rt].acls {
		if acl.Host != host && acl.Host != WildcardHost {
			continue
		}
		if acl.Principal != principal && acl.Principal != WildcardPrincipal {
			continue
		}
		if acl.Operation != op && acl.Operation != OpAll {
			continue
		}
		switch {
		case acl.Permission == PermissionDeny && acl.PatternType == PatternLiteral:
			if acl.ResourceName == WildcardResource {
				return false
			}
			denyLiteral[acl.ResourceName] = true
		case acl.Permission == PermissionDeny && acl.PatternType == PatternPrefixed:
			denyPrefixed[acl.ResourceName] = true
		case acl.Permission == PermissionAllow && acl.PatternType == PatternLiteral:
			if acl.ResourceName == WildcardResource {
				wildcardAllow = true // still loses to a wildcard DENY found later in the scan
				continue
			}
			allowLiteral = append(allowLiteral, acl.ResourceName)
		case acl.Permission == PermissionAllow && acl.PatternType == PatternPrefixed:
			allowPrefixed = append(allowPrefixed, acl.ResourceName)
		}
	}
	if wildcardAllow {
		return true
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefixed[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !dominated(n) {
			return true
		}
	}
	for _, n := range allowPrefixed {
		if !dominated(n) {
			return true
		}
	}
	return false
}

// radixNode is a path-compressed trie of PREFIXED resource names. Walking a resource name from the root
// visits exactly the nodes whose key is a prefix of the name, so a lookup costs O(len(name)) whatever the
// number of prefixed ACLs.
type radixNode struct {
	label    string       // edge label from the parent
	rules    *ruleSet     // ACLs whose prefix ends exactly here
	children []*radixNode // sorted by label[0]; labels are non-empty
}

// next follows the edge that continues rest; it returns nil when no stored prefix extends further.
func (n *radixNode) next(rest string) (*radixNode, string) {
	if rest == "" {
		return nil, ""
	}
	i := n.childIndex(rest[0])
	if i < 0 {
		return nil, ""
	}
	c := n.children[i]
	if !strings.HasPrefix(rest, c.label) {
		return nil, ""
	}
	return c, rest[len(c.label):]
}

func (n *radixNode) childIndex(b byte) int {
	lo, hi := 0, len(n.children)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n.children[m].label[0] < b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(n.children) && n.children[lo].label[0] == b {
		return lo
	}
	return -1
}

// insert returns the node for key below n, creating and splitting nodes as needed.
func (n *radixNode) insert(key string) *radixNode {
	for key != "" {
		i := n.childIndex(key[0])
		if i < 0 {
			child := &radixNode{label: key}
			pos := sort.Search(len(n.children), func(j int) bool { return n.children[j].label[0] > key[0] })
			n.children = append(n.children, nil)
			copy(n.children[pos+1:], n.children[pos:])
			n.children[pos] = child
			return child
		}
		c := n.children[i]
		common := 0
		for common < len(key) && common < len(c.label) && key[common] == c.label[common] {
			common++
		}
		if common < len(c.label) { // split c's edge at the divergence
			mid := &radixNode{label: c.label[:common], children: []*radixNode{c}}
			c.label = c.label[common:]
			n.children[i] = mid
			c = mid
		}
		n, key = c, key[common:]
	}
	return n
}
