package txn

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transactional id's state, Kafka's TransactionState with its
// ids (they are what `__transaction_state` records hold).
type State int8

const (
	Empty             State = 0 // no transaction open (after InitProducerId)
	Ongoing           State = 1 // partitions or a group added; the timeout runs
	PrepareCommit     State = 2 // EndTxn(commit) written; markers being written
	PrepareAbort      State = 3 // EndTxn(abort) or a fence written; markers being written
	CompleteCommit    State = 4 // every commit marker written
	CompleteAbort     State = 5 // every abort marker written
	Dead              State = 6 // expired id, about to be removed
	PrepareEpochFence State = 7 // the epoch is being bumped to fence a producer, then aborted
)

// String is the state's name as DescribeTransactions and ListTransactions
// report it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	case Dead:
		return "Dead"
	case PrepareEpochFence:
		return "PrepareEpochFence"
	}
	return "Unknown"
}

// StateNamed is the state of a ListTransactions state filter; ok is false
// for a name Kafka does not know (echoed back as an unknown filter).
func StateNamed(name string) (State, bool) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// validPrevious is Kafka's TransactionState.validPreviousStates: the states
// a transition into each state may start from.
var validPrevious = map[State][]State{
	Empty:         {Empty, CompleteCommit, CompleteAbort},
	Ongoing:       {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit: {Ongoing},
	// Empty and Complete* lead to PrepareAbort under TV2, where aborting a
	// transaction with nothing in it is allowed and bumps the epoch.
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// CanTransition reports whether Kafka's state machine allows from → to.
func CanTransition(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH: an id created but not
// yet handed out.
const noEpoch int16 = -1

// epochExhausted is Kafka's isEpochExhausted: the epoch after which a
// producer gets a new producer id (one epoch is kept in reserve for the
// coordinator's own fencing bump).
func epochExhausted(e int16) bool { return e >= 1<<15-2 }

// Transaction versions (the `transaction.version` feature, KIP-890): what
// the client's requests say, recorded per transaction as Kafka's
// clientTransactionVersion.
const (
	// TV1 covers TV0 and TV1: the epoch moves only at InitProducerId and
	// fencing, partitions are added by AddPartitionsToTxn and
	// AddOffsetsToTxn. Kafka records both as 0 in `__transaction_state`.
	TV1 int16 = 0
	// TV2 is KIP-890 part 2: every EndTxn bumps the epoch, Produce v12+ and
	// TxnOffsetCommit v5+ add their partition implicitly.
	TV2 int16 = 2
)

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// txnMeta is one transactional id's metadata: Kafka's TransactionMetadata.
type txnMeta struct {
	id             string
	producerID     int64
	prevProducerID int64
	epoch          int16
	lastEpoch      int16 // the epoch before the last bump, for KIP-360 retries
	// nextProducerID is the producer id a TV2 transaction whose epoch ran
	// out continues with once its markers are written; -1 otherwise.
	nextProducerID int64
	// clientTV is the transaction version of the request that made the
	// last transition (TV1 or TV2): a TV2 Prepare*/Complete* tells a
	// retried EndTxn (one epoch behind) from a fenced one.
	clientTV            int16
	timeout             time.Duration
	state               State
	partitions          map[TopicPartition]struct{}
	start, lastUpdate   time.Time // start is zero outside a transaction
	pendingCompletion   bool      // markers in flight: every other transition waits
	hasFailedEpochFence bool
}

func (m *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	// slices.SortFunc, not sort.Slice: this runs at every state write, and
	// sort.Slice's reflection was most of txnRecord's cost.
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return out
}

// topics groups the transaction's partitions by topic, as the records and
// DescribeTransactions list them.
func (m *txnMeta) topics() []kmsg.TxnMetadataValueTopic {
	var out []kmsg.TxnMetadataValueTopic
	for _, tp := range m.sortedPartitions() {
		if n := len(out); n == 0 || out[n-1].Topic != tp.Topic {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			out = append(out, t)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, tp.Partition)
	}
	return out
}
