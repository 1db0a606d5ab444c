package meta

import (
	"net/url"
	"strings"
)

// The key layout follows the paths Kafka kept in ZooKeeper (config/topics,
// config/users/<user>/clients/<client>, brokers/ids, the <default> entity),
// so an operator reading the store directly finds what they expect:
//
//	cluster/id                       the cluster id, written once
//	topics/<topic>                   a topic: id, partitions, replicas (JSON)
//	partitions/<topic id>/<p>        a partition's replicas, ISR, leader, epochs (partitions.go)
//	config/topics/<topic>            a topic's config overrides (JSON object)
//	config/brokers/<id>              a broker's dynamic configs
//	config/brokers/<default>         the cluster-wide dynamic broker default
//	config/groups/<group>            a group's config overrides (JSON object)
//	config/users/..., clients/..., ips/...  client quota entities (quotas.go)
//	acls/<type>/<pattern>/<name>     the ACLs of one resource pattern (acls.go)
//	scram/<user>/<mechanism>         a SCRAM credential (scram.go)
//	brokers/<id>                     a live broker's registration (brokers.go)
//	producer_ids/next                the next unallocated producer id (producer_ids.go)
//
// Names are URL path-escaped so that any topic or principal name is one
// path segment.
const (
	keyClusterID     = "cluster/id"
	prefixTopics     = "topics/"
	prefixTopicConf  = "config/topics/"
	prefixBrokerConf = "config/brokers/"
	prefixGroupConf  = "config/groups/"

	// DefaultEntity is the name under which cluster-wide defaults are stored
	// ("<default>" as in Kafka's ZooKeeper layout).
	DefaultEntity = "<default>"
)

func escape(name string) string { return url.PathEscape(name) }

func unescape(segment string) string {
	if s, err := url.PathUnescape(segment); err == nil {
		return s
	}
	return segment
}

func topicKey(name string) string       { return prefixTopics + escape(name) }
func topicConfigKey(name string) string { return prefixTopicConf + escape(name) }

// brokerConfigKey is the key of a broker's dynamic configs; an empty id is
// the cluster-wide default, as on the wire.
func brokerConfigKey(id string) string {
	if id == "" {
		return prefixBrokerConf + DefaultEntity
	}
	return prefixBrokerConf + escape(id)
}

// nameAfter returns the unescaped name in key after prefix, if key is a
// direct child of prefix.
func nameAfter(key, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return unescape(rest), true
}
