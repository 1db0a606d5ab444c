package api

// Metadata (key 3), v0–v13.
//
// Lists the brokers (with the endpoints of the listener the request came in
// on, as Kafka does), the controller (this broker until clustering), and the
// requested topics with their partitions, leaders and ids. A null topic list
// (v1+), or an empty one at v0, means every topic. Missing topics are created
// when auto.create.topics.enable is on and the request allows it (v4+
// AllowAutoTopicCreation; always allowed before v4). v10+ may name topics by
// id. Topics the principal may not DESCRIBE are left out of all-topic
// listings and answer TOPIC_AUTHORIZATION_FAILED when named; auto-creation
// also needs CREATE on the cluster or the topic. v8+ authorized-operation
// bitfields (KIP-430) are filled when asked for (the cluster's up to v10).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() { register(kmsg.Metadata, 0, 13, handleMetadata) }

func handleMetadata(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = s.brokerList(c.Listener)
	resp.ClusterID = &s.ClusterID
	resp.ControllerID = s.nodeID()

	snap := s.Store.Snapshot()
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range snap.Topics {
			if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Name) { // unauthorized topics are left out
				resp.Topics = append(resp.Topics, s.topicMetadata(t))
			}
		}
		s.fillMetadataAuthorizedOps(c, req, resp)
		return resp, nil
	}
	autoCreate := s.Broker.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		var t *meta.Topic
		switch {
		// By id only when the topic has no name, or an empty one with an
		// id: an empty name alone is an invalid name, as in Kafka (before
		// v10 there are no ids at all).
		case rt.Topic == nil || *rt.Topic == "" && rt.TopicID != [16]byte{}:
			t = snap.TopicIDs[meta.TopicID(rt.TopicID)]
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		default:
			t = snap.Topics[*rt.Topic]
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			var err error
			switch err = validateTopicName(*rt.Topic); {
			case err != nil:
			case !s.allowed(c, auth.OpDescribe, auth.ResourceTopic, *rt.Topic):
				err = errTopicAuth
			case !autoCreate:
				err = newError(kerr.UnknownTopicOrPartition, "")
			case !s.createAllowed(c, *rt.Topic):
				err = errTopicAuth
			default:
				t, err = s.createTopic(ctx, &topicSpec{name: *rt.Topic, partitions: -1, replicationFactor: -1})
				if errorIs(err, kerr.TopicAlreadyExists) { // created concurrently
					t = s.Store.Snapshot().Topics[*rt.Topic]
				}
			}
			if t == nil {
				mt.ErrorCode, _ = errorCode(err)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if !s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(t))
	}
	s.fillMetadataAuthorizedOps(c, req, resp)
	return resp, nil
}

// brokerList describes the live brokers on the named listener.
func (s *Server) brokerList(listener string) []kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = s.nodeID()
	b.Rack = s.Broker.Rack
	ep := s.Broker.AdvertisedListeners[0]
	for _, l := range s.Broker.AdvertisedListeners {
		if l.Name == listener {
			ep = l
		}
	}
	b.Host, b.Port = ep.Host, int32(ep.Port)
	return []kmsg.MetadataResponseBroker{b}
}

// topicMetadata describes t with every partition led by this broker.
func (s *Server) topicMetadata(t *meta.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	for p := int32(0); p < t.Partitions; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = s.nodeID()
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.nodeID()}
		mp.ISR = []int32{s.nodeID()}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
