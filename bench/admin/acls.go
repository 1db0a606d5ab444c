package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ACLLoad is the ACL set of the authorizer benchmark: n ACLs loaded by an
// admin (a super user, over SCRAM-SHA-256), of which a few let the
// benchmark's producer, User:ANONYMOUS on the PLAINTEXT listener, create
// and write Topic — so every produce request is authorized against a large
// ACL set rather than waved through as a super user's.
type ACLLoad struct {
	SASLAddr, User, Password string
	N, Batch                 int
	Topic                    string
}

// LoadACLs creates the ACLs with CreateAcls requests of Batch creations and
// fails on any per-ACL error.
func LoadACLs(ctx context.Context, l ACLLoad) error {
	cl, err := newClient(l.SASLAddr, "kbench-admin",
		kgo.SASL(scram.Auth{User: l.User, Pass: l.Password}.AsSha256Mechanism()))
	if err != nil {
		return err
	}
	defer closeBounded(cl)
	all := append(producerACLs(l.Topic), fillerACLs(l.N-2)...)
	for i := 0; i < len(all); i += l.Batch {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Creations = all[i:min(len(all), i+l.Batch)]
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		cancel()
		if err != nil {
			return fmt.Errorf("CreateAcls at ACL %d: %w", i, err)
		}
		for _, r := range resp.Results {
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
				return fmt.Errorf("CreateAcls at ACL %d: %w", i, err)
			}
		}
	}
	return nil
}

func aclCreation(principal string, rt kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.Principal, c.Host = principal, "*"
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pattern
	c.Operation, c.PermissionType = op, perm
	return c
}

// producerACLs let User:ANONYMOUS create the topic and produce to it
// (WRITE also authorizes Metadata's DESCRIBE and, per KIP-679, idempotent
// producers).
func producerACLs(topic string) []kmsg.CreateACLsRequestCreation {
	const who = "User:ANONYMOUS"
	return []kmsg.CreateACLsRequestCreation{
		aclCreation(who, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationCreate, kmsg.ACLPermissionTypeAllow),
		aclCreation(who, kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
	}
}

// fillerACLs are n ACLs of the shapes a busy cluster holds: literal and
// prefixed topic and group ACLs of 500 users, wildcard-principal ones, some
// DENYs, and some for User:ANONYMOUS itself on other topics, so the
// producer's own principal has many ACLs to look through.
func fillerACLs(n int) []kmsg.CreateACLsRequestCreation {
	ops := []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}
	out := make([]kmsg.CreateACLsRequestCreation, 0, n)
	for i := range n {
		principal := fmt.Sprintf("User:user-%d", i%500)
		switch {
		case i%50 == 0:
			principal = "User:ANONYMOUS"
		case i%97 == 0:
			principal = "User:*"
		}
		perm := kmsg.ACLPermissionTypeAllow
		if i%13 == 0 {
			perm = kmsg.ACLPermissionTypeDeny
		}
		op := ops[i%len(ops)]
		switch i % 4 {
		case 0, 1:
			out = append(out, aclCreation(principal, kmsg.ACLResourceTypeTopic, fmt.Sprintf("topic-%d", i), kmsg.ACLResourcePatternTypeLiteral, op, perm))
		case 2:
			out = append(out, aclCreation(principal, kmsg.ACLResourceTypeTopic, fmt.Sprintf("team-%d-", i%200), kmsg.ACLResourcePatternTypePrefixed, op, perm))
		default:
			out = append(out, aclCreation(principal, kmsg.ACLResourceTypeGroup, fmt.Sprintf("group-%d", i), kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, perm))
		}
	}
	return out
}
