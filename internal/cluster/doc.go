// Package cluster is broker membership and controller election; what the
// elected controller does (placement, topic creation) is internal/controller.
//
// Membership: every broker writes its registration (meta.Broker: id, rack,
// advertised endpoints, published static configs) at brokers/<node.id>
// under an etcd lease that it keeps alive. When the broker stops, the lease
// is revoked; when it dies or loses etcd for longer than the lease TTL, etcd
// deletes the key. Either way every broker's store sees the deletion through
// its watch, so meta.Snapshot.LiveBrokers is the set of live brokers. A broker
// whose lease expired (etcd unreachable for too long) takes a new lease and
// registers again as soon as etcd answers.
//
// Controller: the brokers campaign in an etcd election
// (go.etcd.io/etcd/client/v3/concurrency) under controller/, on their
// leases; the oldest campaign key is the leader, which Metadata and
// DescribeCluster report as the controller. Today any broker carries out
// the controller's duties (etcd transactions serialize the metadata
// writes), but clients such as sarama send admin requests to it.
//
// In single-broker (bbolt) mode Local registers the broker in the store and
// names it the controller, so the code above does not branch.
package cluster
