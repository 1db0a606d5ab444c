package group

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/coordinator"
	"kbroker/internal/record"
	"kbroker/internal/storage"
)

// shard is the state of the groups of one `__consumer_offsets` partition.
// It is touched only on the shard's event loop.
type shard struct {
	cfg      *Config
	counters *counters
	rt       *coordinator.Shard
	groups   map[string]*group
	// pendingTxn holds transactional offset commits awaiting their
	// marker, by producer id (txn_offsets.go).
	pendingTxn map[int64]pendingOffsets
}

var _ coordinator.StateMachine = (*shard)(nil)

// Replay applies a record of the log. One it cannot read is logged and
// skipped, so that no record can keep every group of the partition from
// loading.
func (s *shard) Replay(r coordinator.Record) error {
	if err := s.replay(r); err != nil {
		s.rt.Logger().Warn("skipping an unreadable __consumer_offsets record", "partition", s.rt.Partition, "err", err)
	}
	return nil
}

// Loaded starts the session timers of the members read back: a member that
// does not heartbeat within its session timeout of the load is gone, as
// after a coordinator failover in Kafka.
func (s *shard) Loaded() {
	for _, g := range s.groups {
		for _, m := range g.members {
			s.scheduleHeartbeat(g, m)
		}
		s.loadedConsumer(g)
		if g.rebalanceOnLoad {
			g.rebalanceOnLoad = false
			s.prepareRebalance(g)
		}
	}
	s.scheduleRetention()
}

// Unloaded answers every parked request NOT_COORDINATOR, so its client
// looks the coordinator up again.
func (s *shard) Unloaded() {
	for _, g := range s.groups {
		for _, m := range g.members {
			m.heartbeat.Stop()
			if m.join != nil {
				m.join(joinError(m.joinVersion, m.id, kerr.NotCoordinator))
				m.join = nil
			}
			if m.sync != nil {
				m.sync(&kmsg.SyncGroupResponse{ErrorCode: kerr.NotCoordinator.Code})
				m.sync = nil
			}
		}
		g.joinTimer.Stop()
		g.syncTimer.Stop()
		if g.consumer != nil {
			for _, m := range g.consumer.members {
				m.sessionTimer.Stop()
				m.rebalanceTimer.Stop()
				m.joinTimer.Stop()
			}
		}
		for _, t := range g.pending {
			t.Stop()
		}
	}
	s.groups = map[string]*group{}
	s.pendingTxn = nil
}

func (s *shard) now() time.Time { return s.rt.Now() }

// write appends records, mapping a log failure to the error a client
// reacts to as Kafka's coordinators do: NOT_COORDINATOR makes it look the
// coordinator up again; COORDINATOR_NOT_AVAILABLE makes it retry.
func (s *shard) write(records ...coordinator.Record) *kerr.Error {
	err := s.rt.Write(records)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrClosed), errors.Is(err, storage.ErrStorage):
		return kerr.NotCoordinator
	case errors.Is(err, record.ErrMessageTooLarge), errors.Is(err, record.ErrRecordListTooLarge):
		return kerr.UnknownServerError
	}
	return kerr.CoordinatorNotAvailable
}

// persistMembership writes the members of a group in the middle of a
// rebalance (unsettledGroupRecord says why). A failed write is not the
// request's concern: the rebalance's own record follows.
func (s *shard) persistMembership(g *group) {
	if len(g.members) == 0 || g.state == Empty || g.state == Stable {
		return
	}
	if e := s.write(unsettledGroupRecord(g)); e != nil {
		s.rt.Logger().Warn("could not record a group's membership change", "group", g.id, "err", e.Message)
	}
}

// scheduleHeartbeat (re)arms m's session timer: a member not heard from
// within its session timeout is removed.
func (s *shard) scheduleHeartbeat(g *group, m *member) {
	m.heartbeat.Stop()
	d := m.sessionTimeout
	if m.isNew {
		d = newMemberJoinTimeout
	}
	m.heartbeat = s.rt.After(d, func() { s.sessionExpired(g, m) })
}

func (s *shard) sessionExpired(g *group, m *member) {
	if s.groups[g.id] != g || g.members[m.id] != m {
		return
	}
	// A member parked in JoinGroup or SyncGroup is alive: it is waiting on
	// the coordinator, not silent. Only a new member's join has a bound.
	if (m.join != nil && !m.isNew) || m.sync != nil {
		s.scheduleHeartbeat(g, m)
		return
	}
	s.removeMember(g, m, kerr.UnknownMemberID)
}
