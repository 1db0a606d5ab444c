package api

// Metadata (key 3), v0–v13.
//
// Lists the brokers (with the endpoints of the listener the request came in
// on, as Kafka does), the controller (elected through etcd in a cluster,
// internal/cluster; this broker alone otherwise), and the requested topics
// with their partitions, leaders (from each topic's placement) and ids. A null topic list
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

func init() { register(kmsg.Metadata, 0, 13, handleMetadata, catchesUpWhen(metadataNamesUnknownTopic)) }

func handleMetadata(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	snap := s.Store.Snapshot()
	live := s.liveBrokerSet(snap)
	resp.Brokers = brokerList(live, c.Listener)
	resp.ClusterID = &s.ClusterID
	resp.ControllerID = s.controllerID()

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		// Sized once: grown by appends, an answer of 10,000 topics would
		// copy itself a dozen times.
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, snap.TopicCount())
		for _, t := range snap.AllTopics() {
			if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Name) { // unauthorized topics are left out
				resp.Topics = append(resp.Topics, s.topicMetadata(snap, live, t))
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
			t = snap.TopicByID(meta.TopicID(rt.TopicID))
			if t == nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		default:
			t = snap.Topic(*rt.Topic)
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			err := validateTopicName(*rt.Topic)
			// DESCRIBE first: a name the principal may not describe is
			// refused whatever it is, as Kafka tells nothing more of it.
			switch {
			case !s.allowed(c, auth.OpDescribe, auth.ResourceTopic, *rt.Topic):
				err = errTopicAuth
			case err != nil:
			case !autoCreate:
				err = newError(kerr.UnknownTopicOrPartition, "")
			case !s.createAllowed(c, *rt.Topic):
				err = errTopicAuth
			default:
				t, err = s.controller.AutoCreateTopic(ctx, *rt.Topic)
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
		resp.Topics = append(resp.Topics, s.topicMetadata(snap, live, t))
	}
	s.fillMetadataAuthorizedOps(c, req, resp)
	return resp, nil
}

// brokerList describes the live brokers with their endpoints on the named
// listener (a broker without a listener of that name shows its first one:
// brokers of one cluster are expected to share listener names).
func brokerList(live map[int32]*meta.Broker, listener string) []kmsg.MetadataResponseBroker {
	var out []kmsg.MetadataResponseBroker
	for _, reg := range sortedBrokers(live) {
		ep, ok := reg.Endpoint(listener)
		if !ok {
			if len(reg.Endpoints) == 0 {
				continue
			}
			ep = reg.Endpoints[0]
		}
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Rack = reg.ID, reg.Rack
		b.Host, b.Port = ep.Host, ep.Port
		out = append(out, b)
	}
	return out
}

// topicMetadata describes t's partitions with their leaders, replicas and
// in-sync replicas (replica.State). A partition whose leader is not live
// has no leader: LEADER_NOT_AVAILABLE with leader -1, so clients retry
// until it is back.
func (s *Server) topicMetadata(snap *meta.Snapshot, live map[int32]*meta.Broker, t *meta.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = internalTopic(name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	for p := int32(0); p < t.Partitions; p++ {
		st := s.Logs.State(snap, t, p, live)
		mp := &mt.Partitions[p]
		mp.Default()
		mp.Partition = p
		mp.Leader, mp.LeaderEpoch = st.Leader, st.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = st.Replicas, st.ISR, st.OfflineReplicas
		if st.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	}
	return mt
}
