package main

// kbroker configs: kafka-configs.sh over the admin package. Topics, brokers,
// broker loggers and groups go through DescribeConfigs / IncrementalAlterConfigs;
// users, clients and ips through DescribeClientQuotas / AlterClientQuotas;
// SCRAM-SHA-256/512 keys of users through AlterUserScramCredentials.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

const configsSynopsis = `kbroker configs --bootstrap-server host:port [--command-config file]
         (--describe [--all] [--format text|json] | --alter (--add-config k=v,… | --add-config-file file) [--delete-config k,…])
         --entity-type type (--entity-name name | --entity-default) [--entity-type clients …]`

const configsExamples = `  # A topic's dynamic configs, then every config with where it comes from
  kbroker configs --bootstrap-server localhost:9092 --describe --entity-type topics --entity-name orders
  kbroker configs --bootstrap-server localhost:9092 --describe --all --topic orders

  # Change and remove topic configs (list values in brackets)
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type topics --entity-name orders \
      --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]' --delete-config segment.ms

  # A consumer group's session timeout (KIP-848 groups; the group need not exist yet)
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type groups --entity-name payments \
      --add-config consumer.session.timeout.ms=50000
  kbroker configs --bootstrap-server localhost:9092 --describe --all --group payments

  # Cluster-wide broker default, and one broker's log level
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type brokers --entity-default --add-config log.cleaner.threads=2
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type broker-loggers --entity-name 1 --add-config kbroker.wire=DEBUG

  # Quotas of user1 on clientA, and of user1 on any other client-id
  kbroker configs --bootstrap-server localhost:9092 --alter --add-config 'producer_byte_rate=1024,consumer_byte_rate=2048' \
      --entity-type users --entity-name user1 --entity-type clients --entity-name clientA
  kbroker configs --bootstrap-server localhost:9092 --alter --add-config producer_byte_rate=4096 \
      --entity-type users --entity-name user1 --entity-type clients --entity-default
  kbroker configs --bootstrap-server localhost:9092 --describe --entity-type users

  # A SCRAM credential (salted here; the password is never sent)
  kbroker configs --bootstrap-server localhost:9092 --alter --entity-type users --entity-name alice \
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'

  # Copy one topic's overrides to another (JSON round trip)
  kbroker configs --bootstrap-server localhost:9092 --describe --topic orders --format json > orders.json
  kbroker configs --bootstrap-server localhost:9092 --alter --topic orders-copy --add-config-file orders.json

  # Over SASL/SCRAM with TLS (client.properties as for Apache Kafka's tools)
  kbroker configs --bootstrap-server broker:9093 --command-config client.properties --describe --entity-type brokers
`

type configsCmd struct {
	conn                                 connFlags
	describe, alter, all, force          bool
	format                               *formatFlag
	ents                                 entityArgs
	addConfig, addConfigFile, deleteConf string
	dryRun                               bool // --dry-run: validate only
	out, errOut                          io.Writer
}

func runConfigs(args []string, out, errOut io.Writer) error {
	c := &configsCmd{out: out, errOut: errOut}
	fs := newFlagSet("configs", configsSynopsis, configsExamples, out)
	c.conn.register(fs)
	fs.BoolVar(&c.describe, "describe", false, "list configs of the given entity (or of every entity of the type)")
	fs.BoolVar(&c.alter, "alter", false, "change configs of the given entity")
	fs.BoolVar(&c.all, "all", false, "with --describe: every config (static and default values too), not only dynamic ones")
	fs.BoolVar(&c.force, "force", false, "accepted for kafka-configs.sh compatibility; no effect")
	c.format = registerFormat(fs)
	c.ents.register(fs)
	fs.StringVar(&c.addConfig, "add-config", "", "`k1=v1,k2=[v1,v2],…` configs to set (commas inside [] do not split)")
	fs.StringVar(&c.addConfigFile, "add-config-file", "", "`file` of configs to set: Java properties, or the JSON of --describe --format json")
	fs.StringVar(&c.deleteConf, "delete-config", "", "`k1,k2,…` configs to remove")
	fs.BoolVar(&c.dryRun, "dry-run", false, "with --alter: validate only (the broker's checks and policies), change nothing; a rejection names the policy rule")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"describe": c.describe, "alter": c.alter})
	if err != nil {
		return err
	}
	ents, err := c.ents.entities(c.alter)
	if err != nil {
		return err
	}
	if c.alter && c.all {
		return usageError("--all goes with --describe only")
	}
	if c.describe && (c.addConfig != "" || c.addConfigFile != "" || c.deleteConf != "") {
		return usageError("--add-config, --add-config-file and --delete-config go with --alter only")
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	if action == "describe" {
		return c.runDescribe(ctx, cl, ents)
	}
	return c.runAlter(ctx, cl, ents)
}

func (c *configsCmd) warn(msg string) { fmt.Fprintln(c.errOut, "WARNING:", msg) }

// describedEntity is one entity of --describe --format json; --alter
// --add-config-file reads it back.
type describedEntity struct {
	Entity           []entity                    `json:"entity"`
	Configs          []admin.ConfigEntry         `json:"configs"`
	ScramCredentials []admin.ScramCredentialInfo `json:"scram_credentials,omitempty"`
	Error            string                      `json:"error,omitempty"`
}

func (c *configsCmd) runDescribe(ctx context.Context, cl *admin.Client, ents []entity) error {
	var (
		described []describedEntity
		err       error
	)
	switch ents[0].Type {
	case typeTopics, typeBrokers, typeBrokerLoggers, typeGroups:
		described, err = c.describeResources(ctx, cl, ents[0])
	default:
		described, err = c.describeQuotas(ctx, cl, ents)
	}
	if err != nil {
		return err
	}
	if *c.format == "json" {
		if described == nil {
			described = []describedEntity{}
		}
		if err := writeJSON(c.out, described); err != nil {
			return err
		}
	} else {
		printDescribed(c.out, described, c.all)
	}
	failed := false
	for _, d := range described {
		if d.Error != "" {
			fmt.Fprintf(c.errOut, "%s%s\n", errorPrefix("configs"), d.Error)
			failed = true
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// describeBatch bounds how many resources one DescribeConfigs carries, so
// progress can be shown and no request grows without limit.
const describeBatch = 100

// resourceTypeOf is the config resource type of the entity types that are
// config resources (the others are quota entities).
var resourceTypeOf = map[string]admin.ConfigResourceType{typeTopics: admin.ResourceTopic, typeBrokers: admin.ResourceBroker,
	typeBrokerLoggers: admin.ResourceBrokerLogger, typeGroups: admin.ResourceGroup}

// describeResources describes topics, brokers, broker loggers or groups:
// the named one, or every one (every topic including internal ones; every
// broker and the cluster default; every group that exists or has configs)
// as kafka-configs.sh does.
func (c *configsCmd) describeResources(ctx context.Context, cl *admin.Client, e entity) ([]describedEntity, error) {
	names, err := c.resourceNames(ctx, cl, e)
	if err != nil {
		return nil, err
	}
	typ := resourceTypeOf[e.Type]
	prog := newProgress(c.errOut, "Describing "+e.Type, len(names))
	defer prog.finish()
	var out []describedEntity
	for start := 0; start < len(names); start += describeBatch {
		batch := names[start:min(start+describeBatch, len(names))]
		res := make([]admin.ConfigResource, len(batch))
		for i, n := range batch {
			res[i] = admin.ConfigResource{Type: typ, Name: n}
		}
		rs, err := cl.DescribeConfigs(ctx, res, admin.DescribeOptions{IncludeSynonyms: true})
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			name := batch[i]
			ent := entity{Type: e.Type, Name: &name, named: true}
			if e.Type == typeBrokers && name == "" {
				ent.Name = nil
			}
			d := describedEntity{Entity: []entity{ent}}
			if r.Err != nil {
				d.Error = r.Err.Error()
			}
			d.Configs = filterEntries(r.Entries, dynamicSource(d.Entity), c.all)
			out = append(out, d)
		}
		prog.update(start + len(batch))
	}
	return out, nil
}

func (c *configsCmd) resourceNames(ctx context.Context, cl *admin.Client, e entity) ([]string, error) {
	if e.named {
		return []string{e.nameOr("")}, nil
	}
	switch e.Type {
	case typeTopics:
		return cl.ListTopics(ctx, true)
	case typeGroups:
		return groupNames(ctx, cl)
	}
	brokers, err := cl.ListBrokers(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, b := range brokers {
		names = append(names, strconv.Itoa(int(b.NodeID)))
	}
	if e.Type == typeBrokers {
		names = append(names, "") // the cluster-wide default
	}
	return names, nil
}

// groupNames are the groups kafka-configs.sh (4.1) describes when none is
// named: those the brokers list, and those with configs, which need not
// exist (ListConfigResources; left out against a broker without it).
func groupNames(ctx context.Context, cl *admin.Client) ([]string, error) {
	listed, err := cl.ListGroups(ctx, admin.ListGroupsFilter{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, g := range listed {
		names = append(names, g.Group)
	}
	withConfigs, err := cl.ListConfigResources(ctx, admin.ResourceGroup)
	if err != nil && !errors.Is(err, kerr.UnsupportedVersion) {
		return nil, err
	}
	for _, r := range withConfigs {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// filterEntries keeps what kafka-configs.sh prints: without --all only the
// entity's own dynamic values; sorted by name.
func filterEntries(entries []admin.ConfigEntry, dynamic admin.ConfigSource, all bool) []admin.ConfigEntry {
	out := []admin.ConfigEntry{}
	for _, e := range entries {
		if all || dynamic == admin.SourceUnknown || e.Source == dynamic {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out
}

func sortEntries(es []admin.ConfigEntry) {
	slices.SortFunc(es, func(a, b admin.ConfigEntry) int { return strings.Compare(a.Name, b.Name) })
}

// printDescribed writes ConfigCommand's text format.
func printDescribed(w io.Writer, ds []describedEntity, all bool) {
	for _, d := range ds {
		if d.Error != "" {
			continue
		}
		switch d.Entity[0].Type {
		case typeTopics, typeBrokers, typeBrokerLoggers, typeGroups:
			printResourceConfigs(w, d, all)
		default:
			printQuotaConfigs(w, d)
		}
	}
}

func printResourceConfigs(w io.Writer, d describedEntity, all bool) {
	e := d.Entity[0]
	switch {
	case e.Type == typeBrokers && e.Name == nil:
		fmt.Fprintf(w, "Default configs for %s in the cluster are:\n", e.Type)
	case all:
		fmt.Fprintf(w, "All configs for %s %s are:\n", singular(e.Type), e.nameOr(""))
	default:
		fmt.Fprintf(w, "Dynamic configs for %s %s are:\n", singular(e.Type), e.nameOr(""))
	}
	for _, c := range d.Configs {
		syn := make([]string, len(c.Synonyms))
		for i, s := range c.Synonyms {
			syn[i] = fmt.Sprintf("%s:%s=%s", s.Source, s.Name, admin.ConfigEntry{Value: s.Value}.ValueString())
		}
		fmt.Fprintf(w, "  %s=%s sensitive=%t synonyms={%s}\n", c.Name, c.ValueString(), c.IsSensitive, strings.Join(syn, ", "))
	}
}

func printQuotaConfigs(w io.Writer, d describedEntity) {
	var ent admin.QuotaEntity
	for _, e := range d.Entity {
		ent = append(ent, admin.QuotaComponent{Type: quotaEntityType[e.Type], Name: e.Name})
	}
	if len(d.ScramCredentials) > 0 {
		parts := make([]string, len(d.ScramCredentials))
		for i, ci := range d.ScramCredentials {
			parts[i] = fmt.Sprintf("%s=iterations=%d", ci.Mechanism, ci.Iterations)
		}
		fmt.Fprintf(w, "SCRAM credential configs for %s are %s\n", ent, strings.Join(parts, ", "))
		return
	}
	parts := make([]string, len(d.Configs))
	for i, c := range d.Configs {
		parts[i] = c.Name + "=" + c.ValueString()
	}
	fmt.Fprintf(w, "Quota configs for %s are %s\n", ent, strings.Join(parts, ", "))
}
