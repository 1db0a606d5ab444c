package broker

import (
	"context"
	"time"

	"kbroker/internal/celpolicy"
	"kbroker/policy"
)

// WithCreatePartitionsPolicy vetoes partition increases (kbroker; Kafka
// has no such plugin).
func WithCreatePartitionsPolicy(p policy.CreatePartitions) Option {
	return func(b *Broker) { b.partitionsPolicy = p }
}

// WithAlterClientQuotasPolicy vetoes client quota changes (kbroker; Kafka
// has no such plugin).
func WithAlterClientQuotasPolicy(p policy.AlterClientQuotas) Option {
	return func(b *Broker) { b.quotaPolicy = p }
}

// policyPollInterval is how often kbroker.policy.file is checked for a
// change.
var policyPollInterval = time.Second

// startPolicies builds the policy engine every admin change passes: the
// operator's CEL rules (kbroker.policy.file), then the embedder's Go
// policies. A rule file that does not compile stops the broker.
func (b *Broker) startPolicies(ctx context.Context) (*celpolicy.Engine, error) {
	e := celpolicy.New()
	e.AlterConfig, e.CreateTopic = b.alterPolicy, b.createPolicy
	e.CreatePartitions, e.AlterClientQuotas = b.partitionsPolicy, b.quotaPolicy
	audit := b.loggers.Logger("kbroker.audit")
	rejections := b.metrics.PolicyRejections
	e.OnReject = func(r celpolicy.Rejection) {
		rejections.WithLabelValues(r.Rule, r.Operation).Inc()
		audit.Info("policy rejected", "principal", r.Principal, "client", r.Client, "operation", r.Operation,
			"resource", r.Resource, "rule", r.Rule, "message", r.Message)
	}
	path := b.cfg.Props["kbroker.policy.file"]
	if path == "" {
		return e, nil
	}
	set, err := celpolicy.LoadFile(path)
	if err != nil {
		return nil, err
	}
	e.Swap(set)
	log := b.loggers.Logger("kbroker.policy")
	log.Info("policy rules loaded", "file", path, "rules", len(set.Rules))
	go e.WatchFile(ctx, path, policyPollInterval, log)
	return e, nil
}
