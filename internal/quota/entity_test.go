package quota

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

func TestSanitizeMatchesKafka(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"user*", "user%2A"}, // '*' kept by URLEncoder, then -> %2A
		{"a b", "a%20b"},     // space: '+' from URLEncoder, then -> %20
		{"a+b", "a%2Bb"},     // a literal '+' is encoded by URLEncoder
		{"a/b", "a%2Fb"},     // never a path separator
		{"é", "%C3%A9"},      // UTF-8 bytes
		{"日本", "%E6%97%A5%E6%9C%AC"},
		{"~x", "%7Ex"},                 // Java encodes '~' (Go's QueryEscape does not)
		{"<default>", "%3Cdefault%3E"}, // a user really named <default> is not the default
		{"a.b-c_d", "a.b-c_d"},
		{"", ""},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSanitizeRoundTrips(t *testing.T) {
	// Kafka's SanitizerTest principal, plus the cases the issue names.
	for _, name := range []string{
		"CN=Some characters !@#$%&*()_-+=';:,/~", "*", "a b", " ", "a/b/c", "日本語 ユーザー",
		"%41", "+", "<default>", "\x00\xff", "User:alice", "::1",
	} {
		s := Sanitize(name)
		if !regexp.MustCompile(`^[a-zA-Z0-9._\-%]*$`).MatchString(s) {
			t.Errorf("Sanitize(%q) = %q has characters outside [a-zA-Z0-9._-%%]", name, s)
		}
		back, err := Desanitize(s)
		if err != nil || back != name {
			t.Errorf("Desanitize(Sanitize(%q)) = %q, %v", name, back, err)
		}
	}
	if got, err := Desanitize("a+b"); err != nil || got != "a b" {
		t.Errorf(`Desanitize("a+b") = %q, %v; Kafka's URLDecoder reads '+' as a space`, got, err)
	}
	if _, err := Desanitize("%zz"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Desanitize(%%zz) = %v, want ErrInvalid", err)
	}
}

func TestPathsRoundTrip(t *testing.T) {
	type names struct {
		user, client, ip          *string
		hasUser, hasClient, hasIP bool
	}
	for _, tc := range []struct {
		path string
		want names
	}{
		{UserPath(ptr("alice")), names{user: ptr("alice"), hasUser: true}},
		{UserPath(nil), names{hasUser: true}},
		{UserClientPath(ptr("a b"), ptr("c*")), names{user: ptr("a b"), client: ptr("c*"), hasUser: true, hasClient: true}},
		{UserClientPath(ptr("alice"), nil), names{user: ptr("alice"), hasUser: true, hasClient: true}},
		{UserClientPath(nil, ptr("c1")), names{client: ptr("c1"), hasUser: true, hasClient: true}},
		{UserClientPath(nil, nil), names{hasUser: true, hasClient: true}},
		{ClientPath(ptr("x/y")), names{client: ptr("x/y"), hasClient: true}},
		{ClientPath(nil), names{hasClient: true}},
		{IPPath(ptr("10.0.0.1")), names{ip: ptr("10.0.0.1"), hasIP: true}},
		{IPPath(ptr("::1")), names{ip: ptr("::1"), hasIP: true}},
		{IPPath(nil), names{hasIP: true}},
	} {
		e, err := ParseEntity(tc.path)
		if err != nil {
			t.Errorf("ParseEntity(%q): %v", tc.path, err)
			continue
		}
		u, c, ip, hu, hc, hi := e.User, e.ClientID, e.IP, e.HasUser, e.HasClientID, e.HasIP
		if e.Path() != tc.path {
			t.Errorf("ParseEntity(%q).Path() = %q", tc.path, e.Path())
		}
		got := names{u, c, ip, hu, hc, hi}
		if str(got.user) != str(tc.want.user) || str(got.client) != str(tc.want.client) || str(got.ip) != str(tc.want.ip) ||
			hu != tc.want.hasUser || hc != tc.want.hasClient || hi != tc.want.hasIP {
			t.Errorf("ParseEntity(%q) = %s %s %s %v %v %v", tc.path, str(u), str(c), str(ip), hu, hc, hi)
		}
	}
	if p := UserClientPath(ptr("user2"), ptr("clientA")); p != "users/user2/clients/clientA" {
		t.Errorf("path = %q", p)
	}
	if p := IPPath(ptr("::1")); p != "ips/%3A%3A1" {
		t.Errorf("ipv6 path = %q", p)
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return "'" + *p + "'"
}

func TestParseEntityRejects(t *testing.T) {
	for _, path := range []string{
		"", "users", "users/", "users//clients/c", "users/a/clients/", "users/a/clients", "users/a/topics/b",
		"clients/a/users/b", "ips/<default>/clients/c", "topics/t", "users/a/clients/b/x",
		"users/a%zz", "users/a+b", "users/a%62", "users/a%2a", // bad or non-canonical encodings
		"ips/not-an-ip", "ips/010.0.0.1", "ips/%3A%3A0%3A1", "ips/fe80%3A%3A1%25eth0", "ips/%3A%3Affff%3A1.2.3.4",
		"/users/a", "config/users/a",
	} {
		if _, err := ParseEntity(path); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseEntity(%q) = %v, want ErrInvalid", path, err)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("ParseEntity(%q): error %q does not name the path", path, err)
		}
	}
}

// EntityOf applies Kafka's rules for an entity's components, refusing as
// ErrInvalid (INVALID_REQUEST on the wire) with Kafka's message.
func TestEntityOfRefusesWhatKafkaRefuses(t *testing.T) {
	for _, tc := range []struct {
		components []Component
		want       string
	}{
		{nil, "Invalid empty client quota entity"},
		{[]Component{{TypeUser, ptr("")}}, "Empty user name is not allowed; use null for the default entity"},
		{[]Component{{"topic", ptr("t")}}, "Unhandled client quota entity type: topic"},
		{[]Component{{TypeUser, ptr("a")}, {TypeUser, ptr("b")}}, "Duplicate user entity type in client quota entity"},
		{[]Component{{TypeIP, nil}, {TypeClientID, ptr("c")}}, "Invalid quota entity combination: ip cannot be combined with user or client-id"},
	} {
		_, err := EntityOf(tc.components)
		if !errors.Is(err, ErrInvalid) || err.Error() != tc.want {
			t.Errorf("EntityOf(%v) = %v, want ErrInvalid %q", tc.components, err, tc.want)
		}
	}
	e, err := EntityOf([]Component{{TypeClientID, nil}, {TypeUser, ptr("alice")}})
	if err != nil || e.Path() != "users/alice/clients/<default>" {
		t.Fatalf("EntityOf(client-id default, user alice) = %+v, %v", e, err)
	}
	if parts := e.AppendComponents(nil); len(parts) != 2 || parts[0].Type != TypeUser || parts[1].Type != TypeClientID {
		t.Errorf("components %v, want user then client-id", parts)
	}
}
