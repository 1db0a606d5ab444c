package admin

// SCRAM credentials: DescribeUserScramCredentials (50) and
// AlterUserScramCredentials (51), KIP-554. The password never leaves this
// process: the client picks a random salt and sends only
// SaltedPassword = Hi(password, salt, iterations) (RFC 5802 §3), from which
// the broker derives StoredKey and ServerKey.

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ScramMechanism is a SCRAM mechanism as the wire encodes it.
type ScramMechanism int8

// SCRAM mechanisms (wire codes; 0 is unknown).
const (
	ScramSHA256 ScramMechanism = 1
	ScramSHA512 ScramMechanism = 2
)

// Iteration bounds Kafka accepts (ScramMechanism's minimum and the
// controller's maximum), and kafka-configs.sh's default.
const (
	MinScramIterations     = 4096
	MaxScramIterations     = 16384
	DefaultScramIterations = 4096
)

// String is the SASL mechanism name (SCRAM-SHA-256, SCRAM-SHA-512).
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

// MarshalText writes String.
func (m ScramMechanism) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mechanism name.
func (m *ScramMechanism) UnmarshalText(b []byte) error {
	v, err := ParseScramMechanism(string(b))
	*m = v
	return err
}

// ParseScramMechanism reads SCRAM-SHA-256 or SCRAM-SHA-512.
func ParseScramMechanism(s string) (ScramMechanism, error) {
	switch strings.ToUpper(s) {
	case "SCRAM-SHA-256":
		return ScramSHA256, nil
	case "SCRAM-SHA-512":
		return ScramSHA512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q (want SCRAM-SHA-256 or SCRAM-SHA-512)", s)
}

func (m ScramMechanism) hash() (func() hash.Hash, bool) {
	switch m {
	case ScramSHA256:
		return sha256.New, true
	case ScramSHA512:
		return sha512.New, true
	}
	return nil, false
}

// ScramCredentialInfo is what a broker reveals of a credential.
type ScramCredentialInfo struct {
	Mechanism  ScramMechanism `json:"mechanism"`
	Iterations int32          `json:"iterations"`
}

// UserScramCredentials is one user's credentials.
type UserScramCredentials struct {
	User        string                `json:"user"`
	Credentials []ScramCredentialInfo `json:"credentials"`
	// Err is this user's error (RESOURCE_NOT_FOUND for a named user without
	// credentials), nil on success.
	Err error `json:"-"`
}

// DescribeUserScramCredentials lists the credentials of users (every user
// with credentials when none are named), sorted by user.
func (c *Client) DescribeUserScramCredentials(ctx context.Context, users ...string) ([]UserScramCredentials, error) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := request[*kmsg.DescribeUserSCRAMCredentialsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []UserScramCredentials
	for _, r := range resp.Results {
		u := UserScramCredentials{User: r.User, Err: codeError("user "+r.User, r.ErrorCode, r.ErrorMessage)}
		for _, ci := range r.CredentialInfos {
			u.Credentials = append(u.Credentials, ScramCredentialInfo{ScramMechanism(ci.Mechanism), ci.Iterations})
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b UserScramCredentials) int { return strings.Compare(a.User, b.User) })
	return out, nil
}

// ScramUpsertion creates or replaces one user's credential for one
// mechanism.
type ScramUpsertion struct {
	User       string
	Mechanism  ScramMechanism
	Iterations int32 // 0 = DefaultScramIterations
	Password   string
	// Salt is generated (32 random bytes) when empty.
	Salt []byte
}

// ScramDeletion removes one user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism ScramMechanism
}

// ScramResult is the outcome for one user.
type ScramResult struct {
	User string
	// Err is this user's error (an *Error), nil on success.
	Err error
}

// ScramResults holds one result per user.
type ScramResults []ScramResult

// All joins the errors of the users that failed; nil when all succeeded.
func (rs ScramResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// AlterUserScramCredentials upserts and deletes credentials. A user may
// appear once across both lists (the broker refuses duplicates).
func (c *Client) AlterUserScramCredentials(ctx context.Context, upserts []ScramUpsertion, deletes []ScramDeletion) (ScramResults, error) {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	var results ScramResults
	for _, d := range deletes {
		rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		rd.Name, rd.Mechanism = d.User, int8(d.Mechanism)
		req.Deletions = append(req.Deletions, rd)
		results = append(results, ScramResult{User: d.User})
	}
	for _, u := range upserts {
		ru, err := saltedUpsertion(u)
		if err != nil {
			return nil, err
		}
		req.Upsertions = append(req.Upsertions, ru)
		results = append(results, ScramResult{User: u.User})
	}
	if len(results) == 0 {
		return results, nil
	}
	resp, err := request[*kmsg.AlterUserSCRAMCredentialsResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	for _, r := range resp.Results {
		for i := range results {
			if results[i].User == r.User {
				results[i].Err = codeError("user "+r.User, r.ErrorCode, r.ErrorMessage)
			}
		}
	}
	return results, nil
}

// saltedUpsertion computes the salted password of an upsertion.
func saltedUpsertion(u ScramUpsertion) (kmsg.AlterUserSCRAMCredentialsRequestUpsertion, error) {
	ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	h, ok := u.Mechanism.hash()
	if !ok {
		return ru, fmt.Errorf("user %s: unknown SCRAM mechanism %d", u.User, u.Mechanism)
	}
	iters := u.Iterations
	if iters == 0 {
		iters = DefaultScramIterations
	}
	salt := u.Salt
	if len(salt) == 0 {
		salt = make([]byte, 32)
		rand.Read(salt)
	}
	salted, err := pbkdf2.Key(h, u.Password, salt, int(iters), h().Size())
	if err != nil {
		return ru, fmt.Errorf("user %s: %w", u.User, err)
	}
	ru.Name, ru.Mechanism, ru.Iterations, ru.Salt, ru.SaltedPassword = u.User, int8(u.Mechanism), iters, salt, salted
	return ru, nil
}
