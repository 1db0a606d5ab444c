package testkit

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// ScrapeMetrics returns the Prometheus text a broker's metrics listener at
// addr serves on /metrics.
func ScrapeMetrics(t testing.TB, addr string) string {
	t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	return string(body)
}
