package admin

// Consumer groups: ListGroups (16), DescribeGroups (15) with
// FindCoordinator (10) for where each group lives, and DeleteGroups (42).
// Committed offsets, lag and resets are in groups_offsets.go and
// groups_reset.go.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorBusy reports the group errors that mean "ask again shortly":
// the coordinator is still being elected or loading its partition of
// __consumer_offsets, or the group moved; Kafka's admin client retries them.
func coordinatorBusy(code int16) bool {
	switch code {
	case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
		return true
	}
	return false
}

// groupRequest issues a group request, again while codes of the response
// say the coordinator is busy and ctx allows; the last response stands.
func groupRequest[R kmsg.Response](ctx context.Context, c *Client, req kmsg.Request, codes func(R) []int16) (R, error) {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		resp, err := request[R](ctx, c, req)
		var ke *kerr.Error
		switch {
		case err != nil && !(errors.As(err, &ke) && coordinatorBusy(ke.Code)):
			return resp, err
		case err == nil && !slices.ContainsFunc(codes(resp), coordinatorBusy):
			return resp, nil
		}
		if ctx.Err() != nil {
			return resp, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// String reads as Kafka's TopicPartition.toString: "orders-3".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTopicPartitions(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition - b.Partition)
}

// SortTopicPartitions sorts by topic, then partition.
func SortTopicPartitions(tps []TopicPartition) { slices.SortFunc(tps, compareTopicPartitions) }

// Group states as the group protocols spell them (ListGroups and
// DescribeGroups carry these strings).
const (
	GroupStable              = "Stable"
	GroupEmpty               = "Empty"
	GroupDead                = "Dead"
	GroupPreparingRebalance  = "PreparingRebalance"
	GroupCompletingRebalance = "CompletingRebalance"
	GroupAssigning           = "Assigning"
	GroupReconciling         = "Reconciling"
)

// GroupListing is one group as ListGroups reports it.
type GroupListing struct {
	Group string `json:"group"`
	// State is one of the Group* constants ("" from brokers before
	// ListGroups v4).
	State string `json:"state"`
	// Type is "classic" or "consumer" (KIP-848); "" from brokers before
	// ListGroups v5.
	Type string `json:"type"`
	// ProtocolType is "consumer" for consumer groups, "" for groups that
	// only commit offsets, "connect" for Kafka Connect workers…
	ProtocolType string `json:"protocol_type"`
}

// IsConsumerGroup reports whether the group is one of consumers (or only
// commits offsets), as Kafka's consumer group tool lists them.
func (g GroupListing) IsConsumerGroup() bool {
	return g.ProtocolType == "consumer" || g.ProtocolType == ""
}

// ListGroupsFilter narrows ListGroups; empty fields match everything.
// Matching is case-insensitive, as the broker does it.
type ListGroupsFilter struct {
	States []string
	Types  []string
}

// ListGroups lists the groups of every broker, sorted by name.
func (c *Client) ListGroups(ctx context.Context, f ListGroupsFilter) ([]GroupListing, error) {
	req := kmsg.NewPtrListGroupsRequest()
	req.StatesFilter, req.TypesFilter = f.States, f.Types
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.ListGroupsResponse) []int16 { return []int16{r.ErrorCode} })
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	out := make([]GroupListing, 0, len(resp.Groups))
	for _, g := range resp.Groups {
		out = append(out, GroupListing{Group: g.Group, State: g.GroupState, Type: g.GroupType, ProtocolType: g.ProtocolType})
	}
	slices.SortFunc(out, func(a, b GroupListing) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// GroupMember is one member of a described group.
type GroupMember struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"` // group.instance.id of a static member (KIP-345)
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
	// Assignment is what the member consumes, decoded when the group is a
	// consumer group in a stable generation; sorted.
	Assignment []TopicPartition `json:"assignment"`
}

// GroupDescription is one group as DescribeGroups reports it.
type GroupDescription struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	// Protocol is the chosen protocol: for a consumer group the partition
	// assignor ("range", "cooperative-sticky"…); empty while rebalancing.
	Protocol    string        `json:"protocol"`
	Coordinator *BrokerInfo   `json:"coordinator,omitempty"`
	Members     []GroupMember `json:"members"`
	// Err is this group's error (GROUP_AUTHORIZATION_FAILED…). A group
	// that does not exist is not an error: its State is Dead.
	Err error `json:"-"`
}

// Exists reports whether the broker knows the group.
func (d GroupDescription) Exists() bool { return d.Err == nil && d.State != GroupDead }

// Inactive reports whether the group has no members (Empty) or does not
// exist (Dead): the only states in which Kafka lets a tool change its
// offsets.
func (d GroupDescription) Inactive() bool {
	return d.State == GroupEmpty || d.State == GroupDead
}

// DescribeGroups describes groups, in the order asked. A group that does
// not exist comes back Dead, whichever DescribeGroups version the broker
// speaks (from v6 it answers GROUP_ID_NOT_FOUND, KIP-1043).
func (c *Client) DescribeGroups(ctx context.Context, groups ...string) ([]GroupDescription, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.DescribeGroupsResponse) (codes []int16) {
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
		return codes
	})
	if err != nil {
		return nil, err
	}
	coordinators, err := c.findCoordinators(ctx, groups)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]kmsg.DescribeGroupsResponseGroup, len(resp.Groups))
	for _, g := range resp.Groups {
		byName[g.Group] = g
	}
	out := make([]GroupDescription, len(groups))
	for i, name := range groups {
		g, ok := byName[name]
		d := GroupDescription{Group: name, Members: []GroupMember{}}
		if b, found := coordinators[name]; found {
			d.Coordinator = &b
		}
		switch {
		case !ok:
			d.Err = clientError("group "+name, "the broker did not describe the group")
		case g.ErrorCode == kerr.GroupIDNotFound.Code:
			d.State = GroupDead
		default:
			d.Err = codeError("group "+name, g.ErrorCode, g.ErrorMessage)
			d.State, d.ProtocolType, d.Protocol = g.State, g.ProtocolType, g.Protocol
			for _, m := range g.Members {
				d.Members = append(d.Members, describedMember(g.ProtocolType, m))
			}
		}
		out[i] = d
	}
	return out, nil
}

func describedMember(protocolType string, m kmsg.DescribeGroupsResponseGroupMember) GroupMember {
	gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: []TopicPartition{}}
	if m.InstanceID != nil {
		gm.InstanceID = *m.InstanceID
	}
	if protocolType != "consumer" || len(m.MemberAssignment) == 0 {
		return gm
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(m.MemberAssignment); err != nil {
		return gm // not the consumer protocol's encoding: nothing to show
	}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			gm.Assignment = append(gm.Assignment, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	SortTopicPartitions(gm.Assignment)
	return gm
}

// findCoordinators looks up the coordinator of each group; groups whose
// lookup failed are left out (their describe carries the error).
func (c *Client) findCoordinators(ctx context.Context, groups []string) (map[string]BrokerInfo, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0 // group
	req.CoordinatorKeys = groups
	resp, err := request[*kmsg.FindCoordinatorResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	out := map[string]BrokerInfo{}
	for _, co := range resp.Coordinators {
		if co.ErrorCode == 0 {
			out[co.Key] = BrokerInfo{NodeID: co.NodeID, Host: co.Host, Port: co.Port}
		}
	}
	return out, nil
}

// GroupResult is the outcome for one group.
type GroupResult struct {
	Group string
	// Err is this group's error (an *Error: NON_EMPTY_GROUP,
	// GROUP_ID_NOT_FOUND…), nil on success.
	Err error
}

// GroupResults holds one result per group, in request order.
type GroupResults []GroupResult

// All joins the errors of the groups that failed; nil when all succeeded.
func (rs GroupResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// DeleteGroups deletes groups with their committed offsets. Kafka deletes
// only groups without members: a group with members gets NON_EMPTY_GROUP.
func (c *Client) DeleteGroups(ctx context.Context, groups ...string) (GroupResults, error) {
	rs := make(GroupResults, len(groups))
	for i, g := range groups {
		rs[i].Group = g
	}
	if len(groups) == 0 {
		return rs, nil
	}
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = groups
	resp, err := groupRequest(ctx, c, req, func(r *kmsg.DeleteGroupsResponse) (codes []int16) {
		for _, g := range r.Groups {
			codes = append(codes, g.ErrorCode)
		}
		return codes
	})
	if err != nil {
		return nil, err
	}
	for _, g := range resp.Groups {
		for i := range rs {
			if rs[i].Group == g.Group {
				rs[i].Err = codeError("group "+g.Group, g.ErrorCode, nil)
			}
		}
	}
	return rs, nil
}
