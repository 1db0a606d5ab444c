package api

import "github.com/twmb/franz-go/pkg/kmsg"

// Feature levels (KIP-584) in ApiVersions v3+: the range each feature is
// supported at and the level finalized for the cluster. group.version 1
// is what a Kafka 4 cluster finalizes when it serves the KIP-848 consumer
// protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe);
// eligible.leader.replicas.version 1 is KIP-966's eligible leader
// replicas, which the controller keeps (internal/controller/election.go)
// and DescribeTopicPartitions reports, as a Kafka 4.1+ cluster finalizes.
// transaction.version 2 is KIP-890 part 2 (Transactions V2), which clients
// use only when it is finalized: the epoch bumped at every EndTxn (v5),
// partitions added by Produce v12+ and TxnOffsetCommit v5+ themselves.
var features = []struct {
	name          string
	min, max, fin int16
}{
	{"group.version", 0, 1, 1},
	{"eligible.leader.replicas.version", 0, 1, 1},
	{"transaction.version", 0, 2, finalizedTransactionVersion},
}

// finalizedTransactionVersion is the transaction.version level finalized
// here; the produce and TxnOffsetCommit paths add partitions implicitly
// only at 2, as Kafka's do.
const finalizedTransactionVersion = 2

// finalizedFeaturesEpoch is the epoch of the finalized levels: they never
// change at runtime here.
const finalizedFeaturesEpoch = 0

func setFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, f := range features {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.fin, f.fin
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
}
