package api

// Read-your-writes across brokers (meta/sync.go): in a cluster, a broker's
// snapshot trails etcd by the watch delay, so an admin request sent to
// broker B right after a change through broker A would be judged against
// metadata without that change (a topic just created answering
// UNKNOWN_TOPIC_OR_PARTITION). The APIs below first bring the snapshot up
// to etcd's current revision. Produce, Fetch and the other data-path APIs
// never do: they make no store round trip.
//
// When the catch-up fails (etcd unreachable or slow) the request is served
// from the snapshot the broker has, as during any etcd outage: writes then
// fail retriably at the store, reads show the last known metadata, which is
// what Kafka's brokers do with their metadata cache.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

// catchesUp tells the admin APIs that read or validate against metadata
// another broker may just have changed. A switch, not a map: every request,
// produce and fetch included, asks.
func catchesUp(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions,
		kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs,
		kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas,
		kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs,
		kmsg.DescribeUserSCRAMCredentials, kmsg.AlterUserSCRAMCredentials,
		kmsg.DescribeCluster:
		return true
	}
	return false
}

// catchUp syncs the store before r when r needs it. Metadata does only
// when it names a topic this broker does not know: clients send Metadata
// for their known topics often, and those need no round trip.
func (s *Server) catchUp(ctx context.Context, r *wire.Request) {
	switch {
	case catchesUp(r.Key):
	case r.Key == int16(kmsg.Metadata) && s.namesUnknownTopic(r.Body.(*kmsg.MetadataRequest)):
	default:
		return
	}
	if err := s.Store.Sync(ctx); err != nil {
		s.Logger.Debug("serving an admin request from the local metadata", "api", kmsg.NameForKey(r.Key), "err", err)
	}
}

func (s *Server) namesUnknownTopic(req *kmsg.MetadataRequest) bool {
	snap := s.Store.Snapshot()
	for _, rt := range req.Topics {
		if rt.Topic != nil && *rt.Topic != "" {
			if snap.Topic(*rt.Topic) == nil {
				return true
			}
		} else if snap.TopicByID(meta.TopicID(rt.TopicID)) == nil {
			return true
		}
	}
	return false
}
