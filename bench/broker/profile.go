package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// CPUProfile fetches a CPU profile of seconds from the broker's pprof
// endpoint (metrics.listener, StartOptions.Metrics) and writes it to path.
// It blocks for the profile's length.
func (b *Broker) CPUProfile(ctx context.Context, seconds int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	return b.Profile(ctx, fmt.Sprintf("profile?seconds=%d", seconds), path)
}

// Profile fetches /debug/pprof/<which> from the broker's pprof endpoint
// ("heap", "goroutine", "profile?seconds=10", …) and writes it to path.
func (b *Broker) Profile(ctx context.Context, which, path string) error {
	if b.MetricsAddr == "" {
		return fmt.Errorf("broker started without a metrics listener")
	}
	url := fmt.Sprintf("http://%s/debug/pprof/%s", b.MetricsAddr, which)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("pprof %s: %s: %s", which, resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
