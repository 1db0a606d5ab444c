package main

// kbroker groups: kafka-consumer-groups.sh over the admin package
// (ListGroups, DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit,
// DeleteGroups, OffsetDelete).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"kbroker/admin"
)

const groupsSynopsis = `kbroker groups --bootstrap-server host:port [--command-config file]
         (--list [--state [s,…]] [--type [t,…]]
          | --describe (--group g … | --all-groups) [--offsets | --members [--verbose] | --state]
          | --reset-offsets (--group g … | --all-groups) (--topic t[:p,…] … | --all-topics)
              (--to-earliest | --to-latest | --to-offset n | --shift-by n | --to-datetime t | --by-duration d
               | --to-current | --from-file f) [--dry-run | --execute] [--export]
          | --delete (--group g … | --all-groups)
          | --delete-offsets --group g --topic t[:p,…] …) [--format text|json]`

const groupsExamples = `  # Groups, with their state; then the lag of one group
  kbroker groups --bootstrap-server localhost:9092 --list --state
  kbroker groups --bootstrap-server localhost:9092 --describe --group orders-app
  kbroker groups --bootstrap-server localhost:9092 --describe --group orders-app --members --verbose

  # Replay the last hour of orders (stop the consumers first): look, then do it
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --topic orders --by-duration PT1H --dry-run
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --topic orders --by-duration PT1H --execute

  # Partitions 0 and 1 to an offset; every committed partition to a moment
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --topic orders:0,1 --to-offset 1000 --execute
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --all-topics --to-datetime 2026-01-31T08:00:00.000 --execute

  # Save offsets as CSV and put them back later
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --all-topics --to-current --export > offsets.csv
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --from-file offsets.csv --execute

  # The same with JSON: describe, then restore from the description
  kbroker groups --bootstrap-server localhost:9092 --describe --group orders-app --format json > orders-app.json
  kbroker groups --bootstrap-server localhost:9092 --reset-offsets --group orders-app --from-file orders-app.json --execute

  # Delete an empty group, or only its offsets of one topic
  kbroker groups --bootstrap-server localhost:9092 --delete --group old-app
  kbroker groups --bootstrap-server localhost:9092 --delete-offsets --group orders-app --topic retired-topic
`

type groupsCmd struct {
	conn                                      connFlags
	list, describe, reset, del, deleteOffsets bool
	members, offsets, verbose                 bool
	state, typ                                optionalValue
	groups, topics                            stringList
	allGroups, allTopics                      bool
	toEarliest, toLatest, toCurrent           bool
	toOffset, shiftBy                         int64
	toDatetime, byDuration, fromFile          string
	dryRun, execute, export                   bool
	format                                    *formatFlag
	listStates, listTypes                     []string
	resetTo                                   admin.OffsetReset
	fs                                        *flag.FlagSet
	out, errOut                               io.Writer
}

// optionalValue is a flag whose value may be left out, as --state and
// --type of kafka-consumer-groups.sh ("--state" alone, "--state Stable").
type optionalValue struct {
	set   bool
	value string
}

func (o *optionalValue) String() string   { return o.value }
func (o *optionalValue) IsBoolFlag() bool { return true }
func (o *optionalValue) Set(v string) error {
	o.set = true
	if v != "true" {
		o.value = v
	}
	return nil
}

// joinOptionalValues turns "--state Stable" into "--state=Stable" for the
// flags whose value is optional, so the flag package sees one argument.
func joinOptionalValues(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && !strings.Contains(a, "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			for _, n := range names {
				if name == n {
					a += "=" + args[i+1]
					i++
					break
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func runGroups(args []string, out, errOut io.Writer) error {
	c := &groupsCmd{out: out, errOut: errOut}
	fs := newFlagSet("groups", groupsSynopsis, groupsExamples, out)
	c.fs = fs
	c.conn.register(fs)
	fs.BoolVar(&c.list, "list", false, "list consumer groups")
	fs.BoolVar(&c.describe, "describe", false, "describe groups: offsets and lag (default), --members or --state")
	fs.BoolVar(&c.reset, "reset-offsets", false, "reset the offsets of inactive groups (a dry run unless --execute)")
	fs.BoolVar(&c.del, "delete", false, "delete groups that have no members, with their offsets")
	fs.BoolVar(&c.deleteOffsets, "delete-offsets", false, "delete a group's offsets of --topic")
	fs.BoolVar(&c.members, "members", false, "with --describe: the members of each group")
	fs.BoolVar(&c.offsets, "offsets", false, "with --describe: offsets and lag of each partition (the default)")
	fs.BoolVar(&c.verbose, "verbose", false, "with --describe: more columns (LEADER-EPOCH with --offsets, the assignment with --members)")
	fs.Var(&c.state, "state", "with --describe: each group's state; with --list: show states, or only groups in the `states` given (Stable,Empty,…)")
	fs.Var(&c.typ, "type", "with --list: show types, or only groups of the `types` given (classic,consumer)")
	fs.Var(&c.groups, "group", "consumer group `id` (repeatable)")
	fs.BoolVar(&c.allGroups, "all-groups", false, "every consumer group")
	fs.Var(&c.topics, "topic", "`topic` or topic:p1,p2,… whose offsets to reset or delete (repeatable)")
	fs.BoolVar(&c.allTopics, "all-topics", false, "with --reset-offsets: every partition the group committed")
	fs.BoolVar(&c.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&c.toLatest, "to-latest", false, "reset to the log end offset")
	fs.BoolVar(&c.toCurrent, "to-current", false, "reset to the committed offset (the log end where none)")
	fs.Int64Var(&c.toOffset, "to-offset", 0, "reset to this `offset` (moved into the log's range)")
	fs.Int64Var(&c.shiftBy, "shift-by", 0, "move the committed offsets by `n` (negative: back)")
	fs.StringVar(&c.toDatetime, "to-datetime", "", "reset to the first offset at or after `YYYY-MM-DDTHH:mm:SS.sss`[zone] (local time without zone)")
	fs.StringVar(&c.byDuration, "by-duration", "", "reset to the first offset at or after this long ago: ISO-8601 `PnDTnHnMnS`")
	fs.StringVar(&c.fromFile, "from-file", "", "reset to the offsets in `file`: CSV of --export, or JSON of --describe --format json")
	fs.BoolVar(&c.dryRun, "dry-run", false, "only show the new offsets (the default)")
	fs.BoolVar(&c.execute, "execute", false, "commit the new offsets")
	fs.BoolVar(&c.export, "export", false, "with --reset-offsets: print the new offsets as CSV for --from-file")
	c.format = registerFormat(fs)
	if err := parseFlags(fs, joinOptionalValues(args, "state", "type"), out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"list": c.list, "describe": c.describe, "reset-offsets": c.reset,
		"delete": c.del, "delete-offsets": c.deleteOffsets})
	if err != nil {
		return err
	}
	if err := c.check(action); err != nil {
		return err
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch action {
	case "list":
		return c.runList(ctx, cl)
	case "describe":
		return c.runDescribe(ctx, cl)
	case "reset-offsets":
		return c.runReset(ctx, cl)
	case "delete":
		return c.runDelete(ctx, cl)
	default:
		return c.runDeleteOffsets(ctx, cl)
	}
}

// given reports whether a flag was on the command line.
func (c *groupsCmd) given(name string) bool {
	found := false
	c.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// check applies kafka-consumer-groups.sh's rules on which options go
// together.
func (c *groupsCmd) check(action string) error {
	onlyWith := func(flagName, actions string, allowed bool) error {
		if c.given(flagName) && !allowed {
			return usagef("--%s goes with %s only", flagName, actions)
		}
		return nil
	}
	for _, r := range []struct {
		flag, actions string
		ok            bool
	}{
		{"members", "--describe", action == "describe"},
		{"offsets", "--describe", action == "describe"},
		{"verbose", "--describe", action == "describe"},
		{"state", "--describe and --list", action == "describe" || action == "list"},
		{"type", "--list", action == "list"},
		{"all-topics", "--reset-offsets", action == "reset-offsets"},
		{"export", "--reset-offsets", action == "reset-offsets"},
		{"dry-run", "--reset-offsets", action == "reset-offsets"},
		{"execute", "--reset-offsets", action == "reset-offsets"},
		{"topic", "--reset-offsets and --delete-offsets", action == "reset-offsets" || action == "delete-offsets"},
		{"all-groups", "--describe, --reset-offsets and --delete", action == "describe" || action == "reset-offsets" || action == "delete"},
		{"group", "--describe, --reset-offsets, --delete and --delete-offsets", action != "list"},
		{"format", "--describe and --list", action == "describe" || action == "list"},
	} {
		if err := onlyWith(r.flag, r.actions, r.ok); err != nil {
			return err
		}
	}
	for _, s := range c.scenarios() {
		if c.given(s) && action != "reset-offsets" {
			return usagef("--%s goes with --reset-offsets only", s)
		}
	}
	switch action {
	case "describe", "reset-offsets", "delete":
		if len(c.groups) == 0 && !c.allGroups {
			return usagef("--%s needs --group or --all-groups", action)
		}
		if len(c.groups) > 0 && c.allGroups {
			return usageError("--group and --all-groups do not go together")
		}
	case "delete-offsets":
		if len(c.groups) != 1 || len(c.topics) == 0 {
			return usageError("--delete-offsets needs one --group and at least one --topic")
		}
	}
	if action == "describe" {
		n := 0
		for _, on := range []bool{c.members, c.offsets, c.state.set} {
			if on {
				n++
			}
		}
		if n > 1 {
			return usageError("--describe takes only one of --members, --offsets, --state")
		}
		if c.state.value != "" {
			return usageError("--describe does not take a value for --state")
		}
	}
	if action == "list" {
		var err error
		if c.listStates, err = parseList("state", c.state.value, groupStates); err != nil {
			return err
		}
		if c.listTypes, err = parseList("type", c.typ.value, groupTypes); err != nil {
			return err
		}
	}
	for _, arg := range c.topics {
		if _, _, err := parseTopicArg(arg); err != nil {
			return err
		}
	}
	if action == "reset-offsets" {
		return c.checkReset()
	}
	return nil
}

func (c *groupsCmd) scenarios() []string {
	return []string{"to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime", "by-duration", "to-current", "from-file"}
}

func (c *groupsCmd) checkReset() error {
	var set []string
	for _, s := range c.scenarios() {
		if c.given(s) {
			set = append(set, "--"+s)
		}
	}
	if len(set) != 1 {
		return usagef("--reset-offsets needs exactly one of --%s", strings.Join(c.scenarios(), ", --"))
	}
	if c.dryRun && c.execute {
		return usageError("--reset-offsets only accepts one of --execute and --dry-run")
	}
	if c.fromFile == "" && len(c.topics) == 0 && !c.allTopics {
		return usageError("One of the reset scopes should be defined: --all-topics, --topic.")
	}
	if len(c.topics) > 0 && c.allTopics {
		return usageError("--topic and --all-topics do not go together")
	}
	var err error
	c.resetTo, err = c.resetSpec(time.Now())
	return err
}

// groupIDs is --group, or every consumer group with --all-groups.
func (c *groupsCmd) groupIDs(ctx context.Context, cl *admin.Client) ([]string, error) {
	if !c.allGroups {
		return c.groups, nil
	}
	ls, err := cl.ListGroups(ctx, admin.ListGroupsFilter{})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range ls {
		if l.IsConsumerGroup() {
			ids = append(ids, l.Group)
		}
	}
	return ids, nil
}

// groupStates are the states kafka-consumer-groups.sh accepts for consumer
// groups, in its spelling.
var groupStates = []string{admin.GroupPreparingRebalance, admin.GroupCompletingRebalance, admin.GroupStable,
	admin.GroupDead, admin.GroupEmpty, admin.GroupAssigning, admin.GroupReconciling}

// parseList splits a comma list and maps each item to its canonical
// spelling among valid (case-insensitively).
func parseList(flagName, input string, valid []string) ([]string, error) {
	if input == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(input, ",") {
		s = strings.TrimSpace(s)
		found := false
		for _, v := range valid {
			if strings.EqualFold(s, v) {
				out, found = append(out, v), true
				break
			}
		}
		if !found {
			return nil, usagef("Invalid %s list '%s'. Valid %ss are: %s", flagName, input, flagName, strings.Join(valid, ", "))
		}
	}
	return out, nil
}

// groupTypes are the types of consumer groups, as Kafka prints them.
var groupTypes = []string{"Classic", "Consumer"}

func (c *groupsCmd) runList(ctx context.Context, cl *admin.Client) error {
	filter := admin.ListGroupsFilter{States: c.listStates}
	for _, t := range c.listTypes {
		filter.Types = append(filter.Types, strings.ToLower(t))
	}
	ls, err := cl.ListGroups(ctx, filter)
	if err != nil {
		return err
	}
	groups := []admin.GroupListing{}
	for _, l := range ls {
		if l.IsConsumerGroup() {
			groups = append(groups, l)
		}
	}
	if *c.format == "json" {
		return writeJSON(c.out, groups)
	}
	if !c.state.set && !c.typ.set {
		for _, g := range groups {
			fmt.Fprintln(c.out, g.Group)
		}
		return nil
	}
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	format := "%-" + strconv.Itoa(width+10) + "s"
	header := []any{"GROUP"}
	if c.typ.set {
		format += " %-20s"
		header = append(header, "TYPE")
	}
	if c.state.set {
		format += " %-20s"
		header = append(header, "STATE")
	}
	format += "\n"
	fmt.Fprintf(c.out, format, header...)
	for _, g := range groups {
		row := []any{g.Group}
		if c.typ.set {
			row = append(row, displayType(g.Type))
		}
		if c.state.set {
			row = append(row, orUnknown(g.State))
		}
		fmt.Fprintf(c.out, format, row...)
	}
	return nil
}

// displayType spells a group type as Kafka's GroupType does.
func displayType(t string) string {
	for _, v := range groupTypes {
		if strings.EqualFold(v, t) {
			return v
		}
	}
	return "Unknown"
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
