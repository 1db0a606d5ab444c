package api

// Read-your-writes across brokers (meta/sync.go): in a cluster, a broker's
// snapshot trails etcd by the watch delay, so an admin request sent to
// broker B right after a change through broker A would be judged against
// metadata without that change (a topic just created answering
// UNKNOWN_TOPIC_OR_PARTITION). The admin APIs first bring the snapshot up
// to etcd's current revision: they are registered with catchesUp (Metadata
// with catchesUpWhen). Produce, Fetch and the other data-path APIs never
// do: they make no store round trip.
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

// catchUp syncs the store before r when its API's registration asks for it
// (catchesUp, catchesUpWhen).
func (s *Server) catchUp(ctx context.Context, d apiDef, r *wire.Request) {
	if d.catchUp == nil || !d.catchUp(s, r) {
		return
	}
	if err := s.Store.Sync(ctx); err != nil {
		s.Logger.Debug("serving an admin request from the local metadata", "api", kmsg.NameForKey(r.Key), "err", err)
	}
}

// metadataNamesUnknownTopic is Metadata's catch-up rule: only when it names
// a topic this broker does not know. Clients send Metadata for their known
// topics often, and those need no round trip.
func metadataNamesUnknownTopic(s *Server, r *wire.Request) bool {
	req := r.Body.(*kmsg.MetadataRequest)
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
