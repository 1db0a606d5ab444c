package main

import (
	"encoding/json"
	"math"
	"os"
	"time"

	"kbroker/bench/broker"
)

// jfloat writes NaN (a missing value) as JSON null; encoding/json refuses NaN.
type jfloat float64

func (f jfloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

type jsonRow struct {
	Case, Metric string
	A, B, Ratio  jfloat
	Pairs        int
	Goal         string `json:",omitempty"`
	Met          *bool  `json:",omitempty"`
}

type jsonReport struct {
	Time     time.Time
	Command  string
	Machine  machine
	A, B     broker.Kind
	Pairs    int
	Summary  []jsonRow
	Loopback []runResult
	Runs     []runResult
}

// writeJSON writes the full result, every run included, for tooling that
// tracks results over time.
func writeJSON(path string, m machine, cmdline string, a, b broker.Kind, pairs int, res results, rows []summaryRow) error {
	rep := jsonReport{Time: time.Now().UTC(), Command: cmdline, Machine: m, A: a, B: b, Pairs: pairs,
		Loopback: sanitize(res.Loopback), Runs: sanitize(res.Runs)}
	for _, r := range rows {
		rep.Summary = append(rep.Summary, jsonRow{r.Case, r.Metric, jfloat(r.A), jfloat(r.B), jfloat(r.Ratio), r.Pairs, r.Goal, r.Met})
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// sanitize zeroes the float fields that are NaN when a /proc read failed or
// a run took no samples, so the per-run records can be encoded.
func sanitize(runs []runResult) []runResult {
	out := make([]runResult, len(runs))
	for i, rr := range runs {
		for _, f := range []*float64{&rr.BrokerCPU, &rr.LoadCPU, &rr.Result.P50us, &rr.Result.P99us,
			&rr.Result.P999us, &rr.Result.RTTp50us, &rr.Result.StreamBytesPerSec, &rr.Result.Seconds} {
			if math.IsNaN(*f) || math.IsInf(*f, 0) {
				*f = 0
			}
		}
		out[i] = rr
	}
	return out
}
