package broker

// Broker-to-broker clients: how this broker reaches the others for replica
// fetches, transaction markers and KIP-890 partition checks. As Kafka does,
// they go to the inter-broker listener (inter.broker.listener.name, else the
// listener named after security.inter.broker.protocol) and speak its
// security protocol with this broker's own settings for that listener: its
// trust store checks the other broker's certificate, its key store is the
// client certificate an ssl.client.auth listener asks for, and SASL uses
// sasl.mechanism.inter.broker.protocol with the username and password of
// the listener's JAAS line. The other broker then authorizes the principal
// these credentials give (CLUSTER_ACTION on the cluster for a follower's
// Fetch, OffsetForLeaderEpoch and WriteTxnMarkers).
//
// The options are built once at startup, from the configs in effect then;
// a dynamic change to them applies to the inter-broker clients at the next
// restart.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/auth"
	"kbroker/internal/cluster"
	"kbroker/internal/config"
	"kbroker/internal/meta"
)

// interBroker is the inter-broker listener and the client options that
// reach it on the other brokers.
type interBroker struct {
	listener string    // upper-case listener name
	protocol string    // its security protocol here; the other brokers' must match
	opts     []kgo.Opt // TLS and SASL; none for PLAINTEXT
	log      *slog.Logger
}

// newInterBroker resolves the inter-broker listener and builds the options
// of its clients. A configuration Kafka refuses (both listener keys set, an
// inter-broker listener this broker does not advertise, a SASL mechanism
// that is not enabled on the listener) is a startup error; so is one
// kbroker cannot serve (GSSAPI, missing credentials, unreadable key
// material), for a broker in a cluster only: a single broker never dials
// another.
func (b *Broker) newInterBroker() (*interBroker, error) {
	props := b.configs.BrokerProps(b.store.Snapshot())
	ib := &interBroker{log: b.loggers.Logger("kbroker.interbroker")}
	var err error
	ib.listener, err = interBrokerListener(props, b.cfg.Listeners)
	if err != nil {
		return nil, err
	}
	if err := checkAdvertisesInterBroker(ib.listener, b.cfg.AdvertisedListeners); err != nil {
		return nil, err
	}
	if _, single := b.member.(*cluster.Local); single {
		return ib, nil
	}
	i := slices.IndexFunc(b.cfg.Listeners, func(l config.Listener) bool { return l.Name == ib.listener })
	if i < 0 {
		// Advertised but not bound here (Kafka refuses advertised names
		// that are not among listeners): no settings to reach it with.
		return nil, fmt.Errorf("inter.broker.listener.name %s is advertised but is not one of this broker's listeners", ib.listener)
	}
	ib.protocol = b.cfg.Listeners[i].SecurityProtocol
	if ib.opts, err = interBrokerOptions(props, ib.listener, ib.protocol); err != nil {
		return nil, fmt.Errorf("inter-broker listener %s (%s): %w", ib.listener, ib.protocol, err)
	}
	return ib, nil
}

// interBrokerListener is Kafka's interBrokerListenerName:
// inter.broker.listener.name, else the listener named as
// security.inter.broker.protocol (PLAINTEXT by default). Setting both is
// Kafka's ConfigException. kbroker keeps one leniency of its own: with
// neither set and no listener of that name, the first listener.
func interBrokerListener(props config.Properties, listeners []config.Listener) (string, error) {
	name, named := props["inter.broker.listener.name"]
	name = strings.ToUpper(strings.TrimSpace(name))
	_, protocolSet := props["security.inter.broker.protocol"]
	if named && name != "" {
		if protocolSet {
			return "", errors.New("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
		}
		return name, nil
	}
	name = strings.ToUpper(config.BrokerValue("security.inter.broker.protocol", config.Layers{Static: props}))
	if !protocolSet && len(listeners) > 0 && !slices.ContainsFunc(listeners, func(l config.Listener) bool { return l.Name == name }) {
		return listeners[0].Name, nil
	}
	return name, nil
}

// checkAdvertisesInterBroker refuses an inter-broker listener that is not
// among the advertised ones, with Kafka's message (KafkaConfig's
// validateValues): the other brokers could never reach this one on it, nor
// it them.
func checkAdvertisesInterBroker(listener string, advertised []config.Listener) error {
	var names []string
	for _, l := range advertised {
		if l.Name == listener {
			return nil
		}
		names = append(names, l.Name)
	}
	return fmt.Errorf("inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are %s", strings.Join(names, ","))
}

// interBrokerOptions are the TLS and SASL options of a client of the
// listener, read from this broker's settings for it (listener-scoped keys
// first).
func interBrokerOptions(props config.Properties, listener, protocol string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if protocol == "SSL" || protocol == "SASL_SSL" {
		cfg, err := interBrokerTLS(props, listener)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
		mech, err := interBrokerSASL(props, listener)
		if err != nil {
			return nil, err
		}
		opts = append(opts, mech)
	}
	return opts, nil
}

// interBrokerSASL is the SASL option of sasl.mechanism.inter.broker.protocol
// with the broker's own username and password: the options of the JAAS line
// of the listener and mechanism, else of sasl.jaas.config (auth.JAASFor).
// No value read here is ever put in an error or a log.
func interBrokerSASL(props config.Properties, listener string) (kgo.Opt, error) {
	mech := strings.ToUpper(config.BrokerValue("sasl.mechanism.inter.broker.protocol", config.Layers{Static: props}))
	switch mech {
	case auth.MechanismPlain, auth.MechanismScramSHA256, auth.MechanismScramSHA512:
	default:
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol is %s, which kbroker does not implement: set it to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	enabled, _ := config.ListenerValue(props, listener, "sasl.enabled.mechanisms")
	if !slices.Contains(config.SplitList(enabled), mech) {
		return nil, errors.New("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication")
	}
	jaas, ok := auth.JAASFor(props, listener, mech)
	if !ok {
		return nil, fmt.Errorf("the broker's own %s credentials: set %s (or sasl.jaas.config) with username and password options", mech, auth.JAASKey(listener, mech))
	}
	module, _, options, err := auth.ParseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", auth.JAASKey(listener, mech), err)
	}
	want := auth.ScramLoginModule
	if mech == auth.MechanismPlain {
		want = auth.PlainLoginModule
	}
	if module != want {
		return nil, fmt.Errorf("the JAAS line for %s names login module %s, want %s", mech, module, want)
	}
	user, pass := options["username"], options["password"]
	if user == "" || pass == "" {
		return nil, fmt.Errorf("the JAAS line for %s has no username and password options: the broker's own credentials for inter-broker connections", mech)
	}
	opt, _ := auth.ClientSASL(mech, user, pass) // mech was checked above
	return opt, nil
}

// interBrokerTLS is the client TLS config of the listener, from the PEM
// stores its server side reads (listenerTLS): the trust store's CAs verify
// the other broker's certificate (the system's when none is set, as the
// JVM's default trust store), the key store is the client certificate, sent
// when the other broker asks for one. ssl.endpoint.identification.algorithm
// https (the default) checks the certificate names the address dialed; empty
// checks the chain only, as Kafka.
func interBrokerTLS(props config.Properties, listener string) (*tls.Config, error) {
	get := func(key string) string { v, _ := config.ListenerValue(props, listener, key); return v }
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	trusted, err := trustStorePEM(get)
	if err != nil {
		return nil, err
	}
	if len(trusted) > 0 {
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(trusted) {
			return nil, errors.New("the trust store (ssl.truststore.location or ssl.truststore.certificates) has no PEM certificate")
		}
	}
	chainPEM, keyPEM, password, err := keyStorePEM(get)
	if err != nil {
		return nil, err
	}
	if len(chainPEM) > 0 {
		cert, err := pemKeyPair(chainPEM, keyPEM, password)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	alg, _ := config.ListenerValue(props, listener, "ssl.endpoint.identification.algorithm")
	switch {
	case strings.EqualFold(alg, "https"):
		// Go's default verification: the chain and the host name (kgo sets
		// ServerName to the host it dials).
	case alg == "":
		auth.VerifyChainOnly(cfg)
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %s is not supported (https, or empty for none)", alg)
	}
	return cfg, nil
}

// endpoint is the inter-broker endpoint of a live broker.
func (ib *interBroker) endpoint(snap *meta.Snapshot, id int32) (meta.Endpoint, error) {
	for _, br := range snap.LiveBrokers() {
		if br.ID != id {
			continue
		}
		ep, ok := br.Endpoint(ib.listener)
		if !ok {
			return ep, fmt.Errorf("broker %d has no %s listener, the inter-broker listener", id, ib.listener)
		}
		if ep.Protocol != ib.protocol {
			return ep, fmt.Errorf("broker %d's inter-broker listener %s is %s, this broker's is %s", id, ib.listener, ep.Protocol, ib.protocol)
		}
		return ep, nil
	}
	return meta.Endpoint{}, fmt.Errorf("broker %d, the partition's leader, is not live", id)
}

// newClient is a client of broker id at addr, its inter-broker endpoint.
func (ib *interBroker) newClient(id int32, addr string) (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.WithLogger(&interBrokerLogger{log: ib.log, peer: id, listener: ib.listener})}, ib.opts...)
	return kgo.NewClient(opts...)
}

// interBrokerLogger brings to the broker's log what an operator must see of
// its clients' connections: another broker refusing its credentials or its
// certificate (a misconfiguration that keeps this broker out of the ISR),
// as errors at most once per interval per kind. The rest of kgo's
// messages, a broker being restarted included, stay at debug level.
type interBrokerLogger struct {
	log      *slog.Logger
	peer     int32
	listener string

	mu     sync.Mutex
	logged map[string]time.Time
}

// interBrokerLogInterval spaces out repeats of one failure: a follower
// retries every replica.fetch.backoff.ms.
const interBrokerLogInterval = 30 * time.Second

// Level asks kgo for its debug messages only while the broker's logger
// shows them: kgo logs every request at debug level.
func (l *interBrokerLogger) Level() kgo.LogLevel {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelWarn
}

func (l *interBrokerLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var err error
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, _ := keyvals[i].(string); k == "err" {
			err, _ = keyvals[i+1].(error)
		}
	}
	what := ""
	switch {
	case level == kgo.LogLevelError && strings.Contains(msg, "sasl"):
		what = "authentication to another broker failed"
	case level <= kgo.LogLevelWarn && level != kgo.LogLevelNone && isTLSFailure(err):
		what = "TLS handshake with another broker failed"
	}
	if what == "" || !l.due(what) {
		l.log.Debug("inter-broker client: "+msg, append([]any{"broker", l.peer}, keyvals...)...)
		return
	}
	l.log.Error(what+" over the inter-broker listener", "broker", l.peer, "listener", l.listener, "err", err)
}

// due reports whether a failure of this kind may be logged now.
func (l *interBrokerLogger) due(what string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.logged[what]; ok && time.Since(last) < interBrokerLogInterval {
		return false
	}
	if l.logged == nil {
		l.logged = map[string]time.Time{}
	}
	l.logged[what] = time.Now()
	return true
}

// isTLSFailure reports whether a dial failed in the TLS handshake: a
// certificate this broker does not trust, or an alert from the other side
// (one refusing this broker's certificate, or asking for one it lacks).
func isTLSFailure(err error) bool {
	if err == nil {
		return false
	}
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	var header tls.RecordHeaderError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	return errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &header) ||
		errors.As(err, &unknown) || errors.As(err, &host)
}
