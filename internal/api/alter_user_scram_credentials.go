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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserSCRAMCredentials, catchesUp(), clusterACL(auth.OpAlter))
}

func handleAlterUserSCRAMCredentials(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string
	changes := map[string]*meta.ScramChange{}
	errs := map[string]error{}
	type pair struct {
		user string
		mech int8
	}
	seen := map[pair]int{}
	note := func(user string, mech int8) *meta.ScramChange {
		seen[pair{user, mech}]++
		if changes[user] == nil {
			users = append(users, user)
			changes[user] = &meta.ScramChange{}
		}
		return changes[user]
	}
	for _, d := range req.Deletions {
		ch := note(d.Name, d.Mechanism)
		if errs[d.Name] == nil {
			if err := auth.ValidateDeletion(d.Name, d.Mechanism); err != nil {
				errs[d.Name] = err
				continue
			}
			ch.Deletions = append(ch.Deletions, auth.MechanismName(d.Mechanism))
		}
	}
	for _, u := range req.Upsertions {
		ch := note(u.Name, u.Mechanism)
		if errs[u.Name] != nil {
			continue
		}
		if err := auth.ValidateUpsertion(u.Name, u.Mechanism, int(u.Iterations)); err != nil {
			errs[u.Name] = err
			continue
		}
		cred, err := auth.FromSaltedPassword(auth.MechanismName(u.Mechanism), u.Salt, u.SaltedPassword, int(u.Iterations))
		if err != nil {
			errs[u.Name] = newError(kerr.UnacceptableCredential, err.Error())
			continue
		}
		ch.Upserts = append(ch.Upserts, cred)
	}
	for p, n := range seen {
		if n > 1 {
			errs[p.user] = newError(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	allowed := s.clusterAllowed(c, kmsg.AlterUserSCRAMCredentials)
	for _, user := range users {
		err := errs[user]
		switch {
		case !allowed:
			err = errClusterAuth
		case err == nil:
			if _, err = s.Store.AlterScram(ctx, user, *changes[user]); err == nil {
				s.auditScram(c, user, changes[user])
			}
		}
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		res.ErrorCode, res.ErrorMessage = errorCode(err)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// auditScram logs an applied credential change: who, which user, which
// mechanisms; never salts, keys or passwords.
func (s *Server) auditScram(c *wire.Conn, user string, ch *meta.ScramChange) {
	for _, mech := range ch.Deletions {
		s.Audit.Info("scram credential deleted", "principal", c.Principal, "client", c.Remote.String(), "user", user, "mechanism", mech)
	}
	for _, cred := range ch.Upserts {
		s.Audit.Info("scram credential set", "principal", c.Principal, "client", c.Remote.String(), "user", user, "mechanism", cred.Mechanism, "iterations", cred.Iterations)
	}
}
