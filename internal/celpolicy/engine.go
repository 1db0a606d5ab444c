package celpolicy

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"kbroker/policy"
)

// Violation is a resource a rule rejected. Its message is what the client
// receives with POLICY_VIOLATION: the rule's message, then the rule's
// name, so a dry run says which rule to read.
type Violation struct {
	Rule    string
	Message string
}

// ViolationSuffix starts the part of a rejection's message that names
// the rule; cmd/kbroker finds the rule after it.
const ViolationSuffix = " (policy rule "

func (v *Violation) Error() string { return v.Message + ViolationSuffix + v.Rule + ")" }

// Rejection is one rejection, for the metrics and the audit log.
type Rejection struct {
	Rule, Operation, Message string
	Principal, Client        string
	Resource                 string // "topic orders", "user alice", ...
}

// Engine runs the rule set in effect, then the embedder's Go policies, for
// each resource of a request. It implements the policy interfaces, so it
// sits where a Go policy sits. The zero value is not usable: use New.
type Engine struct {
	set atomic.Pointer[RuleSet]

	// The embedder's Go policies (broker.With…Policy), run after the
	// rules allowed a resource; nil ones allow everything.
	AlterConfig       policy.AlterConfig
	CreateTopic       policy.CreateTopic
	CreatePartitions  policy.CreatePartitions
	AlterClientQuotas policy.AlterClientQuotas

	// OnReject is called for every rejection by a rule; nil: none.
	OnReject func(Rejection)
}

// New returns an engine with no rules.
func New() *Engine { return &Engine{} }

// Swap puts set in effect (nil: no rules). A request already being
// evaluated finishes with the set it started with.
func (e *Engine) Swap(set *RuleSet) { e.set.Store(set) }

// Rules is the rule set in effect (nil: none).
func (e *Engine) Rules() *RuleSet { return e.set.Load() }

// ValidateAlterConfig runs the alter-configs rules, then the Go policy.
func (e *Engine) ValidateAlterConfig(r policy.AlterConfigRequest) error {
	if err := e.eval(OpAlterConfigs, func() *Vars { return alterConfigVars(r) }); err != nil {
		return err
	}
	if e.AlterConfig != nil {
		return e.AlterConfig.ValidateAlterConfig(r)
	}
	return nil
}

// ValidateCreateTopic runs the create-topic rules, then the Go policy.
func (e *Engine) ValidateCreateTopic(r policy.CreateTopicRequest) error {
	if err := e.eval(OpCreateTopic, func() *Vars { return createTopicVars(r) }); err != nil {
		return err
	}
	if e.CreateTopic != nil {
		return e.CreateTopic.ValidateCreateTopic(r)
	}
	return nil
}

// ValidateCreatePartitions runs the create-partitions rules, then the Go
// policy.
func (e *Engine) ValidateCreatePartitions(r policy.CreatePartitionsRequest) error {
	if err := e.eval(OpCreatePartitions, func() *Vars { return createPartitionsVars(r) }); err != nil {
		return err
	}
	if e.CreatePartitions != nil {
		return e.CreatePartitions.ValidateCreatePartitions(r)
	}
	return nil
}

// ValidateAlterClientQuotas runs the alter-client-quotas rules, then the
// Go policy.
func (e *Engine) ValidateAlterClientQuotas(r policy.ClientQuotaRequest) error {
	if err := e.eval(OpAlterClientQuotas, func() *Vars { return clientQuotaVars(r) }); err != nil {
		return err
	}
	if e.AlterClientQuotas != nil {
		return e.AlterClientQuotas.ValidateAlterClientQuotas(r)
	}
	return nil
}

// eval runs the rules on op of the set in effect (loaded once, so one
// resource sees one set) against vars; the first rule that rejects wins.
func (e *Engine) eval(op string, varsOf func() *Vars) error {
	set := e.set.Load()
	rules := set.For(op)
	if len(rules) == 0 {
		return nil
	}
	vars := varsOf() // only now: without rules, a request costs nothing here
	if groups := set.groups[op]; groups != nil {
		first, ok := len(rules), true
		for _, g := range groups {
			i, evaluated := g.firstRejecting(vars)
			if !evaluated {
				ok = false // an error: the rules one by one find the rule
				break
			}
			if i >= 0 {
				first = min(first, g.at[i])
			}
		}
		if ok {
			if first == len(rules) {
				return nil
			}
			rules = rules[first:] // the rule that rejects, evaluated alone for its message
		}
	}
	for _, r := range rules {
		if v := r.Eval(vars); v != nil {
			if e.OnReject != nil {
				e.OnReject(Rejection{Rule: v.Rule, Operation: op, Message: v.Message,
					Principal: vars.Principal, Client: vars.ClientAddress, Resource: vars.ResourceType + " " + vars.ResourceName})
			}
			return v
		}
	}
	return nil
}

// Eval runs one rule against vars: nil when it does not match or allows,
// the violation when it rejects.
func (r *Rule) Eval(vars *Vars) *Violation {
	_, v := r.Check(vars)
	return v
}

// Check runs one rule against vars and says whether its match held (a
// rule without match always matches) and, if it rejects, why. The rule
// rejects when "match && !validate" holds or cannot be evaluated (a key
// that is not there, a value that is not a number): a policy that cannot
// decide must not let the change through.
func (r *Rule) Check(vars *Vars) (matched bool, _ *Violation) {
	act := vars.activation()
	matched = true
	if r.match != nil {
		out, err := r.match.eval(act)
		matched = err != nil || out == types.True
	}
	out, err := r.cond.eval(act)
	if err != nil {
		return matched, &Violation{Rule: r.Name, Message: fmt.Sprintf("the rule could not be evaluated: %v", err)}
	}
	if out != types.True {
		return matched, nil
	}
	msg := r.messageText
	if r.message != nil {
		m, err := r.message.eval(act)
		if s, ok := m.(types.String); err == nil && ok {
			msg = string(s)
		} else {
			msg = "the change is not allowed (its message could not be evaluated: " + errText(err, m) + ")"
		}
	}
	return true, &Violation{Rule: r.Name, Message: msg}
}

func errText(err error, v ref.Val) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%v is not a string", v)
}

// Vars are the values a rule reads for one resource.
type Vars struct {
	Operation                  string
	Principal                  string // "User:alice"
	ClientAddress, Listener    string
	ResourceType, ResourceName string
	Changes                    map[string]any
	Configs                    map[string]string
	Topic                      map[string]any
	Entity                     map[string]string
	Quotas                     map[string]float64

	act        *activation
	changesSum [2]uint64 // memo.go, computed once per resource
	configsSum [2]uint64
}

func (v *Vars) activation() interpreter.Activation {
	if v.act == nil {
		v.act = &activation{vars: v}
	}
	return v.act
}

// activation resolves the variables of one resource, each converted to a
// CEL value once however many rules read it.
type activation struct {
	vars  *Vars
	cache [9]ref.Val
}

var varIndex = map[string]int{"operation": 0, "principal": 1, "client": 2, "resource": 3, "changes": 4,
	"configs": 5, "topic": 6, "entity": 7, "quotas": 8}

func (a *activation) ResolveName(name string) (any, bool) {
	i, ok := varIndex[name]
	if !ok {
		return nil, false
	}
	if v := a.cache[i]; v != nil {
		return v, true
	}
	v := a.vars
	var val ref.Val
	adapter := types.DefaultTypeAdapter
	switch i {
	case 0:
		val = types.String(v.Operation)
	case 1:
		typ, pname, _ := strings.Cut(v.Principal, ":")
		val = fields(adapter, "type", typ, "name", pname, "full", v.Principal)
	case 2:
		val = fields(adapter, "address", v.ClientAddress, "listener", v.Listener)
	case 3:
		val = fields(adapter, "type", v.ResourceType, "name", v.ResourceName)
	case 4:
		val = adapter.NativeToValue(orEmpty(v.Changes))
	case 5:
		val = types.NewStringStringMap(adapter, orEmpty(v.Configs))
	case 6:
		val = adapter.NativeToValue(orEmpty(v.Topic))
	case 7:
		val = types.NewStringStringMap(adapter, orEmpty(v.Entity))
	case 8:
		val = adapter.NativeToValue(orEmpty(v.Quotas))
	}
	a.cache[i] = val
	return val, true
}

func (a *activation) Parent() interpreter.Activation { return nil }

// fields is a small map(string, string) of CEL values: reading a field
// converts nothing, where a Go map's value would be converted per read.
func fields(adapter types.Adapter, kv ...string) ref.Val {
	m := make(map[ref.Val]ref.Val, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[types.String(kv[i])] = types.String(kv[i+1])
	}
	return types.NewRefValMap(adapter, m)
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// resourceTypeNames name config resource types as rules see them.
var resourceTypeNames = map[policy.ResourceType]string{
	policy.Topic: "topic", policy.Broker: "broker", policy.BrokerLogger: "broker-logger",
	policy.User: "user", policy.Client: "client", 32: "group",
}

func resourceTypeName(t policy.ResourceType) string {
	if n, ok := resourceTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type-%d", t)
}

func requesterVars(op string, r policy.Requester) *Vars {
	return &Vars{Operation: op, Principal: r.Principal, ClientAddress: r.ClientAddress, Listener: r.Listener}
}

func alterConfigVars(r policy.AlterConfigRequest) *Vars {
	v := requesterVars(OpAlterConfigs, r.Requester)
	v.ResourceType, v.ResourceName = resourceTypeName(r.Resource.Type), r.Resource.Name
	v.Changes = make(map[string]any, len(r.Configs))
	for k, val := range r.Configs {
		if val == nil {
			v.Changes[k] = types.NullValue
		} else {
			v.Changes[k] = *val
		}
	}
	v.Configs = r.Resulting
	return v
}

func createTopicVars(r policy.CreateTopicRequest) *Vars {
	v := requesterVars(OpCreateTopic, r.Requester)
	v.ResourceType, v.ResourceName = "topic", r.Topic
	v.Changes = make(map[string]any, len(r.Configs))
	for k, val := range r.Configs {
		v.Changes[k] = val
	}
	v.Configs = r.Configs
	topic := map[string]any{"name": r.Topic, "current_partitions": int64(0)}
	if r.NumPartitions != nil {
		topic["partitions"] = int64(*r.NumPartitions)
	}
	if r.ReplicationFactor != nil {
		topic["replication_factor"] = int64(*r.ReplicationFactor)
	}
	if r.Assignments != nil {
		// The counts a manual assignment implies, so a rule on them
		// holds for both ways of creating a topic.
		assignments := map[int64][]int64{}
		rf := -1 // the smallest replica count of any partition
		for p, replicas := range r.Assignments {
			assignments[int64(p)] = ints(replicas)
			if rf < 0 || len(replicas) < rf {
				rf = len(replicas)
			}
		}
		topic["assignments"] = assignments
		topic["partitions"], topic["replication_factor"] = int64(len(r.Assignments)), int64(rf)
	} else {
		topic["assignments"] = map[int64][]int64{}
	}
	v.Topic = topic
	return v
}

func createPartitionsVars(r policy.CreatePartitionsRequest) *Vars {
	v := requesterVars(OpCreatePartitions, r.Requester)
	v.ResourceType, v.ResourceName = "topic", r.Topic
	assignments := map[int64][]int64{}
	for i, replicas := range r.Assignments {
		assignments[int64(r.CurrentPartitions)+int64(i)] = ints(replicas)
	}
	v.Topic = map[string]any{"name": r.Topic, "partitions": int64(r.NewPartitions),
		"current_partitions": int64(r.CurrentPartitions), "assignments": assignments}
	return v
}

func clientQuotaVars(r policy.ClientQuotaRequest) *Vars {
	v := requesterVars(OpAlterClientQuotas, r.Requester)
	v.ResourceType, v.ResourceName = "client-quota", EntityName(r.Entity)
	v.Entity = r.Entity
	v.Changes = make(map[string]any, len(r.Changes))
	for k, val := range r.Changes {
		if val == nil {
			v.Changes[k] = types.NullValue
		} else {
			v.Changes[k] = *val
		}
	}
	v.Quotas = r.Resulting
	return v
}

// EntityName is a quota entity as a path, "users/alice/clients/app",
// "users/<default>", "ips/10.0.0.1".
func EntityName(entity map[string]string) string {
	var parts []string
	for _, t := range []struct{ key, word string }{{"user", "users"}, {"client-id", "clients"}, {"ip", "ips"}} {
		if name, ok := entity[t.key]; ok {
			parts = append(parts, t.word+"/"+name)
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(entity))
		for k := range entity {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return strings.Join(keys, ",")
	}
	return strings.Join(parts, "/")
}

func ints(in []int32) []int64 {
	out := make([]int64, len(in))
	for i, x := range in {
		out[i] = int64(x)
	}
	return out
}
