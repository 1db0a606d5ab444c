package main

// kbroker acls: kafka-acls.sh over the admin package (CreateAcls,
// DescribeAcls, DeleteAcls), with its output format.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/admin"
)

const aclsSynopsis = `kbroker acls --bootstrap-server host:port [--command-config file]
         (--add | --remove | --list) [--allow-principal p …] [--deny-principal p …] [--allow-host h …] [--deny-host h …]
         [--operation op …] [--topic t …] [--group g …] [--cluster] [--transactional-id id …]
         [--resource-pattern-type literal|prefixed|any|match] [--producer | --consumer] [--principal p …]`

const aclsExamples = `  # alice may read topic orders from any host
  kbroker acls --bootstrap-server localhost:9092 --add --allow-principal User:alice --operation Read --topic orders

  # every topic starting with logs- is writable by bob, except from 10.0.0.9
  kbroker acls --bootstrap-server localhost:9092 --add --allow-principal User:bob --operation Write \
      --topic logs- --resource-pattern-type prefixed
  kbroker acls --bootstrap-server localhost:9092 --add --deny-principal User:bob --deny-host 10.0.0.9 --operation Write \
      --topic logs- --resource-pattern-type prefixed

  # producer and consumer rights in one go
  kbroker acls --bootstrap-server localhost:9092 --add --allow-principal User:app --producer --topic orders
  kbroker acls --bootstrap-server localhost:9092 --add --allow-principal User:app --consumer --topic orders --group app

  # what applies to topic logs-app, and everything alice has
  kbroker acls --bootstrap-server localhost:9092 --list --topic logs-app --resource-pattern-type match
  kbroker acls --bootstrap-server localhost:9092 --list --principal User:alice

  kbroker acls --bootstrap-server localhost:9092 --remove --allow-principal User:alice --operation Read --topic orders
`

type aclsCmd struct {
	conn                                           connFlags
	add, remove, list, cluster, producer, consumer bool
	force                                          bool
	allowPrincipals, denyPrincipals, principals    stringList
	allowHosts, denyHosts, operations              stringList
	topics, groups, txnIDs                         stringList
	patternType                                    string
	format                                         *formatFlag
	out, errOut                                    io.Writer
}

func runACLs(args []string, out, errOut io.Writer) error {
	c := &aclsCmd{out: out, errOut: errOut}
	fs := newFlagSet("acls", aclsSynopsis, aclsExamples, out)
	c.conn.register(fs)
	fs.BoolVar(&c.add, "add", false, "add ACLs")
	fs.BoolVar(&c.remove, "remove", false, "remove ACLs")
	fs.BoolVar(&c.list, "list", false, "list ACLs (of the given resources, or all)")
	fs.Var(&c.allowPrincipals, "allow-principal", "`principal` (User:name, User:*) the ACLs allow (repeatable)")
	fs.Var(&c.denyPrincipals, "deny-principal", "`principal` the ACLs deny (repeatable)")
	fs.Var(&c.principals, "principal", "with --list: only ACLs of this `principal` (repeatable)")
	fs.Var(&c.allowHosts, "allow-host", "`host` IP allowed (repeatable; default * with --allow-principal)")
	fs.Var(&c.denyHosts, "deny-host", "`host` IP denied (repeatable; default * with --deny-principal)")
	fs.Var(&c.operations, "operation", "`operation`: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable; default All)")
	fs.Var(&c.topics, "topic", "topic `name` (or prefix, or * for all topics; repeatable)")
	fs.Var(&c.groups, "group", "consumer group `name` (repeatable)")
	fs.Var(&c.txnIDs, "transactional-id", "transactional `id` (repeatable)")
	fs.BoolVar(&c.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.StringVar(&c.patternType, "resource-pattern-type", "literal", "resource pattern `type`: literal or prefixed; for --list/--remove also any or match")
	fs.BoolVar(&c.producer, "producer", false, "with --add/--remove: Write, Describe and Create on the --topic resources")
	fs.BoolVar(&c.consumer, "consumer", false, "with --add/--remove: Read and Describe on the --topic resources, Read on the --group resources")
	fs.BoolVar(&c.force, "force", false, "accepted for kafka-acls.sh compatibility: kbroker never prompts")
	c.format = registerFormat(fs)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"add": c.add, "remove": c.remove, "list": c.list})
	if err != nil {
		return err
	}
	pt, err := kmsg.ParseACLResourcePatternType(c.patternType)
	if err != nil || pt == kmsg.ACLResourcePatternTypeUnknown {
		return usagef("--resource-pattern-type %q: want literal, prefixed, any or match", c.patternType)
	}
	if action == "add" && pt != kmsg.ACLResourcePatternTypeLiteral && pt != kmsg.ACLResourcePatternTypePrefixed {
		return usageError("--add needs --resource-pattern-type literal or prefixed")
	}
	if err := c.checkPrincipals(); err != nil {
		return err
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch action {
	case "add":
		return c.runAdd(ctx, cl, pt)
	case "remove":
		return c.runRemove(ctx, cl, pt)
	}
	return c.runList(ctx, cl, pt)
}

// checkPrincipals refuses a principal without its type before anything is
// sent: Kafka names principals type:name (User:alice), and a bare "alice"
// would be an ACL that matches no one.
func (c *aclsCmd) checkPrincipals() error {
	for _, f := range []struct {
		flag  string
		names stringList
	}{{"allow-principal", c.allowPrincipals}, {"deny-principal", c.denyPrincipals}, {"principal", c.principals}} {
		for _, p := range f.names {
			if !strings.Contains(p, ":") {
				return usagef("--%s: expected a string in format principalType:principalName but got %s", f.flag, p)
			}
		}
	}
	return nil
}

// resource is an ACL resource pattern named on the command line.
type aclResource struct {
	typ  kmsg.ACLResourceType
	name string
}

func (c *aclsCmd) resources() []aclResource {
	var rs []aclResource
	for _, t := range c.topics {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range c.groups {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeGroup, g})
	}
	for _, id := range c.txnIDs {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeTransactionalId, id})
	}
	if c.cluster {
		rs = append(rs, aclResource{kmsg.ACLResourceTypeCluster, admin.ClusterName})
	}
	return rs
}

// operationsFor is what an entry grants on a resource: --producer and
// --consumer expand as kafka-acls.sh does, otherwise --operation (All).
func (c *aclsCmd) operationsFor(r aclResource) ([]kmsg.ACLOperation, error) {
	switch {
	case c.producer && r.typ == kmsg.ACLResourceTypeTopic:
		return []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate}, nil
	case c.consumer && r.typ == kmsg.ACLResourceTypeTopic:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe}, nil
	case c.consumer && r.typ == kmsg.ACLResourceTypeGroup:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead}, nil
	case c.producer || c.consumer:
		return nil, nil
	}
	if len(c.operations) == 0 {
		return []kmsg.ACLOperation{kmsg.ACLOperationAll}, nil
	}
	var ops []kmsg.ACLOperation
	for _, o := range c.operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op == kmsg.ACLOperationAny || op == kmsg.ACLOperationUnknown {
			return nil, usagef("--operation %q: want one of Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All", o)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// entries builds the ACL bindings of --add/--remove: every principal ×
// host × operation on every resource.
func (c *aclsCmd) entries(pt kmsg.ACLResourcePatternType) ([]admin.ACLBinding, error) {
	if len(c.allowPrincipals)+len(c.denyPrincipals) == 0 {
		return nil, nil
	}
	if c.producer && c.consumer {
		return nil, usageError("--producer and --consumer cannot be combined")
	}
	if c.consumer && (len(c.topics) == 0 || len(c.groups) == 0) {
		return nil, usageError("--consumer needs --topic and --group")
	}
	hostsOr := func(h stringList) []string {
		if len(h) == 0 {
			return []string{"*"}
		}
		return h
	}
	var out []admin.ACLBinding
	for _, r := range c.resources() {
		ops, err := c.operationsFor(r)
		if err != nil {
			return nil, err
		}
		add := func(principals, hosts []string, perm kmsg.ACLPermissionType) {
			for _, p := range principals {
				for _, h := range hosts {
					for _, op := range ops {
						out = append(out, admin.ACLBinding{ResourceType: r.typ, ResourceName: r.name, PatternType: pt,
							Principal: p, Host: h, Operation: op, Permission: perm})
					}
				}
			}
		}
		add(c.allowPrincipals, hostsOr(c.allowHosts), kmsg.ACLPermissionTypeAllow)
		add(c.denyPrincipals, hostsOr(c.denyHosts), kmsg.ACLPermissionTypeDeny)
	}
	return out, nil
}

func (c *aclsCmd) runAdd(ctx context.Context, cl *admin.Client, pt kmsg.ACLResourcePatternType) error {
	if len(c.resources()) == 0 {
		return usageError("--add needs a resource: --topic, --group, --transactional-id or --cluster")
	}
	bindings, err := c.entries(pt)
	if err != nil {
		return err
	}
	if len(bindings) == 0 {
		return usageError("--add needs --allow-principal or --deny-principal")
	}
	for _, g := range groupByPattern(bindings) {
		fmt.Fprint(c.out, aclBlock("Adding ACLs for resource", g))
	}
	rs, err := cl.CreateACLs(ctx, bindings)
	if err != nil {
		return err
	}
	if err := rs.All(); err != nil {
		return err
	}
	return c.runList(ctx, cl, pt)
}

func (c *aclsCmd) runRemove(ctx context.Context, cl *admin.Client, pt kmsg.ACLResourcePatternType) error {
	if len(c.resources()) == 0 {
		return usageError("--remove needs a resource: --topic, --group, --transactional-id or --cluster")
	}
	bindings, err := c.entries(pt)
	if err != nil {
		return err
	}
	var filters []admin.ACLFilter
	if len(bindings) == 0 { // no principals: every ACL of the resources
		for _, r := range c.resources() {
			f := admin.AnyACL()
			f.ResourceType, f.ResourceName, f.PatternType = r.typ, kmsg.StringPtr(r.name), pt
			filters = append(filters, f)
		}
	}
	for _, b := range bindings {
		filters = append(filters, admin.ACLFilter{ResourceType: b.ResourceType, ResourceName: kmsg.StringPtr(b.ResourceName),
			PatternType: pt, Principal: kmsg.StringPtr(b.Principal), Host: kmsg.StringPtr(b.Host), Operation: b.Operation, Permission: b.Permission})
	}
	rs, err := cl.DeleteACLs(ctx, filters)
	if err != nil {
		return err
	}
	if err := rs.All(); err != nil {
		return err
	}
	return c.runList(ctx, cl, pt)
}

// runList prints kafka-acls.sh's listing: per resource pattern, or per
// principal with --principal.
func (c *aclsCmd) runList(ctx context.Context, cl *admin.Client, pt kmsg.ACLResourcePatternType) error {
	var filters []admin.ACLFilter
	for _, r := range c.resources() {
		f := admin.AnyACL()
		f.ResourceType, f.ResourceName, f.PatternType = r.typ, kmsg.StringPtr(r.name), pt
		filters = append(filters, f)
	}
	if len(filters) == 0 {
		filters = []admin.ACLFilter{admin.AnyACL()}
	}
	var all []admin.ACLBinding
	for _, f := range filters {
		bs, err := cl.DescribeACLs(ctx, f)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if !slices.Contains(all, b) {
				all = append(all, b)
			}
		}
	}
	if *c.format == "json" {
		if all == nil {
			all = []admin.ACLBinding{}
		}
		return writeJSON(c.out, all)
	}
	if len(c.principals) == 0 {
		for _, g := range groupByPattern(all) {
			fmt.Fprint(c.out, aclBlock("Current ACLs for resource", g))
		}
		return nil
	}
	for _, p := range c.principals {
		fmt.Fprintf(c.out, "ACLs for principal `%s`\n", p)
		var mine []admin.ACLBinding
		for _, b := range all {
			if b.Principal == p {
				mine = append(mine, b)
			}
		}
		for _, g := range groupByPattern(mine) {
			fmt.Fprint(c.out, aclBlock("Current ACLs for resource", g))
		}
	}
	return nil
}

// groupByPattern groups bindings by resource pattern, sorted by type, name
// and pattern type.
func groupByPattern(bs []admin.ACLBinding) [][]admin.ACLBinding {
	sorted := slices.Clone(bs)
	slices.SortStableFunc(sorted, func(a, b admin.ACLBinding) int {
		if a.ResourceType != b.ResourceType {
			return int(a.ResourceType) - int(b.ResourceType)
		}
		if c := strings.Compare(a.ResourceName, b.ResourceName); c != 0 {
			return c
		}
		return int(a.PatternType) - int(b.PatternType)
	})
	var out [][]admin.ACLBinding
	for _, b := range sorted {
		if n := len(out); n > 0 && out[n-1][0].Pattern() == b.Pattern() {
			out[n-1] = append(out[n-1], b)
			continue
		}
		out = append(out, []admin.ACLBinding{b})
	}
	return out
}

// aclBlock is AclCommand's
// s"$title `$resource`: $Newline ${acls.map("\t" + _).mkString(Newline)} $Newline" + println.
func aclBlock(title string, g []admin.ACLBinding) string {
	entries := make([]string, len(g))
	for i, b := range g {
		entries[i] = "\t" + b.Entry()
	}
	return fmt.Sprintf("%s `%s`: \n %s \n\n", title, g[0].Pattern(), strings.Join(entries, "\n"))
}
