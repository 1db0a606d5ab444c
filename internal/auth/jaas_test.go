package auth

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		name, in     string
		module, flag string
		opts         map[string]string
	}{
		{
			name:   "kafka docs PLAIN broker line",
			in:     `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			module: PlainLoginModule, flag: "required",
			opts: map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"},
		},
		{
			name:   "properties continuation leaves newlines and tabs",
			in:     "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED\n\tusername=\"a\"\n\tpassword=\"b\";",
			module: ScramLoginModule, flag: "required",
			opts: map[string]string{"username": "a", "password": "b"},
		},
		{
			name:   "no options",
			in:     "org.apache.kafka.common.security.scram.ScramLoginModule required;",
			module: ScramLoginModule, flag: "required", opts: map[string]string{},
		},
		{
			name:   "unquoted values, spaces around =, single quotes",
			in:     `M optional a = 1 b=two c='th ree' ;`,
			module: "M", flag: "optional", opts: map[string]string{"a": "1", "b": "two", "c": "th ree"},
		},
		{
			name:   "escapes",
			in:     `M sufficient q="say \"hi\"" bs="a\\b" nl="x\ny" tab="\t" oct="\101\0618" sq='it\'s' other="\z";`,
			module: "M", flag: "sufficient",
			opts: map[string]string{"q": `say "hi"`, "bs": `a\b`, "nl": "x\ny", "tab": "\t", "oct": "A18", "sq": "it's", "other": "z"},
		},
		{
			name:   "separators inside quotes",
			in:     `M requisite pw="a;b=c/d,e" user_x="p w";`,
			module: "M", flag: "requisite", opts: map[string]string{"pw": "a;b=c/d,e", "user_x": "p w"},
		},
		{
			name:   "comments",
			in:     "/* broker */ M required // trailing\n a=\"1\" /* mid */ b=2;",
			module: "M", flag: "required", opts: map[string]string{"a": "1", "b": "2"},
		},
		{
			name:   "later duplicate wins",
			in:     `M required a="1" a="2";`,
			module: "M", flag: "required", opts: map[string]string{"a": "2"},
		},
		{
			name:   "quoted key and empty value",
			in:     `M required "k k"="" ;`,
			module: "M", flag: "required", opts: map[string]string{"k k": ""},
		},
		{
			name:   "UTF-8 passes through",
			in:     `M required user_jörg="pässwörd";`,
			module: "M", flag: "required", opts: map[string]string{"user_jörg": "pässwörd"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			module, flag, opts, err := ParseJAAS(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if module != tc.module || flag != tc.flag || !maps.Equal(opts, tc.opts) {
				t.Fatalf("got %q %q %q", module, flag, opts)
			}
		})
	}
}

func TestParseJAASErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "Login module not specified"},
		{"  /* only a comment */ ", "Login module not specified"},
		{"M", "control flag not specified"},
		{"M ;", "control flag is not available"},
		{"M mandatory;", "Invalid login module control flag 'mandatory'"},
		{`M required a="1"`, "not terminated by semi-colon"},
		{`M required a=;`, "Value not specified for key 'a'"},
		{`M required a;`, "Value not specified for key 'a'"},
		{`M required a=`, "Value not specified for key 'a'"},
		{`M required ="x";`, "option name missing"},
		{`M required a="unterminated;`, "unterminated quoted string"},
		{"M required a=\"line\nbreak\";", "unterminated quoted string"},
		{`M required; N required;`, "contains 2 login modules, should be 1 module"},
		{`; M required;`, "Login module not specified"},
	} {
		if _, _, _, err := ParseJAAS(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseJAAS(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseJAASErrorsDoNotQuoteValues(t *testing.T) {
	_, _, _, err := ParseJAAS(`M required user_alice="s3cret" x=`)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

func TestJAASForPrecedence(t *testing.T) {
	props := map[string]string{
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": "listener+mechanism",
		"listener.name.sasl_plaintext.sasl.jaas.config":       "listener only (ignored by Kafka brokers)",
		"sasl.jaas.config": "unprefixed",
	}
	for _, tc := range []struct{ listener, mech, want string }{
		{"SASL_PLAINTEXT", "PLAIN", "listener+mechanism"}, // listener and mechanism are lower-cased in the key
		{"sasl_plaintext", "PLAIN", "listener+mechanism"},
		{"SASL_PLAINTEXT", "SCRAM-SHA-256", "unprefixed"},
		{"EXTERNAL", "PLAIN", "unprefixed"},
	} {
		if got, ok := JAASFor(props, tc.listener, tc.mech); !ok || got != tc.want {
			t.Errorf("JAASFor(%s, %s) = %q, %v; want %q", tc.listener, tc.mech, got, ok, tc.want)
		}
	}
	if _, ok := JAASFor(map[string]string{"listener.name.other.plain.sasl.jaas.config": "x"}, "SASL_SSL", "PLAIN"); ok {
		t.Error("found a JAAS line for the wrong listener")
	}
	if JAASKey("SASL_SSL", "SCRAM-SHA-512") != "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config" {
		t.Error(JAASKey("SASL_SSL", "SCRAM-SHA-512"))
	}
}

func TestPlainUsersFromJAAS(t *testing.T) {
	users, err := PlainUsersFromJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	if pw, ok := users("alice"); !ok || pw != "alice-secret" {
		t.Errorf("alice: %q %v", pw, ok)
	}
	if _, ok := users("username"); ok {
		t.Error("the broker's own username option is not a user")
	}
	if _, ok := users("bob"); ok {
		t.Error("bob is not a user")
	}
	if _, err := PlainUsersFromJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required user_a="b";`); err == nil {
		t.Error("a SCRAM login module gave PLAIN users")
	}
	if _, err := PlainUsersFromJAAS(`broken`); err == nil {
		t.Error("malformed JAAS accepted")
	}
}
