package api

// AlterUserScramCredentials (key 51), v0 (KIP-554).
//
// Deletes and upserts SCRAM credentials. The client chooses the salt and
// sends SaltedPassword = Hi(password, salt, iterations); the broker derives
// StoredKey and ServerKey and stores only those (scram/<user>/<mechanism>).
// One result per user, in order of first mention; each user's changes are
// one store transaction (all or none). Errors, in Kafka's order: the same
// (user, mechanism) twice → DUPLICATE_RESOURCE; empty name or iterations
// outside [4096, 16384] or an empty salt/salted password →
// UNACCEPTABLE_CREDENTIAL; unknown mechanism → UNSUPPORTED_SASL_MECHANISM;
// deleting a credential that does not exist → RESOURCE_NOT_FOUND. Needs
// ALTER on the cluster (every result CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/scram"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserSCRAMCredentials, catchesUp(), clusterACL(auth.OpAlter))
}

func handleAlterUserSCRAMCredentials(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	deletions := make([]scram.Deletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		deletions = append(deletions, scram.Deletion{User: d.Name, Mechanism: d.Mechanism})
	}
	upsertions := make([]scram.Upsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		upsertions = append(upsertions, scram.Upsertion{User: u.Name, Mechanism: u.Mechanism,
			Iterations: int(u.Iterations), Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	plan := s.scram.Plan(deletions, upsertions)
	allowed := s.clusterAllowed(c, kmsg.AlterUserSCRAMCredentials)
	by := scram.Requester{Principal: c.Principal, Client: c.Remote.String()}
	for _, user := range plan {
		err := errClusterAuth
		if allowed {
			err = s.scram.Apply(ctx, by, user)
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user.User
		res.ErrorCode, res.ErrorMessage = errorCode(err)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
