package api

// Shared by DescribeAcls, CreateAcls and DeleteAcls: ACL filters as the
// wire sends them, and the audit line of an ACL change.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/wire"
)

// aclFilter converts a wire filter; v0 requests have no pattern type and
// mean LITERAL.
func aclFilter(version int16, rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) auth.Filter {
	pattern := auth.PatternType(pt)
	if version == 0 {
		pattern = auth.PatternLiteral
	}
	return auth.Filter{ResourceType: auth.ResourceType(rt), ResourceName: name, PatternType: pattern,
		Principal: principal, Host: host, Operation: auth.Operation(op), Permission: auth.Permission(perm)}
}

// auditACL logs an applied ACL change with who made it.
func (s *Server) auditACL(c *wire.Conn, what string, a auth.ACL) {
	s.Audit.Info(what, "principal", c.Principal, "client", c.Remote.String(), "acl", a.String())
}
