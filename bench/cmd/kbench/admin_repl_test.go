package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A failed R1–R3 run holds NaN; encoding/json refuses NaN, and the admin
// suite's -json file would then be lost whole. jsonSafe must turn it into
// null and keep every other field.
func TestJSONSafeWritesNaNAsNull(t *testing.T) {
	runs := []r3Run{{FetchMBps: 300, CatchupMBps: math.NaN(), LogBytes: 42, Err: "boom"}}
	if _, err := json.Marshal(runs); err == nil {
		t.Fatal("encoding/json accepted NaN; the test no longer shows why jsonSafe exists")
	}
	data, err := json.Marshal(jsonSafe(runs))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, want := range []string{`"CatchupMBps":null`, `"FetchMBps":300`, `"LogBytes":42`, `"Err":"boom"`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
}
