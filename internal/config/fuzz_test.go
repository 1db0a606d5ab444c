package config

import (
	"testing"
)

// FuzzProperties feeds arbitrary server.properties text through the parser
// and the broker's validation: any text may be refused, none may panic, and
// a file that parses keeps every key it had.
func FuzzProperties(f *testing.F) {
	f.Add([]byte("node.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs=/tmp/x\n"))
	f.Add([]byte("listeners = A://:1,B://[::1]:2\nlistener.security.protocol.map=A:PLAINTEXT,B:SSL\n"))
	f.Add([]byte("a\\\n  b=c\\u00e9\n# comment\n! other\nkey:value\nkey2 value2\n"))
	f.Add([]byte("max.connections.per.ip.overrides=1.2.3.4:5,host:0\nlog.retention.hours=-1\n"))
	f.Add([]byte("sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\nlistener.name.sasl.plain.sasl.jaas.config=x required;\n"))
	f.Add([]byte("\\u12"))
	f.Fuzz(func(t *testing.T, text []byte) {
		props, err := ParseProperties(text)
		if err != nil {
			return
		}
		b, err := NewBroker(props)
		if err != nil {
			return
		}
		for k := range props {
			if b.Props[k] != props[k] {
				t.Fatalf("key %q lost: %q != %q", k, b.Props[k], props[k])
			}
		}
	})
}

// FuzzConfigValue validates arbitrary values of every topic and broker
// config. No value may panic a validator; and a broker value that is valid
// must give each topic config it is the default of (its synonym) a valid
// value too, or a broker started with it would describe topics with values
// they could not be set to.
func FuzzConfigValue(f *testing.F) {
	defs := append(append([]*Def{}, Topics.Defs()...), Brokers.Defs()...)
	for i, v := range []string{"1", "-1", "0", " 5 ", "", "true", "gzip", "9223372036854775807", "-9223372036854775808",
		"2147483647", "1e400", "NaN", "a,b,,c", "PLAIN,GSSAPI", "1.2.3.4:5", "[::1]:x", "producer", "delete,compact"} {
		f.Add(uint16(i*7), v)
	}
	f.Fuzz(func(t *testing.T, which uint16, value string) {
		d := defs[int(which)%len(defs)]
		if d.Validate(value) != nil {
			return
		}
		for _, topic := range Topics.Defs() {
			for _, syn := range topic.Synonyms {
				if syn.Name != d.Name {
					continue
				}
				v := value
				if syn.Convert != nil {
					var err error
					if v, err = syn.Convert(value); err != nil {
						t.Fatalf("%s=%q is valid but converts to no %s: %v", d.Name, value, topic.Name, err)
					}
				}
				if err := topic.Validate(v); err != nil {
					t.Fatalf("%s=%q is valid but gives %s=%q: %v", d.Name, value, topic.Name, v, err)
				}
			}
		}
	})
}
