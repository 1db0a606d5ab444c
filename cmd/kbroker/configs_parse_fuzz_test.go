package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzAddConfig drives --add-config's parser with arbitrary text. What it
// pins: the parser never panics; it fails only with a usage error (the
// CLI prints those and exits 2, never a stack); what it accepts is a list
// of valid keys with values free of brackets and outer spaces; and that
// result is what kafka-configs.sh syntax can say again — rendered with
// brackets around every value, or only around values holding ',' or '=',
// it parses back to the same keys and values. scripts/test runs it for
// FUZZ_TIME; a longer run:
//
//	go test -run '^$' -fuzz '^FuzzAddConfig$' -fuzztime 10m ./cmd/kbroker/
func FuzzAddConfig(f *testing.F) {
	for _, seed := range []string{
		"a=1,b=2",
		"cleanup.policy=[compact,delete]",
		"k = v , k2=[x, y]",
		"ssl.endpoint.identification.algorithm=",
		"SCRAM-SHA-256=[iterations=8192,password=p=w]",
		"a", "a=b=c", "a b=c", "", "=v", "a=[b,c", "a=b],c=d", "a=[]", "a=1,a=2",
		"k=[x]=[y]", "a=[b=[c]]", "x=\t[ v ]\t", "k=v,",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got configAdds
		err := parseAddConfig(in, &got)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) || ue == "" {
				t.Fatalf("%q: error %#v, want a non-empty usage error", in, err)
			}
			return
		}
		if len(got.keys) != len(got.values) {
			t.Fatalf("%q: %d keys but %d values", in, len(got.keys), len(got.values))
		}
		for _, k := range got.keys {
			v, ok := got.values[k]
			switch {
			case !ok:
				t.Fatalf("%q: key %q without a value", in, k)
			case k == "" || !validConfigKey(k):
				t.Fatalf("%q: accepted key %q", in, k)
			case strings.ContainsAny(v, "[]"):
				t.Fatalf("%q: value %q of %s keeps a bracket", in, v, k)
			case strings.TrimSpace(v) != v:
				t.Fatalf("%q: value %q of %s has outer spaces", in, v, k)
			}
		}
		for _, always := range []bool{true, false} {
			again := renderAddConfig(&got, always)
			var back configAdds
			if err := parseAddConfig(again, &back); err != nil {
				t.Fatalf("%q parsed to %q, which does not parse: %v", in, again, err)
			}
			if !reflect.DeepEqual(back.keys, got.keys) || !reflect.DeepEqual(back.values, got.values) {
				t.Fatalf("%q → %q %q, rendered %q → %q %q", in, got.keys, got.values, again, back.keys, back.values)
			}
		}
	})
}

// renderAddConfig writes parsed configs back in --add-config syntax:
// every value in brackets, or (always false) only those holding a
// separator.
func renderAddConfig(c *configAdds, always bool) string {
	var b strings.Builder
	for i, k := range c.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		v := c.values[k]
		if always || strings.ContainsAny(v, ",=") {
			v = "[" + v + "]"
		}
		b.WriteString(k + "=" + v)
	}
	return b.String()
}
