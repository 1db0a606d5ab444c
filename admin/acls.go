package admin

// ACLs: CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), KIP-140
// with KIP-290's pattern types.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL enums are kmsg's (their String, MarshalText and Parse functions use
// Kafka's names: TOPIC, PREFIXED, READ, ALLOW…).
type (
	// ACLResourceType is what an ACL protects (TOPIC, GROUP, CLUSTER…).
	ACLResourceType = kmsg.ACLResourceType
	// ACLPatternType is how the resource name matches (LITERAL, PREFIXED;
	// ANY and MATCH in filters).
	ACLPatternType = kmsg.ACLResourcePatternType
	// ACLOperation is the operation allowed or denied (READ, WRITE, ALL…).
	ACLOperation = kmsg.ACLOperation
	// ACLPermission is ALLOW or DENY (ANY in filters).
	ACLPermission = kmsg.ACLPermissionType
)

// ClusterName is the one name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// ACLBinding is one ACL: a resource pattern and an access control entry.
type ACLBinding struct {
	ResourceType ACLResourceType `json:"resource_type"`
	ResourceName string          `json:"resource_name"`
	PatternType  ACLPatternType  `json:"pattern_type"`
	Principal    string          `json:"principal"` // "User:alice", "User:*"
	Host         string          `json:"host"`      // "*" for any host
	Operation    ACLOperation    `json:"operation"`
	Permission   ACLPermission   `json:"permission"`
}

// Pattern reads as Kafka's ResourcePattern.toString.
func (b ACLBinding) Pattern() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", b.ResourceType, b.ResourceName, b.PatternType)
}

// Entry reads as Kafka's AccessControlEntry.toString.
func (b ACLBinding) Entry() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", b.Principal, b.Host, b.Operation, b.Permission)
}

// String is the pattern and the entry.
func (b ACLBinding) String() string { return b.Pattern() + " " + b.Entry() }

// ACLFilter selects ACLs. Nil strings and the ANY enum values match
// everything; PatternType MATCH selects every ACL that applies to the
// literal ResourceName (literal, wildcard and prefixed ones).
type ACLFilter struct {
	ResourceType ACLResourceType
	ResourceName *string
	PatternType  ACLPatternType
	Principal    *string
	Host         *string
	Operation    ACLOperation
	Permission   ACLPermission
}

// AnyACL is the filter that matches every ACL.
func AnyACL() ACLFilter {
	return ACLFilter{
		ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny,
	}
}

// String describes the filter for error messages.
func (f ACLFilter) String() string {
	s := func(p *string) string {
		if p == nil {
			return "<any>"
		}
		return *p
	}
	return fmt.Sprintf("ACL filter (resourceType=%s, name=%s, patternType=%s, principal=%s, host=%s, operation=%s, permissionType=%s)",
		f.ResourceType, s(f.ResourceName), f.PatternType, s(f.Principal), s(f.Host), f.Operation, f.Permission)
}

// ACLResult is the outcome of creating one binding.
type ACLResult struct {
	Binding ACLBinding
	// Err is this binding's error (an *Error), nil on success.
	Err error
}

// ACLResults holds one result per binding, in request order.
type ACLResults []ACLResult

// All joins the errors of the bindings that failed; nil when all succeeded.
func (rs ACLResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// CreateACLs creates bindings (creating an existing one succeeds).
func (c *Client) CreateACLs(ctx context.Context, bindings []ACLBinding) (ACLResults, error) {
	results := make(ACLResults, len(bindings))
	if len(bindings) == 0 {
		return results, nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for i, b := range bindings {
		results[i].Binding = b
		rc := kmsg.NewCreateACLsRequestCreation()
		rc.ResourceType, rc.ResourceName, rc.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		rc.Principal, rc.Host, rc.Operation, rc.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		req.Creations = append(req.Creations, rc)
	}
	resp, err := request[*kmsg.CreateACLsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for i, r := range resp.Results {
		if i < len(results) {
			results[i].Err = codeError(results[i].Binding.String(), r.ErrorCode, r.ErrorMessage)
		}
	}
	return results, nil
}

// DescribeACLs lists the bindings matching filter.
func (c *Client) DescribeACLs(ctx context.Context, filter ACLFilter) ([]ACLBinding, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = filter.ResourceType, filter.ResourceName, filter.PatternType
	req.Principal, req.Host, req.Operation, req.PermissionType = filter.Principal, filter.Host, filter.Operation, filter.Permission
	resp, err := request[*kmsg.DescribeACLsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []ACLBinding
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, ACLBinding{
				ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
				Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType,
			})
		}
	}
	return out, nil
}

// DeleteACLsResult is what one filter deleted.
type DeleteACLsResult struct {
	Filter  ACLFilter
	Deleted []ACLBinding
	// Err is this filter's error (an *Error), nil on success.
	Err error
}

// DeleteACLsResults holds one result per filter, in request order.
type DeleteACLsResults []DeleteACLsResult

// All joins the errors of the filters that failed; nil when all succeeded.
func (rs DeleteACLsResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// DeleteACLs deletes every binding matching each filter.
func (c *Client) DeleteACLs(ctx context.Context, filters []ACLFilter) (DeleteACLsResults, error) {
	results := make(DeleteACLsResults, len(filters))
	if len(filters) == 0 {
		return results, nil
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for i, f := range filters {
		results[i].Filter = f
		rf := kmsg.NewDeleteACLsRequestFilter()
		rf.ResourceType, rf.ResourceName, rf.ResourcePatternType = f.ResourceType, f.ResourceName, f.PatternType
		rf.Principal, rf.Host, rf.Operation, rf.PermissionType = f.Principal, f.Host, f.Operation, f.Permission
		req.Filters = append(req.Filters, rf)
	}
	resp, err := request[*kmsg.DeleteACLsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for i, r := range resp.Results {
		if i >= len(results) {
			break
		}
		results[i].Err = codeError(results[i].Filter.String(), r.ErrorCode, r.ErrorMessage)
		for _, m := range r.MatchingACLs {
			b := ACLBinding{
				ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
				Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType,
			}
			if err := codeError(b.String(), m.ErrorCode, m.ErrorMessage); err != nil {
				results[i].Err = joinErrs([]error{results[i].Err, err})
				continue
			}
			results[i].Deleted = append(results[i].Deleted, b)
		}
	}
	return results, nil
}
