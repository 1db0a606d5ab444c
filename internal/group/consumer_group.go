package group

import (
	"crypto/rand"
	"encoding/base64"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/config"
	"kbroker/internal/coordinator"
	"kbroker/internal/group/assignor"
	"kbroker/internal/meta"
)

// ConsumerConfig holds the broker settings of KIP-848 consumer groups.
type ConsumerConfig struct {
	// SessionTimeout and HeartbeatInterval are
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms, each bounded by its
	// group.consumer.min/max.* pair (bounds group configs must respect).
	SessionTimeout, MinSessionTimeout, MaxSessionTimeout          time.Duration
	HeartbeatInterval, MinHeartbeatInterval, MaxHeartbeatInterval time.Duration
	// MaxSize is group.consumer.max.size.
	MaxSize int
	// Assignors are group.consumer.assignors; the first is the default.
	Assignors []string
	// MigrationPolicy is group.consumer.migration.policy, lower case. It
	// governs the online conversion of groups with members (migration.go);
	// an empty group converts whatever it says, as in Kafka.
	MigrationPolicy string
	// Disabled is set when group.coordinator.rebalance.protocols leaves
	// out "consumer": the KIP-848 APIs answer UNSUPPORTED_VERSION, as
	// Kafka's do.
	Disabled bool
}

// consumerConfigFrom reads the KIP-848 settings.
func consumerConfigFrom(l config.Layers) ConsumerConfig {
	ms := func(name string) time.Duration {
		n, _ := strconv.ParseInt(config.BrokerValue(name, l), 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	size, _ := strconv.Atoi(config.BrokerValue("group.consumer.max.size", l))
	var assignors []string
	for _, a := range config.SplitList(config.BrokerValue("group.consumer.assignors", l)) {
		// Kafka also takes a class name; its simple name, lower-cased
		// without the Assignor suffix, is the wire name.
		a = a[strings.LastIndex(a, ".")+1:]
		a = strings.ToLower(strings.TrimSuffix(a, "Assignor"))
		if assignor.Named(a) != nil {
			assignors = append(assignors, a)
		}
	}
	if len(assignors) == 0 {
		assignors = []string{"uniform", "range"}
	}
	return ConsumerConfig{
		SessionTimeout:       ms("group.consumer.session.timeout.ms"),
		MinSessionTimeout:    ms("group.consumer.min.session.timeout.ms"),
		MaxSessionTimeout:    ms("group.consumer.max.session.timeout.ms"),
		HeartbeatInterval:    ms("group.consumer.heartbeat.interval.ms"),
		MinHeartbeatInterval: ms("group.consumer.min.heartbeat.interval.ms"),
		MaxHeartbeatInterval: ms("group.consumer.max.heartbeat.interval.ms"),
		MaxSize:              size,
		Assignors:            assignors,
		MigrationPolicy:      migrationPolicy(config.BrokerValue("group.consumer.migration.policy", l)),
		Disabled:             !slices.Contains(config.SplitList(config.BrokerValue("group.coordinator.rebalance.protocols", l)), "consumer"),
	}
}

// migrationPolicy is Kafka's ConsumerGroupMigrationPolicy.parse: an
// unknown value disables migration.
func migrationPolicy(v string) string {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "bidirectional", "upgrade", "downgrade", "disabled":
		return v
	}
	return "disabled"
}

// consumerProtocolType is the protocol type of a consumer group, in
// ListGroups and DescribeGroups as in Kafka.
const consumerProtocolType = "consumer"

// memberState is a member's reconciliation state, as Kafka's
// MemberState and the CurrentMemberAssignment record number them.
type memberState int8

const (
	memberStable               memberState = 0
	memberUnrevokedPartitions  memberState = 1
	memberUnreleasedPartitions memberState = 2
)

// leaveStaticEpoch is the epoch of a static member that left for now
// (MemberEpoch -2): it keeps its assignment until its session expires.
const leaveStaticEpoch = -2

// topicMeta is a subscribed topic as the group's epoch last saw it.
type topicMeta struct {
	name       string
	partitions int32
}

// consumerGroup is the KIP-848 state of a group whose type is "consumer".
// It hangs off the group (g.consumer), which keeps the id, the committed
// offsets and the classic fields unused.
type consumerGroup struct {
	// epoch is the group epoch, bumped by every change the assignment
	// depends on; assignmentEpoch is the epoch the targets were computed
	// at (they are computed at once, so it trails epoch only mid-change).
	epoch, assignmentEpoch int32
	members                map[string]*consumerMember
	statics                map[string]string // group.instance.id -> member id
	target                 map[string]assignor.Assignment
	// subscribedMeta are the subscribed topics at the last epoch: a
	// difference from the metadata now (a topic created, deleted,
	// grown) bumps the epoch.
	subscribedMeta map[assignor.TopicID]topicMeta
	// regexes are the resolved topics of each member regex, as last
	// persisted.
	regexes map[string][]string
	// checkedRev is the metadata revision subscribedMeta was last
	// compared with, so an unchanged metadata costs a heartbeat nothing.
	checkedRev int64
	// regexesResolvedAt is when the regexes were last resolved against
	// the metadata (regexRefreshInterval).
	regexesResolvedAt time.Time
	// stateTime is when the group last changed state, for retention.
	stateTime time.Time
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*consumerMember{}, statics: map[string]string{},
		target: map[string]assignor.Assignment{}, subscribedMeta: map[assignor.TopicID]topicMeta{},
		regexes: map[string][]string{}, checkedRev: -1,
	}
}

type consumerMember struct {
	id             string
	instanceID     *string
	rackID         *string
	clientID       string
	clientHost     string
	topicNames     []string
	regex          string
	serverAssignor string
	// rebalanceTimeout bounds how long the member may hold partitions it
	// was asked to revoke.
	rebalanceTimeout time.Duration

	epoch, previousEpoch int32
	state                memberState
	// assigned is the member's current assignment; revoking the part of
	// its previous one it must still give up. A partition in either is
	// owned by the member and given to no one else.
	assigned, revoking assignor.Assignment

	// describable is the topic filter of the principal of the member's
	// last heartbeat (TOPIC DESCRIBE), applied to its regex.
	describable                   func(topic string) bool
	sessionTimer, rebalanceTimer  *coordinator.Timer
	sessionTimeout, heartbeatTime time.Duration
	// classic is set for a member that joined with JoinGroup (Kafka's
	// ClassicMemberMetadata, migration.go); nil for one speaking
	// ConsumerGroupHeartbeat.
	classic *classicProtocol
	// joinTimer fences a classic member told REBALANCE_IN_PROGRESS that
	// does not rejoin within its rebalance timeout (Kafka's
	// scheduleConsumerGroupJoinTimeoutIfAbsent).
	joinTimer *coordinator.Timer
	// heardAt is when the member was last heard from as its current
	// assignment record says (refreshed every heardRefresh of a session
	// timeout), so a restarted coordinator can count the silence before
	// the restart against the member's session.
	heardAt time.Time
}

func (cg *consumerGroup) memberOrNew(id string) *consumerMember {
	m := cg.members[id]
	if m == nil {
		m = &consumerMember{id: id, assigned: assignor.Assignment{}, revoking: assignor.Assignment{}}
		cg.members[id] = m
	}
	return m
}

func (cg *consumerGroup) dropMember(id string) {
	m := cg.members[id]
	if m == nil {
		return
	}
	m.sessionTimer.Stop()
	m.rebalanceTimer.Stop()
	m.joinTimer.Stop()
	delete(cg.members, id)
	delete(cg.target, id)
	if m.instanceID != nil && cg.statics[*m.instanceID] == id {
		delete(cg.statics, *m.instanceID)
	}
}

// state is the group state Kafka derives for a consumer group.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// preferredAssignor is the assignor named by most members, else the
// broker's default (the first of group.consumer.assignors).
func (cg *consumerGroup) preferredAssignor(defaults []string) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := ""
	for name, n := range votes {
		if best == "" || n > votes[best] || n == votes[best] && name < best {
			best = name
		}
	}
	if best == "" && len(defaults) > 0 {
		best = defaults[0]
	}
	return best
}

// compileRegex compiles a SubscribedTopicRegex as Kafka matches it:
// against the whole topic name. Go's RE2 stands in for RE2/J.
func compileRegex(re string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + re + ")$")
}

// newConsumerMemberID is a v0 member id made by the coordinator: a random UUID
// printed as Kafka prints one.
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func sortedTopicIDs[V any](m map[assignor.TopicID]V) []assignor.TopicID {
	ids := make([]assignor.TopicID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func cloneAssignment(a assignor.Assignment) assignor.Assignment {
	out := make(assignor.Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func equalAssignments(a, b assignor.Assignment) bool {
	if countPartitions(a) != countPartitions(b) {
		return false
	}
	for t, ps := range a {
		if len(ps) > 0 && !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func countPartitions(a assignor.Assignment) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// contains reports whether a holds topic t partition p.
func contains(a assignor.Assignment, t assignor.TopicID, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

// subset reports whether every partition of a is in b.
func subset(a, b assignor.Assignment) bool {
	for t, ps := range a {
		for _, p := range ps {
			if !contains(b, t, p) {
				return false
			}
		}
	}
	return true
}

// overlaps reports whether a and b share a partition.
func overlaps(a, b assignor.Assignment) bool {
	for t, ps := range a {
		for _, p := range ps {
			if contains(b, t, p) {
				return true
			}
		}
	}
	return false
}

// topicsNow resolves what the metadata says of the group's subscribed
// topics: names and resolved regexes of every member.
func (s *shard) topicsNow(cg *consumerGroup, snap *meta.Snapshot) map[assignor.TopicID]topicMeta {
	out := map[assignor.TopicID]topicMeta{}
	if snap == nil {
		return out
	}
	for _, m := range cg.members {
		for _, name := range s.memberTopics(cg, m) {
			if t := snap.Topic(name); t != nil {
				out[assignor.TopicID(t.ID)] = topicMeta{name: name, partitions: t.Partitions}
			}
		}
	}
	return out
}

// memberTopics are the topic names a member subscribes to: its names and
// what its regex resolved to.
func (s *shard) memberTopics(cg *consumerGroup, m *consumerMember) []string {
	if m.regex == "" {
		return m.topicNames
	}
	return append(slices.Clone(m.topicNames), cg.regexes[m.regex]...)
}

// resolveRegexes evaluates every member regex against snap, keeping the
// topics the member's principal may describe, and returns the records of
// those whose result changed. changed reports any change.
func (s *shard) resolveRegexes(g *group, snap *meta.Snapshot) (records []coordinator.Record, changed bool) {
	cg := g.consumer
	if snap == nil {
		return nil, false
	}
	byRegex := map[string][]*consumerMember{}
	for _, m := range cg.members {
		if m.regex != "" {
			byRegex[m.regex] = append(byRegex[m.regex], m)
		}
	}
	for re, members := range byRegex {
		compiled, err := compileRegex(re)
		if err != nil {
			continue // refused when the member sent it
		}
		if _, resolved := cg.regexes[re]; resolved && !slices.ContainsFunc(members, func(m *consumerMember) bool { return m.describable != nil }) {
			// Read back after a restart, no member of this regex has
			// heartbeated yet: whose topics it may see is unknown, so
			// the persisted result stands until one does.
			continue
		}
		var topics []string
		for name := range snap.TopicNames() {
			if !compiled.MatchString(name) {
				continue
			}
			for _, m := range members {
				if m.describable != nil && m.describable(name) {
					topics = append(topics, name)
					break
				}
			}
		}
		slices.Sort(topics)
		if old, ok := cg.regexes[re]; ok && slices.Equal(old, topics) {
			continue
		}
		cg.regexes[re] = topics
		records = append(records, regexRecord(g.id, re, topics, s.now()))
		changed = true
	}
	for re := range cg.regexes {
		if byRegex[re] == nil {
			delete(cg.regexes, re)
			records = append(records, coordinator.Record{Key: consumerKey(keyConsumerGroupRegex, g.id, re)})
		}
	}
	return records, changed
}

// regexRecord is ConsumerGroupRegularExpression: a regex's topics.
func regexRecord(groupID, re string, topics []string, now time.Time) coordinator.Record {
	return coordinator.Record{
		Key: consumerKey(keyConsumerGroupRegex, groupID, re),
		Value: valueOf(func(e *encoder) {
			e.uvarint(len(topics) + 1)
			for _, t := range topics {
				e.cstr(t)
			}
			e.int64(0) // Version: the metadata image version in Kafka
			e.int64(now.UnixMilli())
		}),
	}
}

func equalTopicMeta(a, b map[assignor.TopicID]topicMeta) bool {
	if len(a) != len(b) {
		return false
	}
	for id, t := range a {
		if b[id] != t {
			return false
		}
	}
	return true
}

// computeTargets runs the group's assignor over its members and returns
// the records of the targets that changed and the new assignment epoch.
func (s *shard) computeTargets(g *group) []coordinator.Record {
	cg := g.consumer
	partitions := map[assignor.TopicID]int32{}
	ids := map[string]assignor.TopicID{}
	for id, t := range cg.subscribedMeta {
		partitions[id] = t.partitions
		ids[t.name] = id
	}
	members := make([]assignor.Member, 0, len(cg.members))
	for _, m := range cg.members {
		am := assignor.Member{ID: m.id, Current: cg.target[m.id]}
		if m.instanceID != nil {
			am.InstanceID = *m.instanceID
		}
		for _, name := range s.memberTopics(cg, m) {
			if id, ok := ids[name]; ok {
				am.Topics = append(am.Topics, id)
			}
		}
		members = append(members, am)
	}
	a := assignor.Named(cg.preferredAssignor(s.cfg.Consumer.Assignors))
	if a == nil {
		a = assignor.Uniform{}
	}
	targets := a.Assign(members, partitions)
	var records []coordinator.Record
	for _, m := range members {
		t := targets[m.ID]
		if t == nil {
			t = assignor.Assignment{}
		}
		if old, ok := cg.target[m.ID]; !ok || !equalAssignments(old, t) {
			cg.target[m.ID] = t
			records = append(records, targetMemberRecord(g, m.ID, t))
		}
	}
	cg.assignmentEpoch = cg.epoch
	return append(records, targetMetadataRecord(g))
}

// bumpEpoch starts a new group epoch (membership, subscriptions or their
// topics changed) and computes its target assignment at once.
func (s *shard) bumpEpoch(g *group) []coordinator.Record {
	cg := g.consumer
	cg.epoch++
	records := []coordinator.Record{subscriptionMetadataRecord(g), consumerGroupRecord(g)}
	return append(records, s.computeTargets(g)...)
}

// regexRefreshInterval is Kafka's REGEX_BATCH_REFRESH_INTERVAL_MS: the
// regexes of a group are resolved again at most this often when topics
// change, so a burst of topic creations costs one rebalance, not one each.
const regexRefreshInterval = 10 * time.Second

// regexRefreshDue reports whether the group's regexes may be resolved
// now: one no member resolved yet (a new subscription) at once, the
// others once regexRefreshInterval has passed since the last resolution.
func (s *shard) regexRefreshDue(cg *consumerGroup, now time.Time) bool {
	for _, m := range cg.members {
		if _, ok := cg.regexes[m.regex]; m.regex != "" && !ok {
			return true
		}
	}
	return now.Sub(cg.regexesResolvedAt) >= regexRefreshInterval
}

// refreshTopics re-resolves regexes and re-reads the subscribed topics
// when the metadata moved since the last look (or force is set), and
// bumps the epoch if what the assignment depends on changed.
func (s *shard) refreshTopics(g *group, force bool) []coordinator.Record {
	cg := g.consumer
	var snap *meta.Snapshot
	if s.cfg.Metadata != nil {
		snap = s.cfg.Metadata()
	}
	rev := int64(-1)
	if snap != nil {
		rev = snap.Rev
	}
	if !force && rev == cg.checkedRev {
		return nil
	}
	var records []coordinator.Record
	if now := s.now(); force || s.regexRefreshDue(cg, now) {
		records, _ = s.resolveRegexes(g, snap)
		cg.regexesResolvedAt = now
		cg.checkedRev = rev
	} else if len(cg.regexes) == 0 {
		cg.checkedRev = rev
	}
	// Else the regexes wait out the throttle: checkedRev stays behind
	// so a heartbeat after it resolves them against this metadata.
	now := s.topicsNow(cg, snap)
	if !force && equalTopicMeta(now, cg.subscribedMeta) {
		return records
	}
	cg.subscribedMeta = now
	return append(records, s.bumpEpoch(g)...)
}

// heardRefresh is the fraction of the session timeout after which a
// heartbeat rewrites the member's current assignment only to record that
// it was heard: a live member's heardAt is never older than a third of
// its session (plus one heartbeat interval) when the coordinator stops.
const heardRefresh = 3

// sessionLeftAtLoad is how long a member read back has to heartbeat: what
// remains of its session since it was last heard, but at least half a
// heartbeat interval, so that a live member reconnecting to the restarted
// coordinator is not fenced before it could speak. A member with no
// recorded heardAt (written by an older kbroker) gets its whole session.
func sessionLeftAtLoad(m *consumerMember, now time.Time) time.Duration {
	if m.heardAt.IsZero() {
		return m.sessionTimeout
	}
	left := m.heardAt.Add(m.sessionTimeout).Sub(now)
	return min(max(left, m.heartbeatTime/2), m.sessionTimeout)
}

// active reports a consumer group with members; false for nil.
func (cg *consumerGroup) active() bool { return cg != nil && len(cg.members) > 0 }

// loadedConsumer restarts the timers of a consumer group read back. A
// member's session runs from when it was last heard (heardAt), not from
// the load: Kafka restarts the whole session timeout at a failover, but a
// coordinator restarted more often than the session timeout (kill -9
// every few seconds) would then never expire a member that vanished
// without leaving, and the partitions it holds would never move. One
// caught mid-revocation gets its rebalance timeout.
func (s *shard) loadedConsumer(g *group) {
	cg := g.consumer
	if cg == nil {
		return
	}
	now := s.now()
	for _, m := range cg.members {
		m.sessionTimeout, m.heartbeatTime = s.settings(g.id)
		if m.classic != nil {
			m.sessionTimeout = m.classic.sessionTimeout
		}
		s.armSessionFor(g, m, sessionLeftAtLoad(m, now))
		s.armRebalance(g, m)
	}
	if len(cg.members) == 0 {
		cg.stateTime = g.stateTime
	}
}

// validateCommit is Kafka's ConsumerGroup.validateOffsetCommit: a commit
// with no member (epoch < 0) is allowed only into an empty group; a
// member's commit must carry its current epoch (OffsetCommit v9+ sends
// the member epoch as the generation): an older one is
// STALE_MEMBER_EPOCH (the member has not caught up yet, and retries), a
// newer one FENCED_MEMBER_EPOCH. A consumer-protocol member always commits
// with OffsetCommit v9+; an older commit names a classic generation this
// group has not (UNSUPPORTED_VERSION).
func (cg *consumerGroup) validateCommit(req *kmsg.OffsetCommitRequest) *kerr.Error {
	return cg.validateMemberCommit(req.MemberID, req.InstanceID, req.Generation, req.Version < 9)
}

// validateTxnCommit is validateCommit for TxnOffsetCommit, which carries
// the member epoch as its generation in every version that names a
// member, so no version is too old.
func (cg *consumerGroup) validateTxnCommit(req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	return cg.validateMemberCommit(req.MemberID, req.InstanceID, req.Generation, false)
}

func (cg *consumerGroup) validateMemberCommit(memberID string, instanceID *string, epoch int32, classicVersion bool) *kerr.Error {
	if epoch < 0 && memberID == "" && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case instanceID != nil && (m.instanceID == nil || *m.instanceID != *instanceID):
		return kerr.FencedInstanceID
	case m.classic != nil:
		return cg.validateClassicCommit(m, epoch)
	case classicVersion:
		return kerr.UnsupportedVersion
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch
	case epoch < m.epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// consumerSubscribedTopics are the topic names some member of a consumer
// group subscribes to (by name or through its regex): their offsets are
// in use, so OffsetDelete refuses them (GROUP_SUBSCRIBED_TO_TOPIC).
func (s *shard) consumerSubscribedTopics(g *group) map[string]bool {
	out := map[string]bool{}
	for _, m := range g.consumer.members {
		for _, t := range s.memberTopics(g.consumer, m) {
			out[t] = true
		}
	}
	return out
}
