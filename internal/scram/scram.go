// Package scram is the SCRAM credential service behind
// AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554):
// which users a request names, Kafka's validation order, deriving the
// stored credential from the client's salted password, the not-found and
// duplicate rules, and the audit line of every applied change. It lives
// apart from internal/auth because it writes through internal/meta, which
// itself imports auth.
package scram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/refusal"
)

// Refusals of a credential request (the API layer maps each to a Kafka
// error code).
var (
	// ErrDuplicateUser: a request names the same (user, mechanism) twice in
	// an alteration, or the same user twice in a description.
	ErrDuplicateUser = errors.New("duplicate user")
	// ErrUnacceptableCredential: a salt or salted password the broker cannot
	// derive a credential from.
	ErrUnacceptableCredential = errors.New("unacceptable credential")
)

// Service answers credential requests over the metadata store.
type Service struct {
	store *meta.Store
	audit *slog.Logger
}

// New is the service over store, logging applied changes to audit.
func New(store *meta.Store, audit *slog.Logger) *Service {
	return &Service{store: store, audit: audit}
}

// Requester is who asked for a change, for the audit log.
type Requester struct {
	Principal string
	Client    string // remote address
}

// Deletion removes one user's credential for a mechanism (wire code).
type Deletion struct {
	User      string
	Mechanism int8
}

// Upsertion sets one user's credential for a mechanism (wire code) from
// the salt and SaltedPassword = Hi(password, salt, iterations) the client
// chose.
type Upsertion struct {
	User           string
	Mechanism      int8
	Iterations     int
	Salt           []byte
	SaltedPassword []byte
}

// UserChange is one user's share of an alteration: the change to apply,
// or why it is refused.
type UserChange struct {
	User   string
	Change meta.ScramChange
	Err    error
}

// Plan validates an alteration and groups it per user, in order of first
// mention, checking in Kafka's order: empty name, unknown mechanism,
// iterations out of range, a credential that cannot be derived; then the
// same (user, mechanism) twice refuses that user whatever else it had.
// Nothing is written.
func (s *Service) Plan(deletions []Deletion, upsertions []Upsertion) []UserChange {
	var plan []UserChange
	index := map[string]int{}
	type pair struct {
		user string
		mech int8
	}
	seen := map[pair]int{}
	note := func(user string, mech int8) *UserChange {
		seen[pair{user, mech}]++
		i, ok := index[user]
		if !ok {
			i = len(plan)
			index[user] = i
			plan = append(plan, UserChange{User: user})
		}
		return &plan[i]
	}
	for _, d := range deletions {
		u := note(d.User, d.Mechanism)
		if u.Err != nil {
			continue
		}
		if err := auth.ValidateDeletion(d.User, d.Mechanism); err != nil {
			u.Err = err
			continue
		}
		u.Change.Deletions = append(u.Change.Deletions, auth.MechanismName(d.Mechanism))
	}
	for _, up := range upsertions {
		u := note(up.User, up.Mechanism)
		if u.Err != nil {
			continue
		}
		if err := auth.ValidateUpsertion(up.User, up.Mechanism, up.Iterations); err != nil {
			u.Err = err
			continue
		}
		cred, err := auth.FromSaltedPassword(auth.MechanismName(up.Mechanism), up.Salt, up.SaltedPassword, up.Iterations)
		if err != nil {
			u.Err = refusal.New(ErrUnacceptableCredential, err.Error())
			continue
		}
		u.Change.Upserts = append(u.Change.Upserts, cred)
	}
	for p, n := range seen {
		if n > 1 {
			plan[index[p.user]].Err = refusal.New(ErrDuplicateUser, "A user credential cannot be altered twice in the same request")
		}
	}
	return plan
}

// Apply writes one planned user's change in one store transaction (all of
// it or none) and logs it; deleting a credential that does not exist
// fails with meta.ErrNoCredential. A refused user returns its refusal.
func (s *Service) Apply(ctx context.Context, by Requester, u UserChange) error {
	if u.Err != nil {
		return u.Err
	}
	if _, err := s.store.AlterScram(ctx, u.User, u.Change); err != nil {
		return err
	}
	s.auditChange(by, u.User, u.Change)
	return nil
}

// auditChange logs an applied credential change: who, which user, which
// mechanisms; never salts, keys or passwords.
func (s *Service) auditChange(by Requester, user string, ch meta.ScramChange) {
	for _, mech := range ch.Deletions {
		s.audit.Info("scram credential deleted", "principal", by.Principal, "client", by.Client, "user", user, "mechanism", mech)
	}
	for _, cred := range ch.Upserts {
		s.audit.Info("scram credential set", "principal", by.Principal, "client", by.Client, "user", user, "mechanism", cred.Mechanism, "iterations", cred.Iterations)
	}
}

// Mechanism is one credential a user has, without its salt or keys.
type Mechanism struct {
	Code       int8 // wire code
	Iterations int
}

// Description is one user's credentials, or why they are not described.
type Description struct {
	User       string
	Mechanisms []Mechanism
	Err        error
}

// Describe lists the named users' credentials, in request order; no names
// means every user with a credential, by name. A named user without any
// credential is refused with meta.ErrNoCredential, a user named twice with
// ErrDuplicateUser (for every mention).
func (s *Service) Describe(users []string) []Description {
	snap := s.store.Snapshot()
	creds := snap.ScramCredentials()
	var out []Description
	if len(users) == 0 {
		for _, user := range slices.Sorted(maps.Keys(creds)) {
			out = append(out, describe(creds, user))
		}
		return out
	}
	count := map[string]int{}
	for _, u := range users {
		count[u]++
	}
	for _, u := range users {
		switch {
		case count[u] > 1:
			out = append(out, Description{User: u, Err: refusal.New(ErrDuplicateUser,
				fmt.Sprintf("Cannot describe SCRAM credentials for the same user twice in a single request: %s", u))})
		case len(creds[u]) == 0:
			out = append(out, Description{User: u, Err: refusal.New(meta.ErrNoCredential,
				fmt.Sprintf("Attempt to describe a user credential that does not exist: %s", u))})
		default:
			out = append(out, describe(creds, u))
		}
	}
	return out
}

func describe(creds map[string]map[string]auth.Credential, user string) Description {
	d := Description{User: user}
	for _, mech := range auth.ScramMechanisms() {
		if cred, ok := creds[user][mech]; ok {
			d.Mechanisms = append(d.Mechanisms, Mechanism{Code: auth.MechanismCode(mech), Iterations: cred.Iterations})
		}
	}
	return d
}
