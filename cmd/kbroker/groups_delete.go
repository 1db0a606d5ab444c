package main

// kbroker groups --delete and --delete-offsets, with kafka-consumer-groups.sh's
// messages.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

// brokerText is an error without the resource it names (the tool's lines
// name it already).
func brokerText(err error) string {
	var ae *admin.Error
	if errors.As(err, &ae) && ae.Resource != "" {
		return strings.TrimPrefix(err.Error(), ae.Resource+": ")
	}
	return err.Error()
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

func (c *groupsCmd) runDelete(ctx context.Context, cl *admin.Client) error {
	ids, err := c.groupIDs(ctx, cl)
	if err != nil {
		return err
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rs, err := cl.DeleteGroups(ctx, ids...)
	if err != nil {
		return err
	}
	var deleted []string
	var failed []admin.GroupResult
	for _, r := range rs {
		if r.Err != nil {
			failed = append(failed, r)
		} else {
			deleted = append(deleted, r.Group)
		}
	}
	if len(failed) == 0 {
		fmt.Fprintf(c.out, "Deletion of requested consumer groups (%s) was successful.\n", quotedList(deleted))
		return nil
	}
	fmt.Fprintln(c.errOut, "Error: Deletion of some consumer groups failed:")
	for _, r := range failed {
		fmt.Fprintf(c.out, "* Group '%s' could not be deleted due to: %s\n", r.Group, brokerText(r.Err))
	}
	if len(deleted) > 0 {
		fmt.Fprintf(c.out, "\nThese consumer groups were deleted successfully: %s\n", quotedList(deleted))
	}
	return errReported
}

func (c *groupsCmd) runDeleteOffsets(ctx context.Context, cl *admin.Client) error {
	group := c.groups[0]
	var parts []admin.TopicPartition
	var whole []string
	for _, arg := range c.topics {
		tps, all, err := parseTopicArg(arg)
		if err != nil {
			return err
		}
		if all {
			whole = append(whole, arg)
		}
		parts = append(parts, tps...)
	}
	// A topic named without partitions means all of its partitions; one the
	// cluster lacks is reported on its own row, as Kafka's tool does.
	unknown := map[string]error{}
	if len(whole) > 0 {
		ds, err := cl.DescribeTopics(ctx, whole...)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d.Err != nil {
				unknown[d.Name] = d.Err
				continue
			}
			for _, p := range d.Partitions {
				parts = append(parts, admin.TopicPartition{Topic: d.Name, Partition: p.Partition})
			}
		}
	}
	rs, groupErr := cl.DeleteGroupOffsets(ctx, group, parts)
	switch {
	case groupErr != nil && rs == nil:
		return groupErr
	case groupErr != nil:
		fmt.Fprintf(c.errOut, "Error: %s\n", groupLevelText(groupErr))
	case rs.All() != nil || len(unknown) > 0:
		fmt.Fprintln(c.errOut, "Error: Encountered some partition-level error, see the follow-up details.")
	default:
		fmt.Fprintf(c.out, "Request succeeded for deleting offsets from group %s.\n", group)
	}
	type row struct{ topic, partition, status string }
	var rows []row
	for topic, err := range unknown {
		rows = append(rows, row{topic, missing, "Error: " + brokerText(err)})
	}
	for _, r := range rs {
		status := "Successful"
		if groupErr != nil {
			status = "Error: " + groupLevelText(groupErr)
		} else if r.Err != nil {
			status = "Error: " + brokerText(r.Err)
		}
		rows = append(rows, row{r.Topic, strconv.Itoa(int(r.Partition)), status})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.topic+a.partition, b.topic+b.partition) })
	topic := 15
	for _, r := range rows {
		topic = max(topic, len(r.topic))
	}
	format := "\n" + leftAligned(topic, 10, 15)
	printRow(c.out, format, "TOPIC", "PARTITION", "STATUS")
	for _, r := range rows {
		printRow(c.out, format, r.topic, r.partition, r.status)
	}
	fmt.Fprintln(c.out)
	if groupErr != nil || rs.All() != nil || len(unknown) > 0 {
		return errReported
	}
	return nil
}

// groupLevelText is the message Kafka's tool prints for a group-level
// refusal of OffsetDelete: the error's own description.
func groupLevelText(err error) string {
	var ke *kerr.Error
	var ae *admin.Error
	switch {
	case errors.As(err, &ae) && ae.Message != "":
		return ae.Message
	case errors.As(err, &ke):
		return ke.Description
	}
	return err.Error()
}
