package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Login module classes that kbroker understands in sasl.jaas.config.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// ParseJAAS parses a Kafka sasl.jaas.config value, e.g.
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a" user_admin="a";
//
// returning the login module class, the control flag (lower-cased: required, requisite, sufficient or
// optional) and the options. It follows Kafka's JaasConfig tokenizer: words end at whitespace, '=', ';', a
// quote or '/'; values may be quoted with " or ' and use Java escapes (\n, \t, \\, \", octal \ooo, ...);
// "//" and "/* */" are comments; the entry must end with ';'; a broker's sasl.jaas.config holds exactly one
// login module. Stricter than Kafka: an unterminated quoted string is an error rather than ending at the
// line's end. Later duplicate options win, as in Kafka. Error messages never quote option values (they may
// be passwords).
func ParseJAAS(s string) (module, flag string, options map[string]string, err error) {
	toks, err := tokenizeJAAS(s)
	if err != nil {
		return "", "", nil, err
	}
	p := &jaasParser{toks: toks}
	var entries int
	for !p.eof() {
		m, f, opts, err := p.entry()
		if err != nil {
			return "", "", nil, err
		}
		if entries == 0 {
			module, flag, options = m, f, opts
		}
		entries++
	}
	if entries == 0 {
		return "", "", nil, errors.New("JAAS config: Login module not specified in JAAS config")
	}
	if entries != 1 {
		return "", "", nil, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", entries)
	}
	return module, flag, options, nil
}

type jaasTokKind uint8

const (
	jaasWord jaasTokKind = iota // bare word or quoted string
	jaasEquals
	jaasSemicolon
)

type jaasTok struct {
	kind jaasTokKind
	text string
}

func tokenizeJAAS(s string) ([]jaasTok, error) {
	var toks []jaasTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c <= ' ':
			i++
		case c == '=':
			toks = append(toks, jaasTok{kind: jaasEquals})
			i++
		case c == ';':
			toks = append(toks, jaasTok{kind: jaasSemicolon})
			i++
		case c == '/':
			i = skipJAASComment(s, i)
		case c == '"' || c == '\'':
			text, next, err := readJAASQuoted(s, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, jaasTok{kind: jaasWord, text: text})
			i = next
		default:
			j := i
			for j < len(s) && !isJAASDelimiter(s[j]) {
				j++
			}
			toks = append(toks, jaasTok{kind: jaasWord, text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

func isJAASDelimiter(c byte) bool {
	return c <= ' ' || c == '=' || c == ';' || c == '"' || c == '\'' || c == '/'
}

// skipJAASComment skips "/* ... */" or, for "//" and (as Java's StreamTokenizer does) a lone '/', the rest of
// the line. An unterminated block comment runs to the end.
func skipJAASComment(s string, i int) int {
	if strings.HasPrefix(s[i:], "/*") {
		if end := strings.Index(s[i+2:], "*/"); end >= 0 {
			return i + 2 + end + 2
		}
		return len(s)
	}
	if end := strings.IndexAny(s[i:], "\r\n"); end >= 0 {
		return i + end
	}
	return len(s)
}

// readJAASQuoted reads a quoted string starting at s[i] with StreamTokenizer's escapes.
func readJAASQuoted(s string, i int) (string, int, error) {
	quote := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); {
		c := s[j]
		switch {
		case c == quote:
			return b.String(), j + 1, nil
		case c == '\n' || c == '\r':
			return "", 0, errors.New("JAAS config: unterminated quoted string")
		case c == '\\' && j+1 < len(s):
			r, n := jaasEscape(s[j+1:])
			b.WriteByte(r)
			j += 1 + n
		default:
			b.WriteByte(c)
			j++
		}
	}
	return "", 0, errors.New("JAAS config: unterminated quoted string")
}

// jaasEscape decodes the escape after a backslash, returning the byte and how many input bytes it used.
func jaasEscape(s string) (byte, int) {
	switch c := s[0]; c {
	case 'a':
		return 7, 1
	case 'b':
		return '\b', 1
	case 'f':
		return '\f', 1
	case 'n':
		return '\n', 1
	case 'r':
		return '\r', 1
	case 't':
		return '\t', 1
	case 'v':
		return '\v', 1
	default:
		if c < '0' || c > '7' {
			return c, 1
		}
		// Octal: up to three digits when the first is 0-3, else up to two (so the value fits a byte).
		max := 2
		if c <= '3' {
			max = 3
		}
		v, n := 0, 0
		for n < max && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			v = v*8 + int(s[n]-'0')
			n++
		}
		return byte(v), n
	}
}

type jaasParser struct {
	toks []jaasTok
	pos  int
}

func (p *jaasParser) eof() bool { return p.pos >= len(p.toks) }

func (p *jaasParser) next() (jaasTok, bool) {
	if p.eof() {
		return jaasTok{}, false
	}
	t := p.toks[p.pos]
	p.pos++
	return t, true
}

func (p *jaasParser) entry() (module, flag string, options map[string]string, err error) {
	t, _ := p.next()
	if t.kind != jaasWord || t.text == "" {
		return "", "", nil, errors.New("JAAS config: Login module not specified in JAAS config")
	}
	module = t.text
	t, ok := p.next()
	if !ok {
		return "", "", nil, errors.New("JAAS config: Login module control flag not specified in JAAS config")
	}
	if t.kind != jaasWord {
		return "", "", nil, errors.New("JAAS config: Login module control flag is not available in the JAAS config")
	}
	switch flag = strings.ToLower(t.text); flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return "", "", nil, fmt.Errorf("JAAS config: Invalid login module control flag '%s' in JAAS config", t.text)
	}
	options = map[string]string{}
	for {
		t, ok := p.next()
		if !ok {
			return "", "", nil, errors.New("JAAS config: JAAS config entry not terminated by semi-colon")
		}
		if t.kind == jaasSemicolon {
			return module, flag, options, nil
		}
		if t.kind != jaasWord {
			return "", "", nil, errors.New("JAAS config: option name missing before '='")
		}
		key := t.text
		eq, ok1 := p.next()
		val, ok2 := p.next()
		if !ok1 || !ok2 || eq.kind != jaasEquals || val.kind != jaasWord {
			return "", "", nil, fmt.Errorf("JAAS config: Value not specified for key '%s' in JAAS config", key)
		}
		options[key] = val.text
	}
}

// JAASFor finds the sasl.jaas.config that applies to a listener and mechanism. Kafka's broker
// (JaasContext.loadServerContext) reads only listener.name.<listener>.<mechanism>.sasl.jaas.config, with
// listener and mechanism lower-cased, and otherwise falls back to the static JAAS file's
// "<listener>.KafkaServer" or "KafkaServer" section; it ignores an unprefixed sasl.jaas.config with a
// warning. kbroker has no static JAAS file, so the unprefixed sasl.jaas.config takes the file's place as the
// fallback for every listener and mechanism.
func JAASFor(props map[string]string, listener, mechanism string) (string, bool) {
	if v, ok := props[JAASKey(listener, mechanism)]; ok {
		return v, true
	}
	v, ok := props["sasl.jaas.config"]
	return v, ok
}

// JAASKey is the Kafka property that holds the JAAS line of a listener and mechanism.
func JAASKey(listener, mechanism string) string {
	return "listener.name." + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
}

// PlainUsersFromJAAS reads the users of a PLAIN listener from its JAAS line: the user_<name>="<password>"
// options of a PlainLoginModule entry (Kafka's PlainServerCallbackHandler). The username/password options
// are the broker's own client identity for inter-broker traffic and are not users by themselves.
func PlainUsersFromJAAS(jaas string) (PlainUsers, error) {
	module, _, options, err := ParseJAAS(jaas)
	if err != nil {
		return nil, err
	}
	if module != PlainLoginModule {
		return nil, fmt.Errorf("JAAS config for PLAIN: login module is %s, want %s", module, PlainLoginModule)
	}
	users := map[string]string{}
	for k, v := range options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return func(user string) (string, bool) {
		pw, ok := users[user]
		return pw, ok
	}, nil
}
