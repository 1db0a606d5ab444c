package main

import (
	"reflect"
	"testing"
)

func TestAddConfigFollowsKafkasSplitting(t *testing.T) {
	for in, want := range map[string][]string{
		"a=1,b=2":                                      {"a", "1", "b", "2"},
		"cleanup.policy=[compact,delete]":              {"cleanup.policy", "compact,delete"},
		"k = v , k2=[x, y]":                            {"k", "v", "k2", "x, y"},
		"ssl.endpoint.identification.algorithm=":       {"ssl.endpoint.identification.algorithm", ""},
		"SCRAM-SHA-256=[iterations=8192,password=p=w]": {"SCRAM-SHA-256", "iterations=8192,password=p=w"},
	} {
		var got configAdds
		if err := parseAddConfig(in, &got); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		var flat []string
		for _, k := range got.keys {
			flat = append(flat, k, got.values[k])
		}
		if !reflect.DeepEqual(flat, want) {
			t.Fatalf("%q → %q, want %q", in, flat, want)
		}
	}
	for _, bad := range []string{"a", "a=b=c", "a b=c"} {
		if err := parseAddConfig(bad, &configAdds{}); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for v, want := range map[float64]string{1024: "1024.0", 20971520: "2.097152E7", 0.5: "0.5", 1e-4: "1.0E-4", 10000000: "1.0E7", 9999999: "9999999.0", 0: "0.0"} {
		if got := javaDouble(v); got != want {
			t.Fatalf("javaDouble(%v) = %s, want %s", v, got, want)
		}
	}
}

// Found by FuzzAddConfig: "=v" passed as a config with an empty name,
// which the broker can only refuse.
func TestAddConfigRefusesEmptyKey(t *testing.T) {
	for _, in := range []string{"=v", " = v", "a=1,=2", "=[x,y]"} {
		if err := parseAddConfig(in, &configAdds{}); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}
