package meta

import "slices"

// Eligible leader replicas (KIP-966), as Kafka 4's controller keeps them
// with eligible.leader.replicas.version=1 (PartitionChangeBuilder). While
// the ISR is below min.insync.replicas the high watermark does not move,
// so a replica that leaves the ISR then still holds every committed
// record: it goes to the ELR instead of being forgotten, and when the ISR
// is empty a clean election may pick a live ELR member. The ISR may then
// be empty (without ELR the last in-sync replica stays in it). An ISR back
// at min.insync.replicas clears the ELR; an unclean election clears it
// too. LastKnownELR remembers the leader the partition had when its ISR
// first became empty (Kafka's "last known leader").
//
// A replica whose broker shut down uncleanly may have lost records it had
// not flushed: when it registers again (Broker.UncleanShutdown) the
// controller takes it out of the ISR and the ELR (Kafka's
// handleBrokerUncleanShutdown), the ELR of the very change that takes it
// out of the ISR included. It stays in LastKnownELR: the last leader is
// what Kafka 4's controller elects when the ISR and the ELR are both
// empty (its balanced recovery), an election that, like an unclean one,
// may lose what that leader lost.

// WithISR is r with its ISR replaced by isr (a change by the leader or the
// controller) and its ELR following it: below minISR, the replicas of the
// ISR and ELR before the change that are not in isr; at or above, none.
func (r PartitionRecord) WithISR(isr []int32, minISR int) PartitionRecord {
	next := r
	next.ISR = isr
	if len(isr) >= minISR {
		next.ELR = nil
		return next
	}
	var elr []int32
	for _, id := range slices.Concat(r.ELR, r.ISR) {
		if !slices.Contains(isr, id) && !slices.Contains(elr, id) {
			elr = append(elr, id)
		}
	}
	slices.Sort(elr)
	next.ELR = elr
	return next
}

// WithLastKnownLeader sets next's LastKnownELR from the change cur → next:
// the first time the ISR becomes empty it is cur's leader; once the
// partition has a leader again it is cleared.
func WithLastKnownLeader(cur, next PartitionRecord) PartitionRecord {
	switch {
	case len(next.ISR) == 0 && len(cur.ISR) > 0 && cur.Leader >= 0 && !(len(cur.LastKnownELR) == 1 && cur.LastKnownELR[0] == cur.Leader):
		next.LastKnownELR = []int32{cur.Leader}
	case next.Leader >= 0 && len(cur.LastKnownELR) > 0:
		next.LastKnownELR = nil
	}
	return next
}
