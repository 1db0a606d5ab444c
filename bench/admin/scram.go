package admin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
)

// ScramSpec is the SCRAM handshake rate: full authenticated connections.
type ScramSpec struct {
	Addr           string // a SASL_PLAINTEXT listener
	User, Password string
	Mechanism      string // SCRAM-SHA-256 or SCRAM-SHA-512
	Duration       time.Duration
	Loops          int
}

// ScramResult counts completed handshakes.
type ScramResult struct {
	Spec       ScramSpec
	Handshakes int
	PerSecond  float64
	Ms         []float64 // per handshake: dial to verified server-final
	Failed     int
	FirstErr   string `json:",omitempty"`
}

// ScramHandshakes runs spec.Loops loops that each dial, send ApiVersions,
// SaslHandshake v1 and the two SaslAuthenticate v1 steps of SCRAM, verify
// the server's signature and close. The client keeps its salted-password
// cache between conversations (xdg-go/scram), as one long-lived client
// process would, so the broker's side dominates.
func ScramHandshakes(ctx context.Context, spec ScramSpec) ScramResult {
	res := ScramResult{Spec: spec}
	hash := scram.SHA256
	if spec.Mechanism == "SCRAM-SHA-512" {
		hash = scram.SHA512
	}
	client, err := hash.NewClient(spec.User, spec.Password, "")
	if err != nil {
		res.FirstErr = err.Error()
		return res
	}
	var mu sync.Mutex
	end := time.Now().Add(spec.Duration)
	var wg sync.WaitGroup
	for range max(spec.Loops, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && ctx.Err() == nil {
				t := time.Now()
				err := scramOnce(ctx, spec, client)
				d := ms(time.Since(t))
				mu.Lock()
				if err != nil {
					res.Failed++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
				} else {
					res.Handshakes++
					res.Ms = append(res.Ms, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.PerSecond = float64(res.Handshakes) / spec.Duration.Seconds()
	return res
}

func scramOnce(ctx context.Context, spec ScramSpec, client *scram.Client) error {
	c, err := dialRaw(ctx, spec.Addr, "kbench-scram")
	if err != nil {
		return err
	}
	defer c.Close()
	const timeout = 5 * time.Second
	if _, err := c.Do(kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse(), timeout); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	hreq := kmsg.NewPtrSASLHandshakeRequest()
	hreq.Version = 1
	hreq.Mechanism = spec.Mechanism
	hresp := kmsg.NewPtrSASLHandshakeResponse()
	hresp.Version = 1
	if _, err := c.Do(hreq, hresp, timeout); err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	if hresp.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake error code %d (mechanisms %v)", hresp.ErrorCode, hresp.SupportedMechanisms)
	}
	conv := client.NewConversation()
	msg, err := conv.Step("")
	if err != nil {
		return err
	}
	for step := 0; !conv.Done(); step++ {
		areq := kmsg.NewPtrSASLAuthenticateRequest()
		areq.Version = 1
		areq.SASLAuthBytes = []byte(msg)
		aresp := kmsg.NewPtrSASLAuthenticateResponse()
		aresp.Version = 1
		if _, err := c.Do(areq, aresp, timeout); err != nil {
			return fmt.Errorf("SaslAuthenticate: %w", err)
		}
		if aresp.ErrorCode != 0 {
			msg := ""
			if aresp.ErrorMessage != nil {
				msg = *aresp.ErrorMessage
			}
			return fmt.Errorf("SaslAuthenticate error code %d: %s", aresp.ErrorCode, msg)
		}
		if msg, err = conv.Step(string(aresp.SASLAuthBytes)); err != nil {
			return fmt.Errorf("SCRAM step %d: %w", step, err)
		}
		if step > 3 {
			return fmt.Errorf("SCRAM did not finish")
		}
	}
	if !conv.Valid() {
		return fmt.Errorf("server signature not valid")
	}
	return nil
}
