package config

import (
	"testing"
	"time"
)

// kbroker.request.read.timeout.ms: two minutes unless set, 0 or -1 turn
// the bound off, anything below -1 stops the broker from starting.
func TestRequestReadTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 2 * time.Minute, "5000": 5 * time.Second, "0": 0, "-1": 0} {
		props := Properties{"log.dirs": t.TempDir()}
		if v != "" {
			props[RequestReadTimeoutKey] = v
		}
		b, err := NewBroker(props)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := b.RequestReadTimeout(); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
	if _, err := NewBroker(Properties{"log.dirs": t.TempDir(), RequestReadTimeoutKey: "-2"}); err == nil {
		t.Fatal("-2 accepted")
	}
}
