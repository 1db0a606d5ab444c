package main

import (
	"slices"
	"testing"
	"time"
)

func TestParseISODurationAsJava(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H":         time.Hour,
		"PT1H30M":      90 * time.Minute,
		"P1D":          24 * time.Hour,
		"P2DT3H4M5S":   2*24*time.Hour + 3*time.Hour + 4*time.Minute + 5*time.Second,
		"pt0.5s":       500 * time.Millisecond,
		"PT-1.5S":      -1500 * time.Millisecond,
		"-PT10M":       -10 * time.Minute,
		"PT10M-30S":    9*time.Minute + 30*time.Second, // Java lets each part have a sign
		"PT0S":         0,
		"P0DT0H0M0.0S": 0,
	} {
		got, err := parseISODuration(in)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "1h", "PT1H2H", "P1W", "T1H"} {
		if d, err := parseISODuration(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, d)
		}
	}
}

func TestParseDateTimeAsKafka(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	want := time.Date(2026, 1, 31, 8, 0, 0, 250e6, time.UTC)
	for in, loc := range map[string]*time.Location{
		"2026-01-31T08:00:00.250":       time.UTC,
		"2026-01-31T08:00:00.250Z":      paris,
		"2026-01-31T09:00:00.250+01:00": time.UTC,
		"2026-01-31T09:00:00.250+0100":  time.UTC,
		"2026-01-31T03:00:00.250-05":    time.UTC,
		"2026-01-31T09:00:00.250":       paris, // no zone: the local one
	} {
		got, err := parseDateTime(in, loc)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s in %s = %v, %v; want %v", in, loc, got, err, want)
		}
	}
	for _, bad := range []string{"2026-01-31", "2026-01-31 08:00:00", "2026-13-01T00:00:00.000", "yesterdayT00:00"} {
		if got, err := parseDateTime(bad, time.UTC); err == nil {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
}

func TestParseTopicArg(t *testing.T) {
	tps, all, err := parseTopicArg("orders:0,2")
	if err != nil || all || len(tps) != 2 || tps[1].Topic != "orders" || tps[1].Partition != 2 {
		t.Fatalf("orders:0,2 = %v %v %v", tps, all, err)
	}
	if _, all, err := parseTopicArg("orders"); err != nil || !all {
		t.Fatalf("orders: all=%v %v", all, err)
	}
	for _, bad := range []string{"orders:", "orders:x", "orders:-1", ":0", "a:0:1"} {
		if _, _, err := parseTopicArg(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := joinOptionalValues([]string{"--list", "--state", "Stable", "--type", "--group", "g", "--state=x"}, "state", "type"); !slices.Equal(got,
		[]string{"--list", "--state=Stable", "--type", "--group", "g", "--state=x"}) {
		t.Fatalf("joinOptionalValues = %q", got)
	}
}
