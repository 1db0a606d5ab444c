package api

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/quota"
	"kbroker/internal/wire"
	"kbroker/policy"
)

// policyRequester is who sent c's requests, as a policy sees it.
func policyRequester(c *wire.Conn) policy.Requester {
	return policy.Requester{Principal: c.Principal, ClientAddress: c.Remote.String(), Listener: c.Listener}
}

// checkPartitionsPolicy runs the create-partitions policy on an increase
// the broker's own checks passed; a refusal is POLICY_VIOLATION for the
// topic alone.
func (s *Server) checkPartitionsPolicy(c *wire.Conn, topic string, count, added int32, assignment [][]int32) error {
	if s.CreatePartitionsPolicy == nil {
		return nil
	}
	err := s.CreatePartitionsPolicy.ValidateCreatePartitions(policy.CreatePartitionsRequest{
		Topic: topic, CurrentPartitions: count - added, NewPartitions: count,
		Assignments: assignment, Requester: policyRequester(c),
	})
	if err != nil {
		return newError(kerr.PolicyViolation, err.Error())
	}
	return nil
}

// checkQuotaPolicy runs the client-quota policy on one entity's change
// that the broker's own checks passed.
func (s *Server) checkQuotaPolicy(c *wire.Conn, path string, ops []quotaOp, next map[string]float64) error {
	if s.ClientQuotaPolicy == nil {
		return nil
	}
	e, err := quota.ParseEntity(path)
	if err != nil {
		return err
	}
	entity := map[string]string{}
	for _, comp := range e.AppendComponents(nil) {
		name := "<default>"
		if comp.Name != nil {
			name = *comp.Name
		}
		entity[comp.Type] = name
	}
	changes := make(map[string]*float64, len(ops))
	for _, op := range ops {
		if op.remove {
			changes[op.key] = nil
		} else {
			v := op.value
			changes[op.key] = &v
		}
	}
	err = s.ClientQuotaPolicy.ValidateAlterClientQuotas(policy.ClientQuotaRequest{
		Entity: entity, Changes: changes, Resulting: next, Requester: policyRequester(c),
	})
	if err != nil {
		return newError(kerr.PolicyViolation, err.Error())
	}
	return nil
}
