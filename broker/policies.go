package broker

import (
	"context"
	"time"

	"kbroker/internal/celpolicy"
	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/meta"
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

// watchStoredPolicies puts the rule set stored in the metadata store
// (kbroker.policy.rules, kbroker policies --apply) in effect now and on
// every change of it, unless kbroker.policy.file is set: a file on this
// broker takes precedence. A stored set was compiled before it was stored;
// one that does not compile here (a broker of another version) keeps the
// rules in effect and is logged.
func (b *Broker) watchStoredPolicies(e *celpolicy.Engine) {
	log := b.loggers.Logger("kbroker.policy")
	fromFile := b.cfg.Props["kbroker.policy.file"] != ""
	load := func(snap *meta.Snapshot) {
		text, set := b.configs.BrokerProps(snap)[config.StoredPolicySource]
		if fromFile {
			if set {
				log.Warn("kbroker.policy.rules is stored in the cluster but kbroker.policy.file takes precedence on this broker", "file", b.cfg.Props["kbroker.policy.file"])
			}
			return
		}
		if !set {
			if e.Rules() != nil {
				log.Info("stored policy rules removed")
			}
			e.Swap(nil)
			return
		}
		rules, err := celpolicy.Compile(config.StoredPolicySource, []byte(text))
		if err != nil {
			log.Error("stored policy rules do not compile; the rules in effect stay", "err", err)
			return
		}
		e.Swap(rules)
		log.Info("stored policy rules loaded", "rules", len(rules.Rules))
	}
	b.configs.Register(config.ApplyPolicies, dynconfig.Applier{Apply: func(ch dynconfig.Change) { load(ch.Snap) }})
	if _, set := b.configs.BrokerProps(b.store.Snapshot())[config.StoredPolicySource]; set {
		load(b.store.Snapshot())
	}
}
