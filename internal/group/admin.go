package group

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// Describe answers DescribeGroups for one group. An unknown group is Dead
// with no error before v6 and GROUP_ID_NOT_FOUND from v6 (KIP-1043).
func (c *Coordinator) Describe(ctx context.Context, version int16, groupID string) kmsg.DescribeGroupsResponseGroup {
	d, _, errc := call(ctx, c, groupID, func(s *shard, done func(kmsg.DescribeGroupsResponseGroup)) {
		done(s.describe(version, groupID))
	})
	if errc != nil {
		d = kmsg.NewDescribeGroupsResponseGroup()
		d.Group, d.ErrorCode = groupID, errc.Code
	}
	return d
}

func (s *shard) describe(version int16, groupID string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = groupID
	g := s.groups[groupID]
	if g == nil {
		d.State = Dead.String()
		if version >= 6 {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + groupID + " not found."
			d.ErrorMessage = &msg
		}
		return d
	}
	if g.consumer != nil {
		return s.describeConsumerAsClassic(g, d)
	}
	d.State, d.ProtocolType = g.state.String(), g.protocolType
	// The protocol and each member's metadata and assignment mean
	// something only once the generation's assignment is in place.
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// Listed is a group as ListGroups reports it.
type Listed struct {
	Group, ProtocolType, State string
	// Type is "classic" or "consumer" (KIP-848).
	Type string
}

// List returns the groups of every loaded shard whose state (v4+,
// case-insensitive) and type (v5+) pass the filters; an empty filter passes
// all. loading reports a shard still replaying, whose groups are missing
// (COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) List(ctx context.Context, states, types []string) (groups []Listed, loading bool) {
	for _, rs := range c.rt.Shards() {
		if !rs.Loaded() {
			loading = true
			continue
		}
		part, _, errc := runOn(ctx, rs, func(s *shard, done func([]Listed)) {
			var out []Listed
			for _, g := range s.groups {
				l := Listed{Group: g.id, ProtocolType: g.protocolType, State: g.state.String(), Type: "classic"}
				if g.consumer != nil {
					l.State, l.Type = g.consumer.state(), "consumer"
				}
				if len(states) > 0 && !containsFold(states, l.State) || len(types) > 0 && !containsFold(types, l.Type) {
					continue
				}
				out = append(out, l)
			}
			done(out)
		})
		if errc != nil {
			loading = true
			continue
		}
		groups = append(groups, part...)
	}
	return groups, loading
}

func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// Delete serves DeleteGroups for one group: only an empty group can go,
// and it goes with its committed offsets (tombstones for each, then the
// group's own).
func (c *Coordinator) Delete(ctx context.Context, groupID string) int16 {
	code, _, errc := call(ctx, c, groupID, func(s *shard, done func(int16)) { done(s.delete(groupID)) })
	if errc != nil {
		return errc.Code
	}
	return code
}

func (s *shard) delete(groupID string) int16 {
	g := s.groups[groupID]
	switch {
	case g == nil || g.state == Dead:
		return kerr.GroupIDNotFound.Code
	case g.state != Empty || g.consumer.active():
		return kerr.NonEmptyGroup.Code
	}
	var records []coordinator.Record
	if g.consumer != nil {
		records = append(records, consumerGroupTombstones(groupID)...)
	}
	for t, ps := range g.offsets {
		for p := range ps {
			records = append(records, offsetTombstone(groupID, t, p))
		}
	}
	records = append(records, groupTombstone(groupID))
	if e := s.write(records...); e != nil {
		return e.Code
	}
	g.transition(Dead, s.now())
	for _, t := range g.pending {
		t.Stop()
	}
	delete(s.groups, groupID)
	return 0
}
