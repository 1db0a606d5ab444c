package main

// Connecting the admin commands: --bootstrap-server, --command-config (an
// Apache Kafka client properties file) and --timeout become kgo options.
//
// Client properties understood: security.protocol (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL); sasl.mechanism (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512) with sasl.jaas.config (PlainLoginModule or
// ScramLoginModule with username and password); ssl.truststore.location or
// ssl.truststore.certificates (PEM CAs), ssl.keystore.location (PEM file
// with certificate chain and unencrypted key) or
// ssl.keystore.certificate.chain + ssl.keystore.key, and
// ssl.endpoint.identification.algorithm= (empty: no host name check, as
// Kafka); client.id; default.api.timeout.ms. JKS/PKCS12 stores, encrypted
// keys, GSSAPI and OAUTHBEARER are refused with a message rather than
// ignored.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
	"kbroker/internal/auth"
	"kbroker/internal/config"
)

// connFlags are the connection flags every admin command takes.
type connFlags struct {
	bootstrap     string
	commandConfig string
	timeout       time.Duration
	fs            *flag.FlagSet
}

func (c *connFlags) register(fs *flag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.bootstrap, "bootstrap-server", "", "REQUIRED: `host:port`[,host:port…] of the brokers to connect to")
	fs.StringVar(&c.commandConfig, "command-config", "", "`file` of Kafka client properties (security.protocol, sasl.*, ssl.*)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up on the cluster after this `duration`")
}

// connect opens an admin client and a context bounded by --timeout (or
// default.api.timeout.ms of --command-config).
func (c *connFlags) connect() (*admin.Client, context.Context, context.CancelFunc, error) {
	if c.bootstrap == "" {
		return nil, nil, nil, usageError("--bootstrap-server is required")
	}
	props := config.Properties{}
	if c.commandConfig != "" {
		var err error
		if props, err = config.LoadProperties(c.commandConfig); err != nil {
			return nil, nil, nil, fmt.Errorf("--command-config %s: %w", c.commandConfig, err)
		}
	}
	opts, tlsCfg, err := clientOptions(props)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--command-config %s: %w", c.commandConfig, err)
	}
	timeout := c.timeout
	if ms, ok := props["default.api.timeout.ms"]; ok && !c.timeoutGiven() {
		n, err := strconv.Atoi(strings.TrimSpace(ms))
		if err != nil || n <= 0 {
			return nil, nil, nil, fmt.Errorf("--command-config: default.api.timeout.ms=%q is not a positive number", ms)
		}
		timeout = time.Duration(n) * time.Millisecond
	}
	var seeds []string
	for _, s := range strings.Split(c.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	// A server that is not Kafka ends the command at once, with its reason.
	stopped, stop := context.WithCancelCause(context.Background())
	dialer := &kafkaDialer{tlsConfig: tlsCfg, timeout: min(timeout, 10*time.Second), notKafka: func(e *notKafkaError) { stop(e) }}
	opts = append(opts, kgo.SeedBrokers(seeds...), kgo.RetryTimeout(timeout), kgo.Dialer(dialer.dial), kgo.BrokerMaxReadBytes(maxResponseBytes))
	cl, err := admin.New(opts...)
	if err != nil {
		stop(nil)
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(stopped, timeout)
	done := func() { cancel(); stop(nil); cl.Close() }
	// One cheap request first, so an unreachable cluster or refused
	// credentials read as such rather than as the failure of some resource.
	if _, err := cl.ListBrokers(ctx); err != nil {
		done()
		var nk *notKafkaError
		if errors.As(context.Cause(ctx), &nk) {
			return nil, nil, nil, nk
		}
		return nil, nil, nil, c.explain(err, props)
	}
	return cl, ctx, done, nil
}

// explain words a failure to reach or log in to the cluster.
func (c *connFlags) explain(err error, props config.Properties) error {
	proto := strings.ToUpper(props["security.protocol"])
	if strings.HasPrefix(proto, "SASL") {
		mech := props["sasl.mechanism"]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("cannot log in to %s with SASL %s: the broker closed the connection (wrong credentials, or SASL not enabled on that listener): %w", c.bootstrap, mech, err)
		}
		return fmt.Errorf("cannot log in to %s with SASL %s: %w", c.bootstrap, mech, err)
	}
	return fmt.Errorf("cannot reach the cluster at %s: %w", c.bootstrap, err)
}

// timeoutGiven reports whether --timeout was on the command line, where it
// wins over default.api.timeout.ms.
func (c *connFlags) timeoutGiven() bool { return flagGiven(c.fs, "timeout") }

// clientOptions maps Kafka client properties to kgo options, and to the
// TLS configuration to dial with (nil for a plaintext protocol).
func clientOptions(props config.Properties) ([]kgo.Opt, *tls.Config, error) {
	var opts []kgo.Opt
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	} else {
		opts = append(opts, kgo.ClientID("kbroker-admin"))
	}
	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch proto {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	var tlsCfg *tls.Config
	if useTLS {
		var err error
		if tlsCfg, err = tlsConfig(props); err != nil {
			return nil, nil, err
		}
	}
	if useSASL {
		o, err := saslOption(props)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, o)
	}
	return opts, tlsCfg, nil
}

// saslOption builds the SASL mechanism from sasl.mechanism and the
// username/password options of sasl.jaas.config.
func saslOption(props config.Properties) (kgo.Opt, error) {
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mech == "" {
		mech = "GSSAPI" // Kafka's default
	}
	jaas := props["sasl.jaas.config"]
	if jaas == "" {
		return nil, errors.New("sasl.jaas.config is required with a SASL security.protocol")
	}
	module, _, options, err := auth.ParseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	user, pass := options["username"], options["password"]
	if user == "" {
		return nil, fmt.Errorf("sasl.jaas.config: %s needs username and password options", module)
	}
	wantModule := func(suffix string) error {
		if !strings.HasSuffix(module, suffix) {
			return fmt.Errorf("sasl.jaas.config: login module %s does not go with sasl.mechanism=%s (want …%s)", module, mech, suffix)
		}
		return nil
	}
	switch mech {
	case auth.MechanismPlain:
		if err := wantModule("PlainLoginModule"); err != nil {
			return nil, err
		}
		opt, _ := auth.ClientSASL(mech, user, pass)
		return opt, nil
	case auth.MechanismScramSHA256, auth.MechanismScramSHA512:
		if err := wantModule("ScramLoginModule"); err != nil {
			return nil, err
		}
		opt, _ := auth.ClientSASL(mech, user, pass)
		return opt, nil
	}
	return nil, fmt.Errorf("sasl.mechanism %s is not supported (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)", mech)
}

// tlsConfig reads PEM trust and key material as Kafka's PEM stores do.
func tlsConfig(props config.Properties) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := strings.ToUpper(strings.TrimSpace(props[k])); t != "" && t != "PEM" {
			return nil, fmt.Errorf("%s=%s: only PEM stores are supported", k, t)
		}
	}
	caPEM := []byte(props["ssl.truststore.certificates"])
	if loc := props["ssl.truststore.location"]; loc != "" {
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		caPEM = b
	}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("ssl.truststore: no PEM certificate found")
		}
		cfg.RootCAs = pool
	}
	if props["ssl.key.password"] != "" || props["ssl.keystore.password"] != "" {
		return nil, errors.New("encrypted private keys (ssl.key.password, ssl.keystore.password) are not supported; use an unencrypted PEM key")
	}
	certPEM, keyPEM := []byte(props["ssl.keystore.certificate.chain"]), []byte(props["ssl.keystore.key"])
	if loc := props["ssl.keystore.location"]; loc != "" {
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		certPEM, keyPEM = b, b
	}
	if len(certPEM) > 0 || len(keyPEM) > 0 {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if alg, set := props["ssl.endpoint.identification.algorithm"]; set && strings.TrimSpace(alg) == "" {
		// Kafka's empty algorithm: verify the chain but not the host name.
		auth.VerifyChainOnly(cfg)
	}
	return cfg, nil
}
