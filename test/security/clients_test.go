package security

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"

	"kbroker/internal/testkit"
)

// xdgSCRAM is sarama's SCRAM client on github.com/xdg-go/scram.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	c, err := x.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}
func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

func saramaConfig(mech sarama.SASLMechanism, user, pass string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake = true, true
	cfg.Net.SASL.Mechanism, cfg.Net.SASL.User, cfg.Net.SASL.Password = mech, user, pass
	switch mech {
	case sarama.SASLTypeSCRAMSHA256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA256} }
	case sarama.SASLTypeSCRAMSHA512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: scram.SHA512} }
	}
	cfg.Producer.Return.Successes = true
	cfg.Metadata.Retry.Max = 1
	return cfg
}

func TestSaramaSASL(t *testing.T) {
	addr := start(t, saslProps(nil)).Addr()
	for _, mech := range []sarama.SASLMechanism{sarama.SASLTypePlaintext, sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512} {
		t.Run(string(mech), func(t *testing.T) {
			topic := "sarama-" + strings.ToLower(string(mech))
			p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig(mech, "alice", alicePass))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("hi")}); err != nil {
				t.Fatal(err)
			}
			c, err := sarama.NewConsumer([]string{addr}, saramaConfig(mech, "alice", alicePass))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			select {
			case m := <-pc.Messages():
				if string(m.Value) != "hi" {
					t.Fatalf("got %q", m.Value)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no message")
			}
		})
	}
	if _, err := sarama.NewClient([]string{addr}, saramaConfig(sarama.SASLTypeSCRAMSHA256, "alice", "wrong")); err == nil {
		t.Fatal("sarama authenticated with a wrong password")
	}
}

func runKcat(t *testing.T, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.KcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestKcatSASL(t *testing.T) {
	testkit.KcatPath(t)
	addr := start(t, saslProps(nil)).Addr()
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			sasl := []string{"-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=" + alicePass}
			topic := "kcat-" + strings.ToLower(mech)
			if out, err := runKcat(t, "one\ntwo\n", append(sasl, "-t", topic, "-P")...); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			out, err := runKcat(t, "", append(sasl, "-t", topic, "-C", "-o", "beginning", "-e", "-q")...)
			if err != nil || out != "one\ntwo\n" {
				t.Fatalf("kcat -C = %q, %v", out, err)
			}
		})
	}
	out, err := runKcat(t, "", "-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
		"-X", "sasl.username=alice", "-X", "sasl.password=wrong", "-L", "-m", "5")
	if err == nil || !strings.Contains(out, "Authentication failed") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
	}
}

// kafkajs (test/interop/node) authenticates with PLAIN and SCRAM and
// produces; a wrong password fails with SASL authentication failed.
func TestKafkajsSASL(t *testing.T) {
	node, err := exec.LookPath("node")
	script, _ := filepath.Abs(filepath.Join("..", "interop", "node", "sasl.js"))
	if _, statErr := os.Stat(filepath.Join("..", "interop", "node", "node_modules", "kafkajs", "package.json")); err != nil || statErr != nil {
		if os.Getenv("CI") == "" {
			t.Skip("node or kafkajs missing (npm ci --prefix test/interop/node); set CI=1 to make this a failure")
		}
		t.Fatalf("node or kafkajs missing under CI: %v %v", err, statErr)
	}
	addr := start(t, saslProps(nil)).Addr()
	for _, c := range []struct {
		mech, pass string
		ok         bool
	}{{"plain", alicePass, true}, {"scram-sha-256", alicePass, true}, {"scram-sha-512", alicePass, true}, {"scram-sha-256", "wrong", false}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, node, script, addr, c.mech, "alice", c.pass, "kjs-"+c.mech).Output()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.mech, err, out)
		}
		var res struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %v\n%s", c.mech, err, out)
		}
		if res.OK != c.ok || (!c.ok && !strings.Contains(res.Error, "SASL")) {
			t.Errorf("%s with password ok=%v: %+v", c.mech, c.ok, res)
		}
	}
}
