// Package controller holds the duties of the cluster's controller: placing
// partitions on brokers, validating and creating topics and partitions,
// and deleting topics; later, leader election and ISR commits. Today every
// broker carries them out itself (the metadata store's transactions
// serialize the writes; internal/cluster elects the controller that
// clients are told of).
//
// Its refusals carry Kafka's messages and wrap this package's sentinels
// (errors.go); the API layer maps those to error codes.
package controller

import (
	"log/slog"

	"kbroker/internal/cluster"
	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
	"kbroker/policy"
)

// Controller carries out the controller's duties for one broker.
type Controller struct {
	broker  *config.Broker
	store   *meta.Store
	configs *dynconfig.Configs
	policy  policy.CreateTopic
	log     *slog.Logger
}

// New is the controller of broker over store. configs is the broker's
// dynamic configuration, through which the topic configs the controller
// acts on are resolved. createTopicPolicy is the embedding program's
// create-topic policy; nil allows every topic.
func New(broker *config.Broker, store *meta.Store, configs *dynconfig.Configs, createTopicPolicy policy.CreateTopic, log *slog.Logger) *Controller {
	return &Controller{broker: broker, store: store, configs: configs, policy: createTopicPolicy, log: log}
}

// topicConfig is topic's effective value of a topic config in snap,
// resolved as the data path resolves it (the produce path's
// min.insync.replicas): the topic's override, then this broker's dynamic
// config, the cluster-wide dynamic default, server.properties, Kafka's
// default. Kafka's controller resolves them in the same order
// (ConfigurationControlManager.getTopicConfig), with itself as the node.
func (c *Controller) topicConfig(snap *meta.Snapshot, topic, name string) string {
	return config.TopicValue(name, c.configs.Layers(snap, topic))
}

// liveBrokers is the brokers partitions can be placed on.
func (c *Controller) liveBrokers(snap *meta.Snapshot) map[int32]*meta.Broker {
	return cluster.LiveBrokers(snap, c.broker)
}
