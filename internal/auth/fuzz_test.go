package auth

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for everything that parses bytes from unauthenticated clients or from configuration:
// go test ./internal/auth -run '^$' -fuzz FuzzPlainToken -fuzztime 30s (likewise for the others).

func FuzzPlainToken(f *testing.F) {
	for _, seed := range []string{"\x00alice\x00alice-secret", "alice\x00alice\x00alice-secret", "", "\x00", "\x00\x00",
		"a\x00b\x00c\x00d", "\xff\x00\xfe\x00\xfd"} {
		f.Add([]byte(seed))
	}
	users := staticUsers(map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, token []byte) {
		s := &plainSession{users: users}
		reply, done, err := s.Step(token)
		if done != (err == nil) {
			t.Fatalf("done=%v err=%v", done, err)
		}
		if err == nil {
			if s.AuthorizationID() != "alice" || len(reply) != 0 {
				t.Fatalf("authenticated as %q", s.AuthorizationID())
			}
			return
		}
		checkAuthFailure(t, err, "alice-secret")
	})
}

func FuzzScramClientFirst(f *testing.F) {
	for _, seed := range []string{"n,,n=alice,r=abc", "n,a=alice,n=alice,r=abc,tokenauth=true", "y,,n=alice,r=abc",
		"p=tls-unique,,n=alice,r=abc", "n,,m=x,n=alice,r=abc", "n,,n=a=2Cb,r=x", "n,,n=alice,r=abc,", ",,,", ""} {
		f.Add([]byte(seed), []byte("c=biws,r=abc,p=AAAA"))
	}
	store := newCredStore(f, 4096, map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		for _, mech := range ScramMechanisms() {
			s := newScramSession(mech, store.lookup)
			reply, done, err := s.Step(first)
			if done {
				t.Fatal("done after one message")
			}
			if err != nil {
				checkAuthFailure(t, err, "alice-secret")
				continue
			}
			if !strings.HasPrefix(string(reply), "r=") {
				t.Fatalf("server-first %q", reply)
			}
			// Whatever follows without the password must fail, never panic.
			if _, done, err := s.Step(final); err == nil || done {
				t.Fatalf("client-final %q accepted", final)
			} else {
				checkAuthFailure(t, err, "alice-secret")
			}
		}
	})
}

func checkAuthFailure(t *testing.T, err error, secret string) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v is not *AuthError", err, err)
	}
	if strings.Contains(ae.Error(), secret) || strings.Contains(ae.Reason(), secret) {
		t.Fatal("error leaks the secret")
	}
}

func FuzzParseJAAS(f *testing.F) {
	for _, seed := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a" user_admin="a" user_alice="b";`,
		`M required a='x\'y' b="\101\n" /* c */ d=e; // tail`,
		`M required a="unterminated`, `M`, `;`, `=`, `"`, `/`, `/*`, `M required a="\`, "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		module, flag, opts, err := ParseJAAS(s)
		if err != nil {
			return
		}
		if module == "" || opts == nil {
			t.Fatalf("success without module/options: %q %q %v", module, flag, opts)
		}
		switch flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			t.Fatalf("flag %q", flag)
		}
		// A line rebuilt from the parse (values quoted and escaped) parses to the same result.
		var b strings.Builder
		b.WriteString(quoteJAAS(module) + " " + flag)
		for k, v := range opts {
			b.WriteString(" " + quoteJAAS(k) + "=" + quoteJAAS(v))
		}
		b.WriteString(";")
		m2, f2, o2, err := ParseJAAS(b.String())
		if err != nil || m2 != module || f2 != flag || len(o2) != len(opts) {
			t.Fatalf("re-parse of %q: %q %q %v %v", b.String(), m2, f2, o2, err)
		}
		for k, v := range opts {
			if o2[k] != v {
				t.Fatalf("option %q: %q != %q", k, o2[k], v)
			}
		}
	})
}

// quoteJAAS quotes s so that ParseJAAS reads it back unchanged (octal escapes for control bytes).
func quoteJAAS(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			b.WriteString("\\" + string(rune('0'+c/64)) + string(rune('0'+c/8%8)) + string(rune('0'+c%8)))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func FuzzPasswordDecode(f *testing.F) {
	e, err := NewPasswordEncoder("secret", WithEncoderIterations(1024))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := e.Encode("pw")
	f.Add(good)
	f.Add("keyLength:128,iterations:1,salt:AA==,cipherAlgorithm:AES/CBC/PKCS5Padding,initializationVector:AAAAAAAAAAAAAAAAAAAAAA==,encryptedPassword:AAAAAAAAAAAAAAAAAAAAAA==,passwordLength:0")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		out, err := e.Decode(s)
		if err != nil && !errors.Is(err, ErrPasswordDecode) {
			t.Fatalf("error %v is not ErrPasswordDecode", err)
		}
		if err == nil && !utf8.ValidString(out) && s == good {
			t.Fatal("bad round trip")
		}
	})
}
