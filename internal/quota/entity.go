package quota

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"kbroker/internal/refusal"
)

// DefaultName is the entity name of a default entity in paths, as in
// Kafka's ZooKeeper layout (ConfigEntityName.Default).
const DefaultName = "<default>"

// Sanitize encodes name as Kafka's Sanitizer does: Java's URLEncoder over
// UTF-8 (letters, digits and ".-*_" kept, space as '+', every other byte
// as %XX), then '*' -> %2A and '+' -> %20. The result has only [A-Za-z0-9._%-]
// so it can never be mistaken for "<default>" or contain '/'.
func Sanitize(name string) string {
	const hex = "0123456789ABCDEF"
	clean := true
	for i := 0; i < len(name); i++ {
		if !keptBySanitizer(name[i]) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) * 3)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if keptBySanitizer(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func keptBySanitizer(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_'
}

// Desanitize reverses Sanitize the way Kafka does (Java's URLDecoder: %XX
// decoded, '+' read as a space).
func Desanitize(s string) (string, error) {
	name, err := url.QueryUnescape(s)
	if err != nil {
		return "", fmt.Errorf("%w: bad percent-encoding in %q", ErrInvalid, s)
	}
	return name, nil
}

func segment(name *string) string {
	if name == nil {
		return DefaultName
	}
	return Sanitize(*name)
}

// UserPath is users/<user>; nil is the default user.
func UserPath(user *string) string { return "users/" + segment(user) }

// UserClientPath is users/<user>/clients/<client>; nil is a default.
func UserClientPath(user, client *string) string {
	return "users/" + segment(user) + "/clients/" + segment(client)
}

// ClientPath is clients/<client>; nil is the default client-id.
func ClientPath(client *string) string { return "clients/" + segment(client) }

// IPPath is ips/<ip>; nil is the default ip. The address is sanitized like
// any name (an IPv6 address's ':' becomes %3A), so every path segment has
// one encoding.
func IPPath(ip *string) string { return "ips/" + segment(ip) }

// Entity component types, as the Kafka quota APIs name them.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Entity is a quota entity as the Kafka APIs name it: which components it
// has, and each one's name (nil for the default entity of that type).
type Entity struct {
	User, ClientID, IP          *string
	HasUser, HasClientID, HasIP bool
}

// Component is one typed part of an entity on the wire.
type Component struct {
	Type string
	Name *string // nil: the default
}

// EntityOf validates the components of an entity as Kafka does: no
// component twice, no empty names, and ip never with user or client-id.
func EntityOf(components []Component) (Entity, error) {
	var e Entity
	if len(components) == 0 {
		return e, invalidEntity("Invalid empty client quota entity")
	}
	for _, c := range components {
		if c.Name != nil && *c.Name == "" {
			return e, invalidEntity(fmt.Sprintf("Empty %s name is not allowed; use null for the default entity", c.Type))
		}
		var has *bool
		switch c.Type {
		case TypeUser:
			has, e.User = &e.HasUser, c.Name
		case TypeClientID:
			has, e.ClientID = &e.HasClientID, c.Name
		case TypeIP:
			has, e.IP = &e.HasIP, c.Name
		default:
			return e, invalidEntity(fmt.Sprintf("Unhandled client quota entity type: %s", c.Type))
		}
		if *has {
			return e, invalidEntity(fmt.Sprintf("Duplicate %s entity type in client quota entity", c.Type))
		}
		*has = true
	}
	if e.HasIP && (e.HasUser || e.HasClientID) {
		return e, invalidEntity("Invalid quota entity combination: ip cannot be combined with user or client-id")
	}
	return e, nil
}

// invalidEntity is an entity refused with Kafka's message for it.
func invalidEntity(msg string) error { return refusal.New(ErrInvalid, msg) }

// Path is the entity's path.
func (e Entity) Path() string {
	switch {
	case e.HasIP:
		return IPPath(e.IP)
	case e.HasUser && e.HasClientID:
		return UserClientPath(e.User, e.ClientID)
	case e.HasUser:
		return UserPath(e.User)
	default:
		return ClientPath(e.ClientID)
	}
}

// AppendComponents appends the entity's parts to out in Kafka's order
// (user, client-id, ip); callers describing many entities reuse one slice.
func (e Entity) AppendComponents(out []Component) []Component {
	if e.HasUser {
		out = append(out, Component{TypeUser, e.User})
	}
	if e.HasClientID {
		out = append(out, Component{TypeClientID, e.ClientID})
	}
	if e.HasIP {
		out = append(out, Component{TypeIP, e.IP})
	}
	return out
}

// ParseEntity reads an entity path (names desanitized). Only the ten
// shapes of the package doc are accepted, and names must be in canonical
// sanitized form (Sanitize(Desanitize(seg)) == seg), so that one entity has
// one path; ip names must be IP addresses in their canonical text form
// (Kafka accepts resolvable host names as well; kbroker does no name
// lookups).
func ParseEntity(path string) (Entity, error) {
	e, err := parseEntity(path)
	if err != nil {
		return Entity{}, err
	}
	name := func(s string, isDefault bool) *string {
		if isDefault {
			return nil
		}
		return &s
	}
	out := Entity{HasUser: e.hasUser, HasClientID: e.hasClient, HasIP: e.hasIP}
	if e.hasUser {
		out.User = name(e.user, e.defUser)
	}
	if e.hasClient {
		out.ClientID = name(e.client, e.defClient)
	}
	if e.hasIP {
		out.IP = name(e.ip, e.defIP)
	}
	return out, nil
}

// entity is a parsed path without pointers (Entity with the default
// marked by a flag), for the compile loop.
type entity struct {
	user, client, ip          string // desanitized; "" when default or absent
	hasUser, hasClient, hasIP bool
	defUser, defClient, defIP bool
}

func parseEntity(path string) (e entity, err error) {
	kind, rest, _ := strings.Cut(path, "/")
	first, second, two := strings.Cut(rest, "/")
	switch {
	case kind == "users" && !two:
		e.hasUser = true
		e.user, e.defUser, err = parseSegment(first)
	case kind == "users" && strings.HasPrefix(second, "clients/") && !strings.Contains(second[len("clients/"):], "/"):
		e.hasUser, e.hasClient = true, true
		if e.user, e.defUser, err = parseSegment(first); err == nil {
			e.client, e.defClient, err = parseSegment(second[len("clients/"):])
		}
	case kind == "clients" && !two:
		e.hasClient = true
		e.client, e.defClient, err = parseSegment(first)
	case kind == "ips" && !two:
		e.hasIP = true
		e.ip, e.defIP, err = parseSegment(first)
		if err == nil && !e.defIP {
			if a, ok := parseIP(e.ip); !ok || a.String() != e.ip {
				err = fmt.Errorf("%q is not an IP address in canonical form", e.ip)
			}
		}
	default:
		err = fmt.Errorf("want users/<u>, users/<u>/clients/<c>, clients/<c> or ips/<ip>")
	}
	if err != nil {
		return entity{}, fmt.Errorf("%w: entity path %q: %s", ErrInvalid, path, err)
	}
	return e, nil
}

func parseSegment(seg string) (name string, isDefault bool, err error) {
	switch {
	case seg == DefaultName:
		return "", true, nil
	case seg == "":
		return "", false, fmt.Errorf("empty name")
	case Sanitize(seg) == seg: // nothing encoded: the common case, no copy
		return seg, false, nil
	}
	name, err = url.QueryUnescape(seg)
	if err != nil {
		return "", false, fmt.Errorf("bad percent-encoding in %q", seg)
	}
	if canon := Sanitize(name); canon != seg {
		return "", false, fmt.Errorf("name %q is not in canonical sanitized form (want %q)", seg, canon)
	}
	return name, false, nil
}

// parseIP reads an address as RecordConnection keys it: IPv4-mapped IPv6
// addresses count as their IPv4 address; zones are not allowed.
func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}
