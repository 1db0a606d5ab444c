package scram

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/testkit"
)

const sha256 = 1 // SCRAM-SHA-256's wire code

// One result per user in order of first mention; a (user, mechanism) named
// twice refuses that user; validation runs in Kafka's order; an applied
// change is stored, described by iterations only and audited without keys.
func TestPlanApplyDescribe(t *testing.T) {
	var audit bytes.Buffer
	svc := New(testkit.BoltStore(t), slog.New(slog.NewTextHandler(&audit, nil)))
	salt := []byte("salt")
	salted := auth.SaltedPassword("SCRAM-SHA-256", "secret", salt, 4096)
	plan := svc.Plan(
		[]Deletion{{User: "bob", Mechanism: sha256}, {User: "", Mechanism: sha256}},
		[]Upsertion{
			{User: "alice", Mechanism: sha256, Iterations: 4096, Salt: salt, SaltedPassword: salted},
			{User: "bob", Mechanism: sha256, Iterations: 4096, Salt: salt, SaltedPassword: salted},
			{User: "carol", Mechanism: 9, Iterations: 4096, Salt: salt, SaltedPassword: salted},
			{User: "dave", Mechanism: sha256, Iterations: 10, Salt: salt, SaltedPassword: salted},
		})
	var users []string
	for _, u := range plan {
		users = append(users, u.User)
	}
	if strings.Join(users, ",") != "bob,,alice,carol,dave" {
		t.Fatalf("users %q, want in order of first mention", users)
	}
	for i, want := range []error{ErrDuplicateUser, auth.ErrEmptyUsername, nil, auth.ErrUnknownScramMechanism, auth.ErrTooFewIterations} {
		if got := plan[i].Err; (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
			t.Errorf("%q: %v, want %v", plan[i].User, got, want)
		}
	}
	by := Requester{Principal: "User:admin", Client: "127.0.0.1:1"}
	if err := svc.Apply(context.Background(), by, plan[2]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(audit.String(), "scram credential set") || strings.Contains(audit.String(), string(salted)) {
		t.Errorf("audit %q: want the change, never the key material", audit.String())
	}
	got := svc.Describe(nil)
	if len(got) != 1 || got[0].User != "alice" || len(got[0].Mechanisms) != 1 || got[0].Mechanisms[0] != (Mechanism{Code: sha256, Iterations: 4096}) {
		t.Errorf("describe all: %+v", got)
	}
	named := svc.Describe([]string{"alice", "zed", "x", "x"})
	if named[0].Err != nil || !errors.Is(named[1].Err, meta.ErrNoCredential) || !errors.Is(named[2].Err, ErrDuplicateUser) || !errors.Is(named[3].Err, ErrDuplicateUser) {
		t.Errorf("describe named: %+v", named)
	}
	del := svc.Plan([]Deletion{{User: "zed", Mechanism: sha256}}, nil)
	if err := svc.Apply(context.Background(), by, del[0]); !errors.Is(err, meta.ErrNoCredential) {
		t.Errorf("deleting a missing credential: %v, want meta.ErrNoCredential", err)
	}
}
