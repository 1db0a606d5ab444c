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
	"slices"

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
		return s.allTopicsMetadata(c, req, resp, snap, live), nil
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
	s.fillTopicMetadata(&mt, snap, live, t)
	return mt
}

// fillTopicMetadata is topicMetadata into mt, a topic in its default
// state, reusing the room of mt.Partitions.
func (s *Server) fillTopicMetadata(mt *kmsg.MetadataResponseTopic, snap *meta.Snapshot, live map[int32]*meta.Broker, t *meta.Topic) {
	mt.Topic = &t.Name
	mt.TopicID = t.ID
	mt.IsInternal = internalTopic(t.Name)
	mt.Partitions = slices.Grow(mt.Partitions[:0], int(t.Partitions))[:t.Partitions]
	for p := int32(0); p < t.Partitions; p++ {
		st := s.Logs.State(snap, t, p, live)
		mp := &mt.Partitions[p]
		*mp = kmsg.NewMetadataResponseTopicPartition() // no error left from the topic before
		mp.Partition = p
		mp.Leader, mp.LeaderEpoch = st.Leader, st.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = st.Replicas, st.ISR, st.OfflineReplicas
		if st.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	}
}

// allTopicsMetadata answers a request for every topic. With 100,000
// partitions that answer is megabytes: its topics are described and
// encoded one at a time while the response is written (wire/splice.go),
// so the 100,000 partition structs never exist together. The handler
// only chooses the topics (authorization) and their operation bits.
func (s *Server) allTopicsMetadata(c *wire.Conn, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse, snap *meta.Snapshot, live map[int32]*meta.Broker) kmsg.Response {
	all := &allTopicsResponse{MetadataResponse: resp, s: s, snap: snap, live: live}
	all.topics = make([]*meta.Topic, 0, snap.TopicCount())
	for _, t := range snap.AllTopics() {
		if s.allowed(c, auth.OpDescribe, auth.ResourceTopic, t.Name) { // unauthorized topics are left out
			all.topics = append(all.topics, t)
		}
	}
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		all.operations = make([]int32, len(all.topics))
		for i, t := range all.topics {
			all.operations[i] = s.authorizedOperations(c, auth.ResourceTopic, t.Name)
		}
	}
	s.fillMetadataAuthorizedOps(c, req, resp) // the cluster's bits; resp has no topics
	return all
}

// allTopicsResponse is a MetadataResponse whose topics are described while
// it is encoded. Topics stays empty; everything else is encoded as is.
type allTopicsResponse struct {
	*kmsg.MetadataResponse
	s          *Server
	snap       *meta.Snapshot
	live       map[int32]*meta.Broker
	topics     []*meta.Topic
	operations []int32 // topic i's KIP-430 bits when asked for, else nil
}

func (r *allTopicsResponse) AppendTo(dst []byte) []byte {
	after := metadataAfterTopics(r.Version)
	one := kmsg.NewPtrMetadataResponse()
	one.Version = r.Version
	one.Topics = []kmsg.MetadataResponseTopic{}
	enc := wire.NewElementEncoderBefore(one, after)
	one.Topics = []kmsg.MetadataResponseTopic{kmsg.NewMetadataResponseTopic()}
	mt := &one.Topics[0]
	return wire.AppendArrayResponseBefore(dst, r.MetadataResponse, len(r.topics), after, func(dst []byte, i int) []byte {
		r.s.fillTopicMetadata(mt, r.snap, r.live, r.topics[i])
		if r.operations != nil {
			mt.AuthorizedOperations = r.operations[i]
		}
		return append(dst, enc.Element()...)
	})
}

// metadataAfterTopics is the length of what follows the topics array in a
// MetadataResponse of the given version without unknown tags: the
// cluster's authorized operations (v8–v10), the top-level error code
// (v13+) and the tag section (flexible, v9+).
func metadataAfterTopics(version int16) int {
	n := 0
	if version >= 8 && version <= 10 {
		n += 4
	}
	if version >= 13 {
		n += 2
	}
	if version >= 9 {
		n++
	}
	return n
}
