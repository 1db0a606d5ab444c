package api

// Authorization: what every API checks, in one place.
//
// With authorizer.class.name empty (Deps.Authz nil) everything is allowed
// and the ACL APIs answer SECURITY_DISABLED. Otherwise the built-in
// authorizer (StandardAuthorizer semantics, internal/auth) decides, from an
// immutable *auth.Authorizer rebuilt on every ACL change and read through an
// atomic pointer: no lock and no allocation per check.
//
// The matrix, as Apache Kafka 4 checks it (KafkaApis, AuthHelper):
//
//	API                           operation          resource                  refusal
//	Produce                       WRITE              TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	  idempotent batches          IDEMPOTENT_WRITE   CLUSTER, or WRITE on any  CLUSTER_AUTHORIZATION_FAILED every partition
//	                                                 topic (KIP-679)
//	Fetch                         READ               TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	ListOffsets                   DESCRIBE           TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	Metadata                      DESCRIBE           TOPIC (each)              named: TOPIC_AUTHORIZATION_FAILED; all-topics: left out
//	  auto-creation               CREATE             CLUSTER or TOPIC          TOPIC_AUTHORIZATION_FAILED
//	CreateTopics                  CREATE             CLUSTER or TOPIC          TOPIC_AUTHORIZATION_FAILED per topic
//	DeleteTopics                  DELETE             TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per topic
//	CreatePartitions              ALTER              TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per topic
//	InitProducerId (no txn id)    IDEMPOTENT_WRITE   CLUSTER, or WRITE on any  CLUSTER_AUTHORIZATION_FAILED
//	                                                 topic (KIP-679)
//	DescribeCluster               DESCRIBE           CLUSTER                   CLUSTER_AUTHORIZATION_FAILED
//	DescribeConfigs               DESCRIBE_CONFIGS   TOPIC / CLUSTER           per resource: TOPIC_/CLUSTER_AUTHORIZATION_FAILED
//	AlterConfigs, IncrementalAlterConfigs
//	                              ALTER_CONFIGS      TOPIC / CLUSTER           per resource (BROKER, BROKER_LOGGER, USER, CLIENT: CLUSTER)
//	DescribeClientQuotas          DESCRIBE_CONFIGS   CLUSTER                   CLUSTER_AUTHORIZATION_FAILED
//	AlterClientQuotas             ALTER_CONFIGS      CLUSTER                   every entry CLUSTER_AUTHORIZATION_FAILED
//	DescribeUserScramCredentials  DESCRIBE           CLUSTER                   top level CLUSTER_AUTHORIZATION_FAILED
//	AlterUserScramCredentials     ALTER              CLUSTER                   every result CLUSTER_AUTHORIZATION_FAILED
//	DescribeAcls                  DESCRIBE           CLUSTER                   top level CLUSTER_AUTHORIZATION_FAILED
//	CreateAcls, DeleteAcls        ALTER              CLUSTER                   every result CLUSTER_AUTHORIZATION_FAILED
//	ApiVersions, SaslHandshake, SaslAuthenticate: none
//
// The APIs authorized as a whole on CLUSTER declare their row where they
// are registered (clusterACL), and clusterAllowed applies it; the
// topic-level checks use the topic helpers below.

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

// Authorization holds the broker's current authorizer.
type Authorization struct {
	superUsers   []string
	allowIfNoACL bool
	cur          atomic.Pointer[auth.Authorizer]
}

// NewAuthorization is the built-in authorizer with super.users and
// allow.everyone.if.no.acl.found, holding no ACLs until SetACLs.
func NewAuthorization(superUsers []string, allowEveryoneIfNoACL bool) *Authorization {
	a := &Authorization{superUsers: superUsers, allowIfNoACL: allowEveryoneIfNoACL}
	a.SetACLs(nil)
	return a
}

// SetACLs replaces the ACLs the authorizer decides with (on every change).
func (a *Authorization) SetACLs(acls []auth.ACL) {
	a.cur.Store(auth.NewAuthorizer(acls, a.superUsers, a.allowIfNoACL))
}

// Authorizer is the current immutable authorizer.
func (a *Authorization) Authorizer() *auth.Authorizer { return a.cur.Load() }

// allowed decides one action for the connection's principal and host.
func (s *Server) allowed(c *wire.Conn, op auth.Operation, rt auth.ResourceType, name string) bool {
	if s.Authz == nil {
		return true
	}
	return s.Authz.cur.Load().Authorize(c.Principal, c.Host(), op, rt, name)
}

// clusterAllowed applies the CLUSTER row the API declared at registration
// (clusterACL).
func (s *Server) clusterAllowed(c *wire.Conn, key kmsg.Key) bool {
	d := registry[int16(key)]
	if !d.hasClusterOp {
		panic("api: " + key.Name() + " registered without a CLUSTER ACL row")
	}
	return s.allowed(c, d.clusterOp, auth.ResourceCluster, auth.ClusterName)
}

// errClusterAuth is the refusal of a CLUSTER-level check.
var errClusterAuth = newError(kerr.ClusterAuthorizationFailed, "Cluster authorization failed.")

// errTopicAuth is the refusal of a topic-level check.
var errTopicAuth = newError(kerr.TopicAuthorizationFailed, "Topic authorization failed.")

// topicAllowed checks op on one topic; a refusal is errTopicAuth.
func (s *Server) topicAllowed(c *wire.Conn, op auth.Operation, topic string) error {
	if s.allowed(c, op, auth.ResourceTopic, topic) {
		return nil
	}
	return errTopicAuth
}

// createAllowed is CreateTopics' and auto-creation's rule: CREATE on the
// cluster or on the topic.
func (s *Server) createAllowed(c *wire.Conn, topic string) bool {
	return s.allowed(c, auth.OpCreate, auth.ResourceCluster, auth.ClusterName) ||
		s.allowed(c, auth.OpCreate, auth.ResourceTopic, topic)
}

// idempotentAllowed is KIP-679's rule for idempotent producers:
// IDEMPOTENT_WRITE on the cluster, or WRITE on at least one topic.
func (s *Server) idempotentAllowed(c *wire.Conn) bool {
	if s.Authz == nil || s.allowed(c, auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) {
		return true
	}
	return s.Authz.cur.Load().AuthorizeByResourceType(c.Principal, c.Host(), auth.OpWrite, auth.ResourceTopic)
}

// configResourceAllowed is DescribeConfigs'/AlterConfigs' per-resource rule:
// topics by name, every other resource type on the cluster.
func (s *Server) configResourceAllowed(c *wire.Conn, typ kmsg.ConfigResourceType, name string, op auth.Operation) error {
	if typ == kmsg.ConfigResourceTypeTopic {
		return s.topicAllowed(c, op, name)
	}
	if s.allowed(c, op, auth.ResourceCluster, auth.ClusterName) {
		return nil
	}
	return errClusterAuth
}

// authorizedOperations is KIP-430's bitfield: bit n set when operation n is
// allowed on the resource, over the operations the resource type supports.
func (s *Server) authorizedOperations(c *wire.Conn, rt auth.ResourceType, name string) int32 {
	var bits int32
	for _, op := range auth.SupportedOperations(rt) {
		if s.allowed(c, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// notRequestedOps is the bitfield value when the client did not ask for it.
const notRequestedOps = -2147483648

// topicRefAllowed checks op on a topic named by name or, for requests that
// name topics by id, by its id; an unknown id is left to the handler
// (UNKNOWN_TOPIC_ID).
func (s *Server) topicRefAllowed(c *wire.Conn, snap *meta.Snapshot, op auth.Operation, ref partitionRef) error {
	if s.Authz == nil {
		return nil
	}
	name := ref.name
	if ref.byID {
		t := snap.TopicByID(meta.TopicID(ref.id))
		if t == nil {
			return nil
		}
		name = t.Name
	}
	return s.topicAllowed(c, op, name)
}

// produceIdempotentAllowed applies KIP-679 to a produce request carrying
// idempotent batches: IDEMPOTENT_WRITE on the cluster or WRITE on some
// topic — a topic of this very request is checked first, so the scan of
// AuthorizeByResourceType runs only for requests that fail anyway.
func (s *Server) produceIdempotentAllowed(c *wire.Conn, snap *meta.Snapshot, req *kmsg.ProduceRequest) bool {
	if s.Authz == nil || !hasIdempotentBatch(req) {
		return true
	}
	if s.allowed(c, auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) {
		return true
	}
	for _, rt := range req.Topics {
		if s.topicRefAllowed(c, snap, auth.OpWrite, partitionRef{name: rt.Topic, id: rt.TopicID, byID: req.Version >= 13}) == nil {
			return true
		}
	}
	return s.idempotentAllowed(c)
}

// hasIdempotentBatch reports whether any partition's first batch has a
// producer id (v2 batch header: producerId at bytes 43–51).
func hasIdempotentBatch(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if len(rp.Records) >= 51 && int64(binary.BigEndian.Uint64(rp.Records[43:51])) >= 0 {
				return true
			}
		}
	}
	return false
}

// produceAllowed is Produce's check for one partition: the idempotent rule
// (whole request) first, then WRITE on the topic.
func (s *Server) produceAllowed(c *wire.Conn, snap *meta.Snapshot, ref partitionRef, idempotentOK bool) error {
	if !idempotentOK {
		return errClusterAuth
	}
	return s.topicRefAllowed(c, snap, auth.OpWrite, ref)
}

// fillMetadataAuthorizedOps sets KIP-430's bitfields when Metadata v8+
// asks for them: per described topic (every version from 8), and for the
// cluster (v8–v10; later versions ask DescribeCluster).
func (s *Server) fillMetadataAuthorizedOps(c *wire.Conn, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version < 8 {
		return
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			t := &resp.Topics[i]
			if t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceTopic, *t.Topic)
			}
		}
	}
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceCluster, auth.ClusterName)
	}
}
