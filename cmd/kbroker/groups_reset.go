package main

// kbroker groups --reset-offsets: the plan of new offsets (a dry run unless
// --execute), Kafka's table or --export CSV, and the reset scenarios'
// arguments: --topic t[:p,…], --to-datetime, --by-duration, --from-file.

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"kbroker/admin"
)

func (c *groupsCmd) runReset(ctx context.Context, cl *admin.Client) error {
	if !c.dryRun && !c.execute {
		fmt.Fprintln(c.errOut, "WARN: No action will be performed as the --execute option is missing. "+
			"In a future major release, the default behavior of this command will be to prompt the user before "+
			"executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "+
			"if you are scripting this command and want to keep the current default behavior without prompting.")
	}
	reset := c.resetTo
	var plans map[string]map[admin.TopicPartition]int64
	var err error
	if c.fromFile != "" {
		if plans, err = readResetPlan(c.fromFile, c.groups); err != nil {
			return err
		}
	}
	if len(c.topics) > 0 {
		if reset.Partitions, err = c.resetPartitions(ctx, cl); err != nil {
			return err
		}
	}
	ids, err := c.groupIDs(ctx, cl)
	if err != nil {
		return err
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	results := map[string]map[admin.TopicPartition]int64{}
	failed := false
	fail := func(msg string) {
		fmt.Fprintf(c.errOut, "Error: %s\n", msg)
		failed = true
	}
	for _, id := range ids {
		r := reset
		if plans != nil {
			plan, ok := plans[id]
			if !ok {
				fail(fmt.Sprintf("No reset plan for group %s found.", id))
				results[id] = nil
				continue
			}
			r.Plan = plan
		}
		plan, err := cl.ResetGroupOffsets(ctx, id, r)
		for _, w := range plan.Warnings {
			fmt.Fprintf(c.errOut, "WARN: %s\n", w)
		}
		if err != nil {
			var ae *admin.Error
			if errors.As(err, &ae) && ae.Message != "" && errors.Is(err, admin.ErrGroupNotInactive) {
				fail(ae.Message)
			} else {
				fail(err.Error())
			}
			results[id] = nil
			continue
		}
		results[id] = plan.Offsets
	}
	if c.export {
		fmt.Fprintln(c.out, exportCSV(results, len(c.groups) == 1))
	} else {
		printResetPlan(c, results)
	}
	if failed {
		return errReported
	}
	return nil
}

// resetSpec turns the scenario flag into an admin.OffsetReset.
func (c *groupsCmd) resetSpec(now time.Time) (admin.OffsetReset, error) {
	r := admin.OffsetReset{Execute: c.execute}
	switch {
	case c.toEarliest:
		r.To = admin.ResetToEarliest
	case c.toLatest:
		r.To = admin.ResetToLatest
	case c.toCurrent:
		r.To = admin.ResetToCurrent
	case c.given("to-offset"):
		r.To, r.Offset = admin.ResetToOffset, c.toOffset
	case c.given("shift-by"):
		r.To, r.Offset = admin.ResetShiftBy, c.shiftBy
	case c.given("to-datetime"):
		t, err := parseDateTime(c.toDatetime, time.Local)
		if err != nil {
			return r, err
		}
		r.To, r.Time = admin.ResetToTime, t
	case c.given("by-duration"):
		d, err := parseISODuration(c.byDuration)
		if err != nil {
			return r, err
		}
		r.To, r.Time = admin.ResetToTime, now.Add(-d)
	default:
		r.To = admin.ResetToPlan
	}
	return r, nil
}

// resetPartitions resolves --topic t (every partition) and t:0,1.
func (c *groupsCmd) resetPartitions(ctx context.Context, cl *admin.Client) ([]admin.TopicPartition, error) {
	var out []admin.TopicPartition
	var whole []string
	for _, arg := range c.topics {
		tps, all, err := parseTopicArg(arg)
		if err != nil {
			return nil, err
		}
		if all {
			whole = append(whole, arg)
		}
		out = append(out, tps...)
	}
	if len(whole) > 0 {
		tps, err := cl.TopicPartitions(ctx, whole...)
		if err != nil {
			return nil, err
		}
		out = append(out, tps...)
	}
	admin.SortTopicPartitions(out)
	return slices.Compact(out), nil
}

// parseTopicArg reads "t" (all reports every partition) or "t:0,2".
func parseTopicArg(arg string) (tps []admin.TopicPartition, all bool, err error) {
	if !strings.Contains(arg, ":") {
		return nil, true, nil
	}
	parts := strings.Split(arg, ":")
	if len(parts) != 2 || parts[0] == "" {
		return nil, false, usagef("Invalid topic arg '%s', expected topic name and partitions", arg)
	}
	for _, p := range strings.Split(parts[1], ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return nil, false, usagef("Invalid partition '%s' specified in topic arg '%s'", p, arg)
		}
		tps = append(tps, admin.TopicPartition{Topic: parts[0], Partition: int32(n)})
	}
	return tps, false, nil
}

// printResetPlan writes Kafka's GROUP TOPIC PARTITION NEW-OFFSET table.
func printResetPlan(c *groupsCmd, results map[string]map[admin.TopicPartition]int64) {
	group, topic := 15, 15
	for g, offs := range results {
		group = max(group, len(g))
		for tp := range offs {
			topic = max(topic, len(tp.Topic))
		}
	}
	format := "\n" + leftAligned(group, topic, 10, 0)
	if len(results) > 0 {
		printRow(c.out, format, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
	}
	for _, g := range sortedKeys(results) {
		for _, tp := range sortedPartitions(results[g]) {
			printRow(c.out, format, g, tp.Topic, strconv.Itoa(int(tp.Partition)), strconv.FormatInt(results[g][tp], 10))
		}
	}
	fmt.Fprintln(c.out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedPartitions(m map[admin.TopicPartition]int64) []admin.TopicPartition {
	tps := make([]admin.TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	admin.SortTopicPartitions(tps)
	return tps
}

// exportCSV writes Kafka's reset plan CSV: topic,partition,offset for one
// --group, group,topic,partition,offset otherwise; no header.
func exportCSV(results map[string]map[admin.TopicPartition]int64, singleGroup bool) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	for _, g := range sortedKeys(results) {
		for _, tp := range sortedPartitions(results[g]) {
			rec := []string{tp.Topic, strconv.Itoa(int(tp.Partition)), strconv.FormatInt(results[g][tp], 10)}
			if !singleGroup {
				rec = append([]string{g}, rec...)
			}
			w.Write(rec)
		}
	}
	w.Flush()
	return b.String()
}

// readResetPlan reads --from-file: the CSV of --export (three columns for
// the one --group given, four with the group first otherwise), or the JSON
// of --describe --format json (each group's committed offsets).
func readResetPlan(path string, groups []string) (map[string]map[admin.TopicPartition]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--from-file: %w", err)
	}
	plans := map[string]map[admin.TopicPartition]int64{}
	add := func(g string, tp admin.TopicPartition, off int64) {
		if plans[g] == nil {
			plans[g] = map[admin.TopicPartition]int64{}
		}
		plans[g][tp] = off
	}
	if text := strings.TrimSpace(string(b)); strings.HasPrefix(text, "[") {
		var described []describedGroup
		if err := json.Unmarshal(b, &described); err != nil {
			return nil, fmt.Errorf("--from-file %s: not the JSON of --describe --format json: %w", path, err)
		}
		for _, d := range described {
			plans[d.Group] = map[admin.TopicPartition]int64{}
			for _, o := range d.Offsets {
				if o.CurrentOffset != nil {
					add(d.Group, admin.TopicPartition{Topic: o.Topic, Partition: o.Partition}, *o.CurrentOffset)
				}
			}
		}
		return plans, nil
	}
	r := csv.NewReader(strings.NewReader(string(b)))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("--from-file %s: %w", path, err)
	}
	// Kafka reads three columns only when one group is asked for and the
	// first line has three.
	withGroup := len(groups) != 1 || (len(recs) > 0 && len(recs[0]) != 3)
	for i, rec := range recs {
		want := 3
		if withGroup {
			want = 4
		}
		if len(rec) != want {
			return nil, fmt.Errorf("--from-file %s line %d: want %d columns (%s), got %d", path, i+1, want,
				map[bool]string{false: "topic,partition,offset", true: "group,topic,partition,offset"}[withGroup], len(rec))
		}
		g := ""
		if withGroup {
			g, rec = rec[0], rec[1:]
		} else {
			g = groups[0]
		}
		p, err1 := strconv.ParseInt(rec[1], 10, 32)
		off, err2 := strconv.ParseInt(rec[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("--from-file %s line %d: partition and offset must be numbers", path, i+1)
		}
		add(g, admin.TopicPartition{Topic: rec[0], Partition: int32(p)}, off)
	}
	return plans, nil
}

var zoneSuffix = regexp.MustCompile(`(Z|[+-]\d\d(:?\d\d)?)$`)

// parseDateTime reads --to-datetime as Kafka does: YYYY-MM-DDTHH:mm:SS.sss,
// with an optional zone (Z, +hh:mm, +hhmm, +hh); without one, in loc.
func parseDateTime(s string, loc *time.Location) (time.Time, error) {
	date, clock, ok := strings.Cut(s, "T")
	if !ok {
		return time.Time{}, usagef("--to-datetime %q: Error parsing timestamp. It does not contain a 'T' according to ISO8601 format", s)
	}
	zone := zoneSuffix.FindString(clock)
	clock = strings.TrimSuffix(clock, zone)
	switch {
	case zone == "Z":
		zone = "+00:00"
	case len(zone) == 3:
		zone += ":00"
	case len(zone) == 5:
		zone = zone[:3] + ":" + zone[3:]
	}
	layout, value := "2006-01-02T15:04:05.999999999", date+"T"+clock
	if zone != "" {
		layout, value = layout+"-07:00", value+zone
		t, err := time.Parse(layout, value)
		if err != nil {
			return time.Time{}, usagef("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss with an optional zone", s)
		}
		return t, nil
	}
	t, err := time.ParseInLocation(layout, value, loc)
	if err != nil {
		return time.Time{}, usagef("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss with an optional zone", s)
	}
	return t, nil
}

var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$`)

// parseISODuration reads --by-duration as Java's Duration.parse does:
// PnDTnHnMn.nS, each part optional, days of 24 hours.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || strings.HasSuffix(strings.ToUpper(s), "T") || len(s) < 3 {
		return 0, usagef("--by-duration %q: want an ISO-8601 duration PnDTnHnMnS (for example PT1H30M or P1D)", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+2] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+2], 10, 64)
		if err != nil {
			return 0, usagef("--by-duration %q: %v", s, err)
		}
		d += time.Duration(n) * unit
	}
	if frac := m[6]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if strings.HasPrefix(m[5], "-") {
			ns = -ns
		}
		d += time.Duration(ns)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}
