package admin

// Client quotas: DescribeClientQuotas (48) and AlterClientQuotas (49),
// KIP-546.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Quota entity types.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// QuotaComponent is one part of a quota entity: a type and a name, where a
// nil name is the default entity of that type.
type QuotaComponent struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// QuotaEntity is what quotas are set on: a user, a client-id, a (user,
// client-id) pair or an IP, each part named or the default.
type QuotaEntity []QuotaComponent

// UserEntity is a user's quotas; "" is the default user.
func UserEntity(user string) QuotaEntity { return QuotaEntity{component(EntityUser, user)} }

// ClientEntity is a client-id's quotas; "" is the default client-id.
func ClientEntity(client string) QuotaEntity { return QuotaEntity{component(EntityClientID, client)} }

// UserClientEntity is a (user, client-id) pair's quotas; "" is that part's
// default.
func UserClientEntity(user, client string) QuotaEntity {
	return QuotaEntity{component(EntityUser, user), component(EntityClientID, client)}
}

// IPEntity is an IP's connection-rate quota; "" is the default IP.
func IPEntity(ip string) QuotaEntity { return QuotaEntity{component(EntityIP, ip)} }

func component(typ, name string) QuotaComponent {
	if name == "" {
		return QuotaComponent{Type: typ}
	}
	return QuotaComponent{Type: typ, Name: &name}
}

// NameOrDefault is the component's name, or "" for the default.
func (c QuotaComponent) NameOrDefault() string {
	if c.Name == nil {
		return ""
	}
	return *c.Name
}

// entityWords are kafka-configs.sh's words for the entity types.
var entityWords = map[string]string{EntityUser: "user-principal", EntityClientID: "client-id", EntityIP: "ip"}

// String reads as kafka-configs.sh names entities: "user-principal 'u1',
// client-id 'c1'" or "the default client-id".
func (e QuotaEntity) String() string {
	parts := make([]string, 0, len(e))
	for _, c := range e.sorted() {
		word := entityWords[c.Type]
		if word == "" {
			word = c.Type
		}
		if c.Name == nil {
			parts = append(parts, "the default "+word)
		} else {
			parts = append(parts, fmt.Sprintf("%s '%s'", word, *c.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// sorted puts user before client-id (Kafka's order) and otherwise sorts by type.
func (e QuotaEntity) sorted() QuotaEntity {
	rank := func(t string) string {
		switch t {
		case EntityUser:
			return "0"
		case EntityClientID:
			return "1"
		}
		return "2" + t
	}
	s := slices.Clone(e)
	slices.SortFunc(s, func(a, b QuotaComponent) int { return strings.Compare(rank(a.Type), rank(b.Type)) })
	return s
}

// Equal reports whether two entities have the same components in any order.
func (e QuotaEntity) Equal(o QuotaEntity) bool {
	if len(e) != len(o) {
		return false
	}
	a, b := e.sorted(), o.sorted()
	for i := range a {
		if a[i].Type != b[i].Type || (a[i].Name == nil) != (b[i].Name == nil) ||
			(a[i].Name != nil && *a[i].Name != *b[i].Name) {
			return false
		}
	}
	return true
}

// MatchType says how a filter component matches entity names.
type MatchType int8

// Filter match types (the wire codes).
const (
	MatchExact   MatchType = 0 // that name
	MatchDefault MatchType = 1 // the default entity
	MatchAny     MatchType = 2 // any name; Kafka includes the default
)

// QuotaFilterComponent matches one entity type.
type QuotaFilterComponent struct {
	EntityType string
	Match      MatchType
	Name       string // for MatchExact
}

// QuotaFilter selects quota entities. With no components and Strict false
// it matches every entity; with Strict, entities must have exactly the
// filtered types.
type QuotaFilter struct {
	Components []QuotaFilterComponent
	Strict     bool
}

// QuotaEntry is one entity's quota overrides.
type QuotaEntry struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// DescribeClientQuotas lists the entities matching filter with their
// overrides, sorted by entity.
func (c *Client) DescribeClientQuotas(ctx context.Context, filter QuotaFilter) ([]QuotaEntry, error) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = filter.Strict
	for _, fc := range filter.Components {
		rc := kmsg.NewDescribeClientQuotasRequestComponent()
		rc.EntityType, rc.MatchType = fc.EntityType, kmsg.QuotasMatchType(fc.Match)
		if fc.Match == MatchExact {
			rc.Match = kmsg.StringPtr(fc.Name)
		}
		req.Components = append(req.Components, rc)
	}
	resp, err := request[*kmsg.DescribeClientQuotasResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []QuotaEntry
	for _, e := range resp.Entries {
		q := QuotaEntry{Values: map[string]float64{}}
		for _, ec := range e.Entity {
			q.Entity = append(q.Entity, QuotaComponent{Type: ec.Type, Name: ec.Name})
		}
		q.Entity = q.Entity.sorted()
		for _, v := range e.Values {
			q.Values[v.Key] = v.Value
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int { return strings.Compare(a.Entity.String(), b.Entity.String()) })
	return out, nil
}

// QuotaOp sets (or with Remove, removes) one quota key.
type QuotaOp struct {
	Key    string  `json:"key"`
	Value  float64 `json:"value"`
	Remove bool    `json:"remove,omitempty"`
}

// QuotaAlteration is the changes to one entity.
type QuotaAlteration struct {
	Entity QuotaEntity
	Ops    []QuotaOp
}

// QuotaResult is the outcome for one entity.
type QuotaResult struct {
	Entity QuotaEntity
	// Err is this entity's error (an *Error), nil on success.
	Err error
}

// AlterQuotasResults holds one result per entity, in request order.
type AlterQuotasResults []QuotaResult

// All joins the errors of the entities that failed; nil when all succeeded.
func (rs AlterQuotasResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// AlterClientQuotas applies the alterations; each entity's changes apply
// all or none, entities are independent.
func (c *Client) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration, validateOnly bool) (AlterQuotasResults, error) {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	results := make(AlterQuotasResults, len(alts))
	for i, a := range alts {
		results[i].Entity = a.Entity
		re := kmsg.NewAlterClientQuotasRequestEntry()
		for _, ec := range a.Entity {
			rc := kmsg.NewAlterClientQuotasRequestEntryEntity()
			rc.Type, rc.Name = ec.Type, ec.Name
			re.Entity = append(re.Entity, rc)
		}
		for _, op := range a.Ops {
			ro := kmsg.NewAlterClientQuotasRequestEntryOp()
			ro.Key, ro.Value, ro.Remove = op.Key, op.Value, op.Remove
			re.Ops = append(re.Ops, ro)
		}
		req.Entries = append(req.Entries, re)
	}
	if len(alts) == 0 {
		return results, nil
	}
	resp, err := request[*kmsg.AlterClientQuotasResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, re := range resp.Entries {
		var ent QuotaEntity
		for _, ec := range re.Entity {
			ent = append(ent, QuotaComponent{Type: ec.Type, Name: ec.Name})
		}
		for i := range results {
			if results[i].Entity.Equal(ent) {
				results[i].Err = codeError(ent.String(), re.ErrorCode, re.ErrorMessage)
			}
		}
	}
	return results, nil
}

// RemoveClientQuotas removes keys from one entity's quotas.
func (c *Client) RemoveClientQuotas(ctx context.Context, entity QuotaEntity, keys ...string) error {
	alt := QuotaAlteration{Entity: entity}
	for _, k := range keys {
		alt.Ops = append(alt.Ops, QuotaOp{Key: k, Remove: true})
	}
	rs, err := c.AlterClientQuotas(ctx, []QuotaAlteration{alt}, false)
	if err != nil {
		return err
	}
	return rs.All()
}
