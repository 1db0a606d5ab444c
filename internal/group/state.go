package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
)

// State is a classic group's state.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String is the state's name as DescribeGroups and ListGroups report it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return "Dead"
}

// protocol is one (name, metadata) a member offers in JoinGroup.
type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	protocolType     string
	protocols        []protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	assignment       []byte

	// join is the parked JoinGroup of a member awaiting the rebalance's
	// completion; sync its parked SyncGroup. Each is answered once.
	join        func(*kmsg.JoinGroupResponse)
	joinVersion int16
	sync        func(*kmsg.SyncGroupResponse)
	// isNew marks a member that joined in this rebalance and has not yet
	// had a join answer: it expires after newMemberJoinTimeout rather than
	// its session timeout.
	isNew     bool
	heartbeat *coordinator.Timer
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// sameProtocols reports whether ps are exactly the member's protocols, in
// order: Kafka's "matches" test, deciding whether a rejoin changes anything.
func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.metadata, b.metadata)
	})
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64
	expireTime  int64 // -1: none (set only by OffsetCommit v1-v4 retention)
}

type group struct {
	id           string
	state        State
	stateTime    time.Time
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	order        []string          // member ids in join order: leader re-election and replies are deterministic
	statics      map[string]string // group.instance.id -> member id
	pending      map[string]*coordinator.Timer
	offsets      map[string]map[int32]committed

	// joinTimer completes the join phase (rebalance timeout, or the initial
	// delay); syncTimer ends a CompletingRebalance whose members did not
	// all send SyncGroup.
	joinTimer, syncTimer *coordinator.Timer
	// newMemberAdded records that a member joined during the initial
	// delay, which then re-arms (group.initial.rebalance.delay.ms).
	newMemberAdded bool
	// initialDelay is set while a rebalance that started from Empty waits
	// out the initial delay: it does not complete early even if every
	// member has joined.
	initialDelay bool
	// rebalanceOnLoad is set when the last record read back was written
	// mid-rebalance: the group rebalances once loaded.
	rebalanceOnLoad bool
	// consumer is set for a KIP-848 consumer group (consumer_group.go):
	// then the classic fields above stay unused, but for the offsets.
	consumer *consumerGroup
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id: id, state: Empty, stateTime: now,
		members: map[string]*member{}, statics: map[string]string{},
		pending: map[string]*coordinator.Timer{}, offsets: map[string]map[int32]committed{},
	}
}

func (g *group) transition(to State, now time.Time) {
	g.state = to
	g.stateTime = now
}

func (g *group) addMember(m *member) {
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.statics[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

func (g *group) dropMember(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if m.instanceID != nil && g.statics[*m.instanceID] == id {
		delete(g.statics, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// rebalanceTimeout is the longest rebalance timeout of the members: the
// join phase waits that long for the slowest of them.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) awaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.join != nil {
			n++
		}
	}
	return n
}

// allJoined is Kafka's hasAllMembersJoined: every member has a parked
// JoinGroup and no member id handed out with MEMBER_ID_REQUIRED is still
// expected back.
func (g *group) allJoined() bool {
	return g.awaitingJoin() == len(g.members) && len(g.pending) == 0
}

// supportsProtocols is Kafka's check of a joining member's protocols: an
// empty group takes any non-empty protocol type with at least one protocol;
// otherwise the type must match and one offered name must be supported by
// every current member.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.allSupport(p.name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p protocol) bool { return p.name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol of the next generation: among the
// names every member supports, each member votes for the first in its own
// preference order, and the most votes win (ties: the name first in the
// leader's preference order, so the choice is deterministic).
func (g *group) selectProtocol() string {
	votes := map[string]int{}
	for _, id := range g.order {
		for _, p := range g.members[id].protocols {
			if g.allSupport(p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	var pref []protocol
	if l := g.members[g.leader]; l != nil {
		pref = l.protocols
	} else if len(g.order) > 0 {
		pref = g.members[g.order[0]].protocols
	}
	for _, p := range pref {
		if v, ok := votes[p.name]; ok && v > bestVotes {
			best, bestVotes = p.name, v
		}
	}
	return best
}

// validateMember is Kafka's classic-group member check: with an instance
// id, the id must map to this member (else FENCED_INSTANCE_ID, or
// UNKNOWN_MEMBER_ID if unmapped); without, the member must exist.
func (g *group) validateMember(memberID string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		mapped, ok := g.statics[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case mapped != memberID:
			return kerr.FencedInstanceID
		}
		return nil
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// subscribedTopics are the topics the members subscribe to through the
// selected protocol, if the group uses the consumer protocol type and every
// subscription parses; ok is false otherwise.
func (g *group) subscribedTopics() (topics map[string]bool, ok bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, false
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics, true
}
