package auth

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// credStore is an in-memory CredentialLookup built from passwords with NewCredential.
type credStore map[[2]string]Credential

func newCredStore(t testing.TB, iterations int, users map[string]string) credStore {
	t.Helper()
	s := credStore{}
	for user, pw := range users {
		for _, mech := range ScramMechanisms() {
			c, err := NewCredential(mech, pw, iterations)
			if err != nil {
				t.Fatal(err)
			}
			s[[2]string{user, mech}] = c
		}
	}
	return s
}

func (s credStore) lookup(user, mech string) (Credential, bool) {
	c, ok := s[[2]string{user, mech}]
	return c, ok
}

func startScram(t testing.TB, mech string, store credStore) Session {
	t.Helper()
	m, err := NewMechanisms([]string{MechanismScramSHA256, MechanismScramSHA512}, nil, store.lookup)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Start(mech)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper optionally rewrites the client-final message before the server sees it.
type exchange struct {
	user, password, authzid string
	tamperFinal             func(string) string
}

// run drives a real RFC 5802 exchange with xdg-go/scram's client against a server session. It returns the
// first server error, or nil after checking the client accepted the server's signature.
func (x exchange) run(t testing.TB, mech string, s Session) error {
	t.Helper()
	hg := scram.SHA256
	if mech == MechanismScramSHA512 {
		hg = scram.SHA512
	}
	client, err := hg.NewClient(x.user, x.password, x.authzid)
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	first, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	serverFirst, done, err := s.Step([]byte(first))
	if err != nil {
		return err
	}
	if done {
		t.Fatal("done after client-first")
	}
	final, err := conv.Step(string(serverFirst))
	if err != nil {
		t.Fatalf("client rejected server-first %q: %v", serverFirst, err)
	}
	if x.tamperFinal != nil {
		final = x.tamperFinal(final)
	}
	serverFinal, done, err := s.Step([]byte(final))
	if err != nil {
		return err
	}
	if !done {
		t.Fatal("not done after client-final")
	}
	if _, err := conv.Step(string(serverFinal)); err != nil || !conv.Valid() {
		t.Fatalf("client rejected server signature: %v", err)
	}
	return nil
}

func TestScramExchange(t *testing.T) {
	store := newCredStore(t, 4096, map[string]string{"alice": "alice-secret", "a,b=c": "pw"})
	for _, mech := range ScramMechanisms() {
		t.Run(mech, func(t *testing.T) {
			generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
			for _, tc := range []struct {
				name    string
				x       exchange
				wantErr string // "" = success
			}{
				{"good", exchange{user: "alice", password: "alice-secret"}, ""},
				{"authzid equal to user", exchange{user: "alice", password: "alice-secret", authzid: "alice"}, ""},
				{"escaped user name", exchange{user: "a,b=c", password: "pw"}, ""},
				{"wrong password", exchange{user: "alice", password: "wrong"}, generic},
				{"unknown user", exchange{user: "mallory", password: "alice-secret"}, generic},
				{"authzid mismatch", exchange{user: "alice", password: "alice-secret", authzid: "bob"},
					"Authentication failed: Client requested an authorization id that is different from username"},
				{"nonce tampered", exchange{user: "alice", password: "alice-secret", tamperFinal: func(m string) string {
					return strings.Replace(m, ",r=", ",r=X", 1)
				}}, generic},
				{"channel binding tampered", exchange{user: "alice", password: "alice-secret", tamperFinal: func(m string) string {
					return strings.Replace(m, "c=biws", "c=eSws", 1) // "y,,"
				}}, generic},
				{"proof tampered", exchange{user: "alice", password: "alice-secret", tamperFinal: func(m string) string {
					i := strings.LastIndex(m, ",p=") + 3
					b := []byte(m)
					if b[i] == 'A' {
						b[i] = 'B'
					} else {
						b[i] = 'A'
					}
					return string(b)
				}}, generic},
			} {
				t.Run(tc.name, func(t *testing.T) {
					s := startScram(t, mech, store)
					err := tc.x.run(t, mech, s)
					if tc.wantErr == "" {
						if err != nil {
							t.Fatal(err)
						}
						if s.AuthorizationID() != tc.x.user {
							t.Fatalf("AuthorizationID = %q, want %q", s.AuthorizationID(), tc.x.user)
						}
						if _, _, err := s.Step([]byte("again")); !errors.Is(err, ErrIllegalSaslState) {
							t.Fatalf("Step after completion: %v", err)
						}
						return
					}
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("err = %v, want %q", err, tc.wantErr)
					}
					if s.AuthorizationID() != "" {
						t.Fatal("failed session has an authorization id")
					}
					if _, _, err := s.Step([]byte("n,,n=alice,r=abc")); !errors.Is(err, ErrIllegalSaslState) {
						t.Fatalf("Step after failure: %v", err)
					}
				})
			}
		})
	}
}

func TestScramMechanismsUseTheirOwnCredentials(t *testing.T) {
	store := newCredStore(t, 4096, map[string]string{"alice": "pw"})
	delete(store, [2]string{"alice", MechanismScramSHA512})
	if err := (exchange{user: "alice", password: "pw"}).run(t, MechanismScramSHA512, startScram(t, MechanismScramSHA512, store)); err == nil {
		t.Fatal("SCRAM-SHA-512 accepted a user with only a SCRAM-SHA-256 credential")
	}
}

func TestScramRejectsLowIterationCredential(t *testing.T) {
	// A credential below the minimum can only come from a corrupted or foreign store; login must refuse it.
	salt := []byte("0123456789abcdef")
	weak, err := FromSaltedPassword(MechanismScramSHA256, salt, SaltedPassword(MechanismScramSHA256, "pw", salt, MinIterations), MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	weak.Iterations = 1024
	store := credStore{{"alice", MechanismScramSHA256}: weak}
	s := startScram(t, MechanismScramSHA256, store)
	_, _, err = s.Step([]byte("n,,n=alice,r=clientnonce"))
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason(), "Iterations 1024 is less than the minimum 4096") {
		t.Fatalf("err = %v (reason %q)", err, reasonOf(err))
	}
}

func reasonOf(err error) string {
	var ae *AuthError
	if errors.As(err, &ae) {
		return ae.Reason()
	}
	return ""
}

func TestScramClientFirstRules(t *testing.T) {
	store := newCredStore(t, 4096, map[string]string{"alice": "pw"})
	for _, tc := range []struct {
		msg    string
		ok     bool
		reason string
	}{
		{"n,,n=alice,r=abc", true, ""},
		{"n,a=alice,n=alice,r=abc", true, ""},
		{"n,,n=alice,r=abc,foo=bar", true, ""},         // unknown extensions are ignored
		{"n,,n=alice,r=abc,tokenauth=false", true, ""}, // only tokenauth=true means delegation token
		{"n,,n=alice,r=abc,tokenauth=true", false, "delegation tokens"},
		{"n,,n=alice,r=abc,tokenauth=TRUE", false, "delegation tokens"},
		{"y,,n=alice,r=abc", false, "gs2 flag"},
		{"p=tls-unique,,n=alice,r=abc", false, "gs2 flag"},
		{"n,,m=ext,n=alice,r=abc", false, "mandatory extensions"},
		{"n,,n=al=ice,r=abc", false, "bad username"},
		{"n,,n=,r=abc", false, "bad username"},
		{"n,,n=alïce,r=abc", false, "bad username"},
		{"n,,n=alice,r=", false, "bad nonce"},
		{"n,,n=alice,r=a b", false, "bad nonce"},
		{"n,,n=alice,r=abc,", false, "bad extension"},
		{"n,,n=alice,r=abc,1=2", false, "bad extension"},
		{"n,x,n=alice,r=abc", false, "bad authzid"},
		{"n,,n=alice", false, "too few fields"},
		{"", false, "too few fields"},
	} {
		s := startScram(t, MechanismScramSHA256, store)
		reply, done, err := s.Step([]byte(tc.msg))
		if tc.ok {
			if err != nil || done || !bytes.HasPrefix(reply, []byte("r=abc")) {
				t.Errorf("%q: Step = %q, %v, %v", tc.msg, reply, done, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q: accepted", tc.msg)
			continue
		}
		if err.Error() != "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" {
			t.Errorf("%q: client message %q should be the generic one", tc.msg, err)
		}
		if !strings.Contains(reasonOf(err), tc.reason) {
			t.Errorf("%q: reason %q, want it to mention %q", tc.msg, reasonOf(err), tc.reason)
		}
	}
}

func TestScramServerFirstCarriesStoredSaltAndIterations(t *testing.T) {
	salt := []byte("kafka-salt")
	c, err := FromSaltedPassword(MechanismScramSHA512, salt, SaltedPassword(MechanismScramSHA512, "pw", salt, 8192), 8192)
	if err != nil {
		t.Fatal(err)
	}
	s := startScram(t, MechanismScramSHA512, credStore{{"u", MechanismScramSHA512}: c})
	reply, _, err := s.Step([]byte("n,,n=u,r=cnonce"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(reply), ",")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "r=cnonce") || len(parts[0]) <= len("r=cnonce") ||
		parts[1] != "s=a2Fma2Etc2FsdA==" || parts[2] != "i=8192" {
		t.Fatalf("server-first = %q", reply)
	}
}

// BenchmarkScramHandshake measures the broker's side of a full SCRAM exchange (the client's PBKDF2 is
// cached by the client library, as a reconnecting client's would be). Handshakes/s = 1e9 / ns/op.
func BenchmarkScramHandshake(b *testing.B) {
	for _, mech := range ScramMechanisms() {
		b.Run(mech, func(b *testing.B) {
			store := newCredStore(b, 4096, map[string]string{"alice": "alice-secret"})
			hg := scram.SHA256
			if mech == MechanismScramSHA512 {
				hg = scram.SHA512
			}
			client, _ := hg.NewClient("alice", "alice-secret", "")
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s := newScramSession(mech, store.lookup)
				conv := client.NewConversation()
				c1, _ := conv.Step("")
				s1, _, err := s.Step([]byte(c1))
				if err != nil {
					b.Fatal(err)
				}
				c2, err := conv.Step(string(s1))
				if err != nil {
					b.Fatal(err)
				}
				s2, done, err := s.Step([]byte(c2))
				if err != nil || !done {
					b.Fatal(err)
				}
				if _, err := conv.Step(string(s2)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPlainHandshake(b *testing.B) {
	users := staticUsers(map[string]string{"alice": "alice-secret"})
	token := []byte("\x00alice\x00alice-secret")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		s := &plainSession{users: users}
		if _, done, err := s.Step(token); err != nil || !done {
			b.Fatal(err)
		}
	}
}
