package api

// Shared by DescribeClientQuotas, AlterClientQuotas and the USER / CLIENT
// config resources: quota entities as the wire names them (a list of typed
// components, a null name meaning the default) and as the store keys them
// (the seed's entity paths).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/quota"
)

// Entity component types on the wire.
const (
	entityUser     = "user"
	entityClientID = "client-id"
	entityIP       = "ip"
)

// quotaEntity is one entity: each component present or not, and its name
// (nil for the default entity of that type).
type quotaEntity struct {
	user, client, ip          *string
	hasUser, hasClient, hasIP bool
}

type wireComponent struct {
	typ  string
	name *string
}

// entityFromWire validates the components of an entity as Kafka does.
func entityFromWire(components []wireComponent) (quotaEntity, error) {
	var e quotaEntity
	if len(components) == 0 {
		return e, newError(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	for _, c := range components {
		if c.name != nil && *c.name == "" {
			return e, newError(kerr.InvalidRequest, fmt.Sprintf("Empty %s name is not allowed; use null for the default entity", c.typ))
		}
		var has *bool
		switch c.typ {
		case entityUser:
			has, e.user = &e.hasUser, c.name
		case entityClientID:
			has, e.client = &e.hasClient, c.name
		case entityIP:
			has, e.ip = &e.hasIP, c.name
		default:
			return e, newError(kerr.InvalidRequest, fmt.Sprintf("Unhandled client quota entity type: %s", c.typ))
		}
		if *has {
			return e, newError(kerr.InvalidRequest, fmt.Sprintf("Duplicate %s entity type in client quota entity", c.typ))
		}
		*has = true
	}
	if e.hasIP && (e.hasUser || e.hasClient) {
		return e, newError(kerr.InvalidRequest, "Invalid quota entity combination: ip cannot be combined with user or client-id")
	}
	return e, nil
}

// path is the entity's store path.
func (e quotaEntity) path() string {
	switch {
	case e.hasIP:
		return quota.IPPath(e.ip)
	case e.hasUser && e.hasClient:
		return quota.UserClientPath(e.user, e.client)
	case e.hasUser:
		return quota.UserPath(e.user)
	default:
		return quota.ClientPath(e.client)
	}
}

// entityFromPath reverses path.
func entityFromPath(path string) (quotaEntity, error) {
	var e quotaEntity
	var err error
	e.user, e.client, e.ip, e.hasUser, e.hasClient, e.hasIP, err = quota.ParsePath(path)
	return e, err
}

// components appends the entity's parts to out in Kafka's order (user,
// client-id, ip); callers describing many entities reuse one slice.
func (e quotaEntity) components(out []wireComponent) []wireComponent {
	if e.hasUser {
		out = append(out, wireComponent{entityUser, e.user})
	}
	if e.hasClient {
		out = append(out, wireComponent{entityClientID, e.client})
	}
	if e.hasIP {
		out = append(out, wireComponent{entityIP, e.ip})
	}
	return out
}
