package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partsMatrixCases are the rows of the partition admin APIs, authorized
// as Kafka does: DeleteRecords by DELETE on the topic, DescribeLogDirs by
// DESCRIBE on the cluster, DescribeTopicPartitions by DESCRIBE on the
// topic.
func partsMatrixCases() map[string]matrixCase {
	return map[string]matrixCase{
		"DeleteRecords": {key: kmsg.DeleteRecords, refused: kerr.TopicAuthorizationFailed, grants: onNamedTopic(kmsg.ACLOperationDelete),
			setup: createTopicAs,
			call: func(t *testing.T, cl *kgo.Client, name string) int16 {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.TimeoutMillis = 5000
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = name
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Partition, rp.Offset = 0, -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode
			}},
		"DescribeLogDirs": {key: kmsg.DescribeLogDirs, refused: kerr.ClusterAuthorizationFailed, grants: onCluster(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				return issue(t, cl, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse).ErrorCode
			}},
		"DescribeTopicPartitions": {key: kmsg.DescribeTopicPartitions, refused: kerr.TopicAuthorizationFailed, grants: onTopic(kmsg.ACLOperationDescribe),
			call: func(t *testing.T, cl *kgo.Client, _ string) int16 {
				req := kmsg.NewPtrDescribeTopicPartitionsRequest()
				req.ResponsePartitionLimit = 10
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = "t"
				req.Topics = append(req.Topics, rt)
				return issue(t, cl, req).(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode
			}},
	}
}
