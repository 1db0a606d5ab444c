package main

// kbroker groups --describe: offsets and lag (the default), --members and
// --state in kafka-consumer-groups.sh's columns, or all of it as JSON.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"kbroker/admin"
)

// missing is what Kafka's tool prints for a value it does not have.
const missing = "-"

// describedGroup is one group of --describe --format json; --reset-offsets
// --from-file reads its offsets back.
type describedGroup struct {
	Group              string              `json:"group"`
	State              string              `json:"state"`
	ProtocolType       string              `json:"protocol_type"`
	AssignmentStrategy string              `json:"assignment_strategy"`
	Coordinator        *admin.BrokerInfo   `json:"coordinator,omitempty"`
	Members            []admin.GroupMember `json:"members"`
	Offsets            []describedOffset   `json:"offsets"`
	Error              string              `json:"error,omitempty"`
}

// describedOffset is one partition of a described group; null stands for
// what Kafka's tool prints as "-".
type describedOffset struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset *int64 `json:"current_offset"`
	LeaderEpoch   *int32 `json:"leader_epoch"`
	LogEndOffset  *int64 `json:"log_end_offset"`
	Lag           *int64 `json:"lag"`
	ConsumerID    string `json:"consumer_id,omitempty"`
	Host          string `json:"host,omitempty"`
	ClientID      string `json:"client_id,omitempty"`
}

func known64(v int64) *int64 {
	if v < 0 {
		return nil
	}
	return &v
}

func known32(v int32) *int32 {
	if v < 0 {
		return nil
	}
	return &v
}

func (c *groupsCmd) runDescribe(ctx context.Context, cl *admin.Client) error {
	ids, err := c.groupIDs(ctx, cl)
	if err != nil {
		return err
	}
	slices.Sort(ids) // Kafka's tool prints groups in name order
	ids = slices.Compact(ids)
	var out []describedGroup
	for _, id := range ids {
		gl, err := cl.DescribeGroupLag(ctx, id)
		if err != nil {
			return err
		}
		out = append(out, toDescribed(gl))
	}
	failed := false
	if *c.format == "json" {
		if out == nil {
			out = []describedGroup{}
		}
		if err := writeJSON(c.out, out); err != nil {
			return err
		}
		for _, d := range out {
			if d.Error != "" {
				fmt.Fprintf(c.errOut, "Error: %s\n", d.Error)
				failed = true
			}
		}
	} else {
		for _, d := range out {
			if d.Error != "" {
				fmt.Fprintf(c.errOut, "Error: %s\n", d.Error)
				failed = true
				continue
			}
			switch {
			case c.members:
				c.printMembers(d)
			case c.state.set:
				c.printState(d)
			default:
				c.printOffsets(d)
			}
			failed = failed || d.State == admin.GroupDead
		}
	}
	if failed {
		return errReported
	}
	return nil
}

func toDescribed(gl admin.GroupLag) describedGroup {
	d := describedGroup{Group: gl.Group, State: gl.State, ProtocolType: gl.ProtocolType, AssignmentStrategy: gl.Protocol,
		Coordinator: gl.Coordinator, Members: gl.Members, Offsets: []describedOffset{}}
	if gl.Err != nil {
		d.Error = gl.Err.Error()
	}
	for _, p := range gl.Partitions {
		d.Offsets = append(d.Offsets, describedOffset{
			Topic: p.Topic, Partition: p.Partition, CurrentOffset: known64(p.CommittedOffset), LeaderEpoch: known32(p.LeaderEpoch),
			LogEndOffset: known64(p.LogEndOffset), Lag: known64(p.Lag), ConsumerID: p.MemberID, Host: p.Host, ClientID: p.ClientID,
		})
	}
	return d
}

// shouldPrint tells, as Kafka's tool does on stderr, that a group does not
// exist, has no members or is rebalancing; it reports whether there are
// rows to print.
func (c *groupsCmd) shouldPrint(d describedGroup, rows int) bool {
	switch d.State {
	case admin.GroupDead:
		fmt.Fprintf(c.errOut, "Error: Consumer group '%s' does not exist.\n", d.Group)
		return false
	case admin.GroupEmpty:
		fmt.Fprintf(c.errOut, "\nConsumer group '%s' has no active members.\n", d.Group)
	case admin.GroupPreparingRebalance, admin.GroupCompletingRebalance, admin.GroupAssigning, admin.GroupReconciling:
		fmt.Fprintf(c.errOut, "\nWarning: Consumer group '%s' is rebalancing.\n", d.Group)
	}
	return rows > 0
}

func orMissing(s string) string {
	if s == "" {
		return missing
	}
	return s
}

func optional[T int32 | int64](v *T) string {
	if v == nil {
		return missing
	}
	return strconv.FormatInt(int64(*v), 10)
}

// leftAligned builds a format of "%-Ns" columns (width 0: no padding),
// separated by spaces.
func leftAligned(widths ...int) string {
	cols := make([]string, len(widths))
	for i, w := range widths {
		if w == 0 {
			cols[i] = "%s"
		} else {
			cols[i] = "%-" + strconv.Itoa(w) + "s"
		}
	}
	return strings.Join(cols, " ")
}

func printRow(w io.Writer, format string, cols ...string) {
	args := make([]any, len(cols))
	for i, s := range cols {
		args[i] = s
	}
	fmt.Fprintf(w, format, args...)
}

func (c *groupsCmd) printOffsets(d describedGroup) {
	if !c.shouldPrint(d, len(d.Offsets)) {
		return
	}
	group, topic, consumer, host := 15, 15, 15, 15
	for _, o := range d.Offsets {
		group, topic = max(group, len(d.Group)), max(topic, len(o.Topic))
		consumer, host = max(consumer, len(orMissing(o.ConsumerID))), max(host, len(orMissing(o.Host)))
	}
	widths := []int{group, topic, 10, 15, 15, 15, consumer, host, 0}
	header := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
	if c.verbose {
		widths = slices.Insert(widths, 3, 15)
		header = slices.Insert(header, 3, "LEADER-EPOCH")
	}
	format := "\n" + leftAligned(widths...)
	printRow(c.out, format, header...)
	for _, o := range d.Offsets {
		row := []string{d.Group, o.Topic, strconv.Itoa(int(o.Partition)), optional(o.CurrentOffset), optional(o.LogEndOffset),
			optional(o.Lag), orMissing(o.ConsumerID), orMissing(o.Host), orMissing(o.ClientID)}
		if c.verbose {
			row = slices.Insert(row, 3, optional(o.LeaderEpoch))
		}
		printRow(c.out, format, row...)
	}
	fmt.Fprintln(c.out)
}

// assignmentString is Kafka's "t1:0,1;t2:3" for a member's partitions.
func assignmentString(tps []admin.TopicPartition) string {
	if len(tps) == 0 {
		return missing
	}
	var parts []string
	for i := 0; i < len(tps); {
		j := i
		var ps []string
		for ; j < len(tps) && tps[j].Topic == tps[i].Topic; j++ {
			ps = append(ps, strconv.Itoa(int(tps[j].Partition)))
		}
		parts = append(parts, tps[i].Topic+":"+strings.Join(ps, ","))
		i = j
	}
	return strings.Join(parts, ";")
}

func (c *groupsCmd) printMembers(d describedGroup) {
	group, consumer, instance, host, client, current, target := 15, 15, 17, 15, 15, 20, 20
	withInstance := false
	if c.shouldPrint(d, len(d.Members)) {
		for _, m := range d.Members {
			group, consumer, instance = max(group, len(d.Group)), max(consumer, len(m.MemberID)), max(instance, len(m.InstanceID))
			host, client = max(host, len(m.Host)), max(client, len(m.ClientID))
			current = max(current, len(assignmentString(m.Assignment)))
			withInstance = withInstance || m.InstanceID != ""
		}
	}
	widths := []int{group, consumer, host, client, 15}
	header := []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}
	if withInstance {
		widths = slices.Insert(widths, 2, instance)
		header = slices.Insert(header, 2, "GROUP-INSTANCE-ID")
	}
	format := leftAligned(widths...) + " "
	verboseFormat := leftAligned(15, current, 15, target)
	fmt.Fprint(c.out, "\n")
	printRow(c.out, format, header...)
	if c.verbose {
		printRow(c.out, verboseFormat, "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
	}
	fmt.Fprintln(c.out)
	for _, m := range d.Members {
		row := []string{d.Group, m.MemberID, m.Host, m.ClientID, strconv.Itoa(len(m.Assignment))}
		if withInstance {
			row = slices.Insert(row, 2, m.InstanceID)
		}
		printRow(c.out, format, row...)
		if c.verbose {
			// Classic groups have no member epochs and no target assignment.
			printRow(c.out, verboseFormat, missing, assignmentString(m.Assignment), missing, missing)
		}
		fmt.Fprintln(c.out)
	}
}

func (c *groupsCmd) printState(d describedGroup) {
	if !c.shouldPrint(d, 1) {
		return
	}
	coordinator := missing
	if b := d.Coordinator; b != nil {
		coordinator = fmt.Sprintf("%s:%d  (%d)", b.Host, b.Port, b.NodeID)
	}
	group, coord := max(15, len(d.Group)), max(25, len(coordinator))
	members := strconv.Itoa(len(d.Members))
	if c.verbose {
		format := "\n" + leftAligned(group, coord, 20, 20, 15, 25, 0)
		printRow(c.out, format, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")
		printRow(c.out, format, d.Group, coordinator, orMissing(d.AssignmentStrategy), d.State, missing, missing, members)
	} else {
		format := "\n" + leftAligned(group, coord, 20, 20, 0)
		printRow(c.out, format, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
		printRow(c.out, format, d.Group, coordinator, orMissing(d.AssignmentStrategy), d.State, members)
	}
	fmt.Fprintln(c.out)
}
