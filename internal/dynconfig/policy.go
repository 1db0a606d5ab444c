package dynconfig

import (
	"kbroker/internal/config"
	"kbroker/policy"
)

// policyRequest is what the alter-config policy sees of a: the changed
// keys, the configs the resource would have after the change and who asks.
func (c *Configs) policyRequest(a Alteration, changed map[string]*string, next map[string]string) policy.AlterConfigRequest {
	return policy.AlterConfigRequest{
		Resource:  a.Resource,
		Configs:   changed,
		Resulting: c.resulting(a.Resource, next),
		Requester: policy.Requester{Principal: a.By.Principal, ClientAddress: a.By.Client, Listener: a.By.Listener},
	}
}

// resulting is the resource's configs once next is stored: a topic's every
// config with its effective value (the snapshot's broker-level values
// under next's overrides), any other resource's overrides. Sensitive values
// are left out: a policy has no need to read a password.
func (c *Configs) resulting(r policy.ConfigResource, next map[string]string) map[string]string {
	out := make(map[string]string, len(next))
	if r.Type == policy.Topic {
		for _, e := range c.TopicBase(c.store.Snapshot()) {
			if e.Entry.Value != nil && !e.Sensitive {
				out[e.Name] = *e.Entry.Value
			}
		}
	}
	catalog := config.Topics
	if r.Type == policy.Broker {
		catalog = config.Brokers
	}
	for k, v := range next {
		if d := catalog.Lookup(k); d != nil && d.Sensitive() {
			continue
		}
		out[k] = v
	}
	return out
}
