package storage

import (
	"fmt"
	"time"
)

// VerificationGuard is Kafka's VerificationGuard (KIP-890 part 1): the
// token a transactional produce takes from the partition before it asks
// the transaction coordinator whether the partition is in the producer's
// transaction, and hands back with the append. A marker written for the
// producer in between invalidates it, so that the append, verified against
// a transaction that has since ended, cannot open a transaction no marker
// will close (a hanging transaction). NoGuard is the zero value: no
// verification was needed, or none was made.
type VerificationGuard uint64

// NoGuard appends without a verification check.
const NoGuard VerificationGuard = 0

// ErrVerificationOvertaken is the refusal of an append whose verification
// a transaction marker overtook. A caller may verify again with a fresh
// guard: the coordinator then answers for the transaction open now.
var ErrVerificationOvertaken = fmt.Errorf("%w: a transaction marker came after the verification", ErrInvalidTxnState)

// StartVerification returns the guard a transactional append of producer
// pid at epoch must carry, or NoGuard when the producer already has a
// transaction open here at that epoch: its partition was verified when
// that transaction started, as Kafka's maybeStartTransactionVerification
// skips the coordinator then. A batch of a later epoch is verified even
// so: under TV2 it begins the next transaction while the marker of the
// open one (an EndTxn bumped the epoch) is still on its way, and appended
// unverified it would be ended by that marker, committed or aborted with
// the transaction before it (Kafka's hasOngoingTransaction compares the
// epoch for this).
func (l *Log) StartVerification(pid int64, epoch int16) VerificationGuard {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.ps.hasOngoingTransaction(pid, epoch) {
		return NoGuard
	}
	if g, ok := l.ps.guards[pid]; ok {
		return g // concurrent produces of the producer share one
	}
	l.ps.guardSeq++
	g := VerificationGuard(l.ps.guardSeq)
	l.ps.guards[pid] = g
	return g
}

// AppendVerified is Append for a batch verified with guard: a
// transactional batch that would open the producer's transaction is
// refused (ErrInvalidTxnState) unless guard is still the producer's, that
// is, no marker came in between. NoGuard is Append.
func (l *Log) AppendVerified(batch []byte, now time.Time, guard VerificationGuard) (AppendResult, error) {
	if guard == NoGuard {
		return l.Append(batch, now)
	}
	return l.appendGuarded(batch, now, guard)
}

// checkGuard is the guard's check in append, appendMu held: only a
// transactional batch of a producer with no transaction open here at its
// epoch needs one, as Kafka's batchMissingRequiredVerification.
func (ps *producerState) checkGuard(pid int64, epoch int16, transactional bool, guard VerificationGuard) error {
	if guard == NoGuard || !transactional || ps.hasOngoingTransaction(pid, epoch) {
		return nil
	}
	if ps.guards[pid] != guard {
		return fmt.Errorf("%w: record of producer %d was not part of an ongoing transaction", ErrVerificationOvertaken, pid)
	}
	return nil
}

// hasOngoingTransaction reports a transaction of pid open here at epoch.
func (ps *producerState) hasOngoingTransaction(pid int64, epoch int16) bool {
	e := ps.producers[pid]
	return e != nil && e.txnFirst >= 0 && e.epoch == epoch
}
