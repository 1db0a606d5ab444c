// Package celpolicy is kbroker's policy engine for operators: rules in CEL
// (the expression language of Kubernetes admission policies), read from a
// YAML file or the metadata store, that veto config changes, topic
// creation, partition increases and client quota changes as a Go policy
// (package policy) does. A rule set is compiled once, before it is used,
// and evaluated per resource; an Engine holds the rule set in effect and
// swaps a new one in atomically.
//
// A rule file:
//
//	rules:
//	- name: retention-bounds
//	  on: [alter-configs, create-topic]
//	  match: '"retention.ms" in configs && !resource.name.startsWith("audit.")'
//	  validate: millis(configs["retention.ms"]) >= duration("1h") && millis(configs["retention.ms"]) <= duration("30d")
//	  message: '"retention.ms must be between 1h and 30d, not " + configs["retention.ms"]'
package celpolicy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types/ref"
	"go.yaml.in/yaml/v3"
)

// The operations a rule can be on.
const (
	OpAlterConfigs      = "alter-configs"
	OpCreateTopic       = "create-topic"
	OpCreatePartitions  = "create-partitions"
	OpAlterClientQuotas = "alter-client-quotas"
)

// Operations lists every operation a rule can name in on.
var Operations = []string{OpAlterConfigs, OpCreateTopic, OpCreatePartitions, OpAlterClientQuotas}

// maxRules bounds a rule set: each rule runs for every resource of every
// request it is on.
const maxRules = 10000

// Rule is one compiled rule.
type Rule struct {
	Name string
	On   []string
	Line int // where the rule starts in its file

	// cond is true when the rule rejects (condSource); match (nil: none)
	// only tells policies --check whether the rule applied.
	cond, match, message  *program // message may be nil
	matchSrc, validateSrc string   // for the set's combined program
	deps                  varSet   // the variables match and validate read
	configKeys            []string // the configs they read (memo.go)
	configsWhole          bool     // or all of them
	messageText           string   // a message that is a plain string, not CEL
}

// RuleSet is a compiled rule set, immutable once built.
type RuleSet struct {
	Source string // the file (or "metadata store") it was read from
	Rules  []*Rule
	byOp   map[string][]*Rule
	// groups are the rules of each operation grouped by the variables
	// they read, each group in one program (see combine); an operation
	// whose rules did not combine has none, and runs rule by rule.
	groups map[string][]*group
}

// For lists the rules on op, in file order.
func (s *RuleSet) For(op string) []*Rule {
	if s == nil {
		return nil
	}
	return s.byOp[op]
}

// LoadFile reads and compiles a rule file.
func LoadFile(path string) (*RuleSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(path, data)
}

// CompileError is a rule set that did not compile: the first problem found,
// with its file and line.
type CompileError struct {
	File string
	Line int
	Rule string // "" when the problem is not in one rule
	Msg  string
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Compile parses data (a rule file named source) and compiles every rule.
// The file is a mapping with a rules list, or the list alone. Any problem
// fails the whole set: a rule set is used entirely or not at all.
func Compile(source string, data []byte) (*RuleSet, error) {
	fail := func(line int, rule, format string, args ...any) error {
		return &CompileError{File: source, Line: line, Rule: rule, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := yamlErrorLine(err)
		msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("yaml: line %d: ", line))
		return nil, &CompileError{File: source, Line: line, Msg: msg}
	}
	set := &RuleSet{Source: source, byOp: map[string][]*Rule{}}
	if len(doc.Content) == 0 {
		return set, nil // an empty file: no rules
	}
	list := doc.Content[0]
	if list.Kind == yaml.MappingNode {
		var rules *yaml.Node
		for i := 0; i+1 < len(list.Content); i += 2 {
			if k := list.Content[i].Value; k != "rules" {
				return nil, fail(list.Content[i].Line, "", "unknown field %q (a rule file has rules)", k)
			}
			rules = list.Content[i+1]
		}
		if rules == nil {
			return set, nil
		}
		list = rules
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return set, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fail(list.Line, "", "rules must be a list")
	}
	if len(list.Content) > maxRules {
		return nil, fail(list.Line, "", "%d rules: at most %d", len(list.Content), maxRules)
	}
	env, err := sharedEnv()
	if err != nil {
		return nil, fmt.Errorf("policy environment: %w", err)
	}
	seen := map[string]int{}
	for _, n := range list.Content {
		r, err := compileRule(env, source, n)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[r.Name]; dup {
			return nil, fail(r.Line, r.Name, "a second rule with this name (the first is on line %d)", first)
		}
		seen[r.Name] = r.Line
		set.Rules = append(set.Rules, r)
		for _, op := range r.On {
			set.byOp[op] = append(set.byOp[op], r)
		}
	}
	set.groups = map[string][]*group{}
	for op, rules := range set.byOp {
		set.groups[op] = groupRules(env, rules)
	}
	return set, nil
}

// groupRules combines the rules of one operation, grouped by the variables
// they read: a group that reads nothing resource-specific (only the
// principal and the changes, say) gets the same answer for every resource
// of a request changing them alike, and remembers it. nil when a group
// does not combine.
func groupRules(env *cel.Env, rules []*Rule) []*group {
	byDeps := map[varSet]*group{}
	var out []*group
	for i, r := range rules {
		g := byDeps[r.deps]
		if g == nil {
			g = &group{deps: r.deps, memo: r.deps&(varResource|varTopic) == 0}
			byDeps[r.deps] = g
			out = append(out, g)
		}
		g.rules = append(g.rules, r)
		g.at = append(g.at, i)
		g.configKeys = append(g.configKeys, r.configKeys...)
		g.configsWhole = g.configsWhole || r.configsWhole
	}
	for _, g := range out {
		slices.Sort(g.configKeys)
		g.configKeys = slices.Compact(g.configKeys)
		if g.prgs = combine(env, g.rules); g.prgs == nil {
			return nil
		}
	}
	return out
}

// condSource is the expression that is true when r rejects:
// "match && !validate". An error in it rejects too; as CEL's && does, a
// false side decides whatever the other side is, so a match that cannot
// be evaluated does not reject a change its validate allows. Newlines end
// any // comment the rule's text has.
func condSource(r *Rule) string {
	match := "true"
	if r.matchSrc != "" {
		match = r.matchSrc
	}
	return fmt.Sprintf("(\n%s\n) && !(\n%s\n)", match, r.validateSrc)
}

// chunk bounds the rules of one combined program: its conditions nest,
// one level per rule, and CEL limits the nesting of an expression.
const chunk = 32

// combine compiles rules of one operation into programs, each of up to
// chunk rules, that return the index (in its chunk) of the first rule
// that rejects, or -1: a CEL evaluation has a cost of its own besides its
// expression's, and a request changing 1,000 topics runs every rule 1,000
// times. When one cannot be evaluated, the engine runs the rules one by
// one to find the rule that could not, as it would have without
// combining. nil when a combined program does not compile.
func combine(env *cel.Env, rules []*Rule) []*program {
	var out []*program
	for start := 0; start < len(rules); start += chunk {
		part := rules[start:min(start+chunk, len(rules))]
		var b strings.Builder
		for i, r := range part {
			fmt.Fprintf(&b, "(%s) ? %d : ", condSource(r), i)
		}
		b.WriteString("-1")
		prg, err := compileFolded(env, b.String())
		if err != nil {
			return nil
		}
		out = append(out, prg)
	}
	return out
}

// loopBudget bounds one evaluation of an expression with loops
// (comprehensions: all, exists, map, filter): a rule with runaway loops is
// interrupted, and a rule that cannot be evaluated rejects, rather than
// slowing every request it applies to. An expression without loops costs
// at most its size over the request's data, so it runs unbounded and
// without the timer.
const loopBudget = 20 * time.Millisecond

// program is a compiled expression that knows whether it loops.
type program struct {
	cel.Program
	loops bool
}

func newProgram(env *cel.Env, ast *cel.Ast) (*program, error) {
	loops := hasLoops(ast)
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if loops {
		opts = append(opts, cel.InterruptCheckFrequency(64))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, err
	}
	return &program{Program: prg, loops: loops}, nil
}

// eval runs the program, within loopBudget if it loops.
func (p *program) eval(act any) (ref.Val, error) {
	if !p.loops {
		out, _, err := p.Eval(act)
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), loopBudget)
	defer cancel()
	out, _, err := p.ContextEval(ctx, act)
	return out, err
}

func hasLoops(ast *cel.Ast) bool {
	return len(celast.MatchDescendants(celast.NavigateAST(ast.NativeRep()), celast.KindMatcher(celast.ComprehensionKind))) > 0
}

// compileFolded compiles an expression with its constant calls
// (duration("30d"), bytes("100MiB")) computed once, not per resource.
func compileFolded(env *cel.Env, text string) (*program, error) {
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	// Folding evaluates what it can at compile time, with no cost limit:
	// over comprehensions that can mean running a rule's loops in full at
	// startup, so expressions with them are left unfolded (measured: seven
	// nested all() over ten items took minutes to fold).
	if folder, err := cel.NewConstantFoldingOptimizer(); err == nil && !hasLoops(ast) {
		if opt, err := cel.NewStaticOptimizer(folder); err == nil {
			if folded, iss := opt.Optimize(env, ast); iss.Err() == nil {
				ast = folded
			}
		}
	}
	return newProgram(env, ast)
}

// yamlErrorLine finds the line in a YAML error ("yaml: line 3: ...").
func yamlErrorLine(err error) int {
	var line int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		fmt.Sscanf(msg[i:], "line %d", &line)
	}
	return line
}

// compileRule compiles one rule's mapping node.
func compileRule(env *cel.Env, source string, n *yaml.Node) (*Rule, error) {
	r := &Rule{Line: n.Line}
	fail := func(line int, format string, args ...any) error {
		return &CompileError{File: source, Line: line, Rule: r.Name, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind != yaml.MappingNode {
		return nil, fail(n.Line, "a rule must be a mapping with name, on, validate and message")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "name" {
			r.Name = strings.TrimSpace(n.Content[i+1].Value) // to name the rule in any error
		}
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name", "on", "match", "validate", "message", "description":
		default:
			return nil, fail(k.Line, "unknown field %q (a rule has name, on, match, validate, message and description)", k.Value)
		}
		if _, dup := fields[k.Value]; dup {
			return nil, fail(k.Line, "field %q given twice", k.Value)
		}
		fields[k.Value] = v
	}
	str := func(field string) (string, *yaml.Node, error) {
		v := fields[field]
		if v == nil {
			return "", nil, nil
		}
		if v.Kind != yaml.ScalarNode {
			return "", v, fail(v.Line, "%s must be a string", field)
		}
		return v.Value, v, nil
	}
	name, _, err := str("name")
	if err != nil {
		return nil, err
	}
	if r.Name = strings.TrimSpace(name); r.Name == "" {
		return nil, fail(n.Line, "a rule needs a name")
	}
	on := fields["on"]
	switch {
	case on == nil:
		return nil, fail(n.Line, "on is missing: one of %s, or a list of them", strings.Join(Operations, ", "))
	case on.Kind == yaml.ScalarNode:
		r.On = []string{on.Value}
	case on.Kind == yaml.SequenceNode:
		for _, o := range on.Content {
			r.On = append(r.On, o.Value)
		}
	}
	if len(r.On) == 0 {
		return nil, fail(on.Line, "on names no operation")
	}
	for _, op := range r.On {
		if !slices.Contains(Operations, op) {
			return nil, fail(on.Line, "unknown operation %q in on (one of %s)", op, strings.Join(Operations, ", "))
		}
	}
	compile := func(field string, want *cel.Type, required bool) (*program, error) {
		text, node, err := str(field)
		if err != nil || node == nil {
			if err == nil && required {
				err = fail(n.Line, "%s is missing", field)
			}
			return nil, err
		}
		switch field {
		case "match":
			r.matchSrc = text
		case "validate":
			r.validateSrc = text
		}
		ast, iss := env.Compile(text)
		if iss.Err() != nil {
			e := iss.Errors()[0]
			return nil, fail(exprLine(node, e.Location.Line()), "%s: %s (column %d)", field, e.Message, e.Location.Column()+1)
		}
		if t := ast.OutputType(); !t.IsExactType(want) && !t.IsExactType(cel.DynType) {
			return nil, fail(node.Line, "%s must be a %s expression, not %s", field, want, t)
		}
		prg, err := newProgram(env, ast)
		if err != nil {
			return nil, fail(node.Line, "%s: %v", field, err)
		}
		if field != "message" {
			r.deps |= referenced(ast)
			keys, whole := keysRead(ast, "configs")
			r.configKeys, r.configsWhole = append(r.configKeys, keys...), r.configsWhole || whole
		}
		return prg, nil
	}
	if r.match, err = compile("match", cel.BoolType, false); err != nil {
		return nil, err
	}
	if _, err = compile("validate", cel.BoolType, true); err != nil {
		return nil, err
	}
	if r.cond, err = compileFolded(env, condSource(r)); err != nil {
		return nil, fail(n.Line, "%v", err)
	}
	if r.message, err = compile("message", cel.StringType, false); err != nil {
		return nil, err
	}
	if r.message == nil {
		r.messageText = "the change is not allowed by policy rule " + r.Name
	}
	return r, nil
}

// exprLine is the file line of line celLine (1-based) of the expression in
// node: a block scalar (| or >) starts on the line after its indicator.
func exprLine(node *yaml.Node, celLine int) int {
	if celLine < 1 {
		celLine = 1
	}
	if node.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return node.Line + celLine
	}
	return node.Line + celLine - 1
}
