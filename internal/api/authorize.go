package api

// Authorization: what every API checks, in one place.
//
// With authorizer.class.name empty (Deps.Authz nil) everything is allowed
// and the ACL APIs answer SECURITY_DISABLED. Otherwise the built-in
// authorizer (StandardAuthorizer semantics, internal/auth) decides, from an
// immutable *auth.Authorizer rebuilt on every ACL change and read through an
// atomic pointer: no lock and no allocation per check.
//
// The matrix, as Apache Kafka 4 checks it (KafkaApis, ControllerApis for
// the requests a broker forwards to its controller, AuthHelper):
//
//	API                           operation          resource                  refusal
//	Produce                       WRITE              TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	  transactional batches       WRITE              TRANSACTIONAL_ID          TRANSACTIONAL_ID_AUTHORIZATION_FAILED every partition
//	  (idempotent batches need nothing more: KIP-679 moved that check to InitProducerId)
//	Fetch (consumer)              READ               TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	Fetch (follower, replica id)  CLUSTER_ACTION     CLUSTER                   TOPIC_AUTHORIZATION_FAILED every partition
//	ListOffsets                   DESCRIBE           TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per partition
//	Metadata                      DESCRIBE           TOPIC (each)              named: TOPIC_AUTHORIZATION_FAILED; all-topics: left out
//	  auto-creation               CREATE             CLUSTER or TOPIC          TOPIC_AUTHORIZATION_FAILED
//	  cluster operations (v8–10)  DESCRIBE           CLUSTER                   bitfield 0
//	CreateTopics                  CREATE             CLUSTER or TOPIC          TOPIC_AUTHORIZATION_FAILED per topic
//	  configs in the answer       DESCRIBE_CONFIGS   TOPIC                     topic config error TOPIC_AUTHORIZATION_FAILED
//	DeleteTopics                  DELETE             CLUSTER, or DESCRIBE and  TOPIC_AUTHORIZATION_FAILED per topic (by name, before
//	                                                 DELETE on TOPIC           existence; by id, its name only when describable)
//	CreatePartitions              ALTER              TOPIC (each)              TOPIC_AUTHORIZATION_FAILED per topic
//	InitProducerId (no txn id)    IDEMPOTENT_WRITE   CLUSTER, or WRITE on any  CLUSTER_AUTHORIZATION_FAILED
//	                                                 topic (KIP-679)
//	InitProducerId (txn id)       WRITE              TRANSACTIONAL_ID          TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	DescribeCluster               none; the KIP-430 cluster operations need DESCRIBE on CLUSTER (else bitfield 0)
//	DescribeConfigs               DESCRIBE_CONFIGS   TOPIC / CLUSTER           per resource: TOPIC_/CLUSTER_AUTHORIZATION_FAILED
//	AlterConfigs, IncrementalAlterConfigs
//	                              ALTER_CONFIGS      TOPIC / CLUSTER           per resource (BROKER, BROKER_LOGGER: CLUSTER)
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

// deletable is DeleteTopics' rule: DELETE on the cluster grants every
// topic, else DELETE on the topic.
func (s *Server) deletable(c *wire.Conn, topic string) bool {
	return s.allowed(c, auth.OpDelete, auth.ResourceCluster, auth.ClusterName) ||
		s.allowed(c, auth.OpDelete, auth.ResourceTopic, topic)
}

// deleteDescribable is what DeleteTopics may reveal of a topic: a name the
// principal may not DESCRIBE is refused before its existence is looked at,
// and a topic named by id is answered without its name.
func (s *Server) deleteDescribable(c *wire.Conn, topic string) bool {
	return s.allowed(c, auth.OpDelete, auth.ResourceCluster, auth.ClusterName) ||
		s.allowed(c, auth.OpDescribe, auth.ResourceTopic, topic)
}

// followerFetchAllowed: a Fetch carrying a replica id comes from another
// broker's replica, which needs CLUSTER_ACTION on the cluster.
func (s *Server) followerFetchAllowed(c *wire.Conn) error {
	if s.allowed(c, auth.OpClusterAction, auth.ResourceCluster, auth.ClusterName) {
		return nil
	}
	return errTopicAuth
}

// transactionalIDAllowed is InitProducerId's rule for a transactional id:
// WRITE on it.
func (s *Server) transactionalIDAllowed(c *wire.Conn, id string) bool {
	return s.allowed(c, auth.OpWrite, auth.ResourceTransactionalID, id)
}

// errGroupAuth is the refusal of a GROUP-level check.
var errGroupAuth = newError(kerr.GroupAuthorizationFailed, "Group authorization failed.")

// configResourceAllowed is DescribeConfigs'/AlterConfigs' per-resource rule:
// topics and groups by name, every other resource type on the cluster.
func (s *Server) configResourceAllowed(c *wire.Conn, typ kmsg.ConfigResourceType, name string, op auth.Operation) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return s.topicAllowed(c, op, name)
	case kmsg.ConfigResourceTypeGroupConfig:
		if s.allowed(c, op, auth.ResourceGroup, name) {
			return nil
		}
		return errGroupAuth
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

// produceTransactionalAllowed is Produce's whole-request rule for
// transactional batches: the request must name a transactional id the
// principal may WRITE. Idempotent batches need nothing here (KIP-679: the
// check is InitProducerId's).
func (s *Server) produceTransactionalAllowed(c *wire.Conn, req *kmsg.ProduceRequest) bool {
	if s.Authz == nil || !hasTransactionalBatch(req) {
		return true
	}
	return req.TransactionID != nil && s.transactionalIDAllowed(c, *req.TransactionID)
}

// hasTransactionalBatch reports whether any partition's first batch is
// transactional (v2 batch header: attributes at bytes 21–23, bit 4).
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if len(rp.Records) >= 23 && rp.Records[16] == 2 && binary.BigEndian.Uint16(rp.Records[21:23])&0x10 != 0 {
				return true
			}
		}
	}
	return false
}

// errTransactionalIDAuth is the refusal of a transactional id check.
var errTransactionalIDAuth = newError(kerr.TransactionalIDAuthorizationFailed, "Transactional Id authorization failed.")

// produceAllowed is Produce's check for one partition: the transactional
// rule (whole request) first, then WRITE on the topic.
func (s *Server) produceAllowed(c *wire.Conn, snap *meta.Snapshot, ref partitionRef, transactionalOK bool) error {
	if !transactionalOK {
		return errTransactionalIDAuth
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
		// Every topic the principal may describe, found or not; the
		// refused ones and unknown ids keep the "not given" value.
		for i := range resp.Topics {
			t := &resp.Topics[i]
			if t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code && t.ErrorCode != kerr.UnknownTopicID.Code {
				t.AuthorizedOperations = s.authorizedOperations(c, auth.ResourceTopic, *t.Topic)
			}
		}
	}
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = s.clusterAuthorizedOperations(c)
	}
}

// clusterAuthorizedOperations is KIP-430's cluster bitfield as Kafka gives
// it: only to a principal that may DESCRIBE the cluster, 0 to any other.
func (s *Server) clusterAuthorizedOperations(c *wire.Conn) int32 {
	if !s.allowed(c, auth.OpDescribe, auth.ResourceCluster, auth.ClusterName) {
		return 0
	}
	return s.authorizedOperations(c, auth.ResourceCluster, auth.ClusterName)
}
