package dynconfig

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/policy"
)

// auditChange logs every key an applied change altered, once, with who
// changed it; sensitive values (and keys outside the catalog) are masked.
func (c *Configs) auditChange(a Alteration, before, after map[string]string) {
	catalog, _ := catalogOf(a.Resource.Type)
	for _, k := range ChangedKeys(before, after) {
		old, hadOld := before[k]
		cur, hasNew := after[k]
		if d := catalog.Lookup(k); d == nil || d.Sensitive() {
			old, cur = mask(old, hadOld), mask(cur, hasNew)
		}
		c.audit.Info("config changed", "principal", a.By.Principal, "client", a.By.Client,
			"resource_type", ResourceTypeName(a.Resource.Type), "resource", a.Resource.Name, "key", k,
			"old", OrNull(old, hadOld), "new", OrNull(cur, hasNew))
	}
}

func mask(v string, ok bool) string {
	if !ok {
		return v
	}
	return "[hidden]"
}

// OrNull is v, or "null" when there is no value: how the audit log writes
// an absent value.
func OrNull(v string, ok bool) string {
	if !ok {
		return "null"
	}
	return v
}

// ResourceTypeName is the audit log's name of a config resource type.
func ResourceTypeName(t policy.ResourceType) string {
	if t == policy.Group {
		return "group" // Kafka's ConfigResource.Type.GROUP; kmsg spells it GROUP_CONFIG
	}
	return strings.ToLower(kmsg.ConfigResourceType(t).String())
}
