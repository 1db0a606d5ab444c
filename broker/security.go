package broker

// Listener security, authorization and secrets: per listener the TLS config
// (SSL, SASL_SSL) and the SASL mechanisms (SASL_PLAINTEXT, SASL_SSL); the
// ACL authorizer kept current with the store; the password encoder; the
// bootstrap SCRAM users. TLS and SASL settings are read from the broker's
// effective configs (listener-scoped keys first), so dynamic changes to them
// apply to new connections (listeners.go).

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"kbroker/internal/api"
	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

// security is what startSecurity hands to the API server and the wire.
type security struct {
	specs     []wire.ListenerSpec
	authz     *api.Authorization
	maxReauth time.Duration
}

// passwordEncoder is the encoder of dynamic PASSWORD configs, or nil when
// password.encoder.secret is not set.
func (b *Broker) passwordEncoder() (*auth.PasswordEncoder, error) {
	secret := strings.TrimSpace(b.cfg.Props["password.encoder.secret"])
	if secret == "" {
		return nil, nil
	}
	return auth.NewPasswordEncoder(secret)
}

func (b *Broker) startSecurity(ctx context.Context) (*security, error) {
	props := b.cfg.Props
	sec := &security{}
	var err error
	if ms, _ := strconv.ParseInt(config.BrokerValue("connections.max.reauth.ms", config.Layers{Static: props}), 10, 64); ms > 0 {
		sec.maxReauth = time.Duration(ms) * time.Millisecond
	}
	if sec.specs, err = b.listenerSpecs(); err != nil {
		return nil, err
	}
	if sec.authz, err = b.startAuthorizer(); err != nil {
		return nil, err
	}
	if err := b.bootstrapScram(ctx); err != nil {
		return nil, err
	}
	return sec, nil
}

// listenerSecurity builds one listener's TLS and SASL setup from props.
func (b *Broker) listenerSecurity(props config.Properties, l config.Listener) (wire.ListenerSecurity, error) {
	var sec wire.ListenerSecurity
	var err error
	switch l.SecurityProtocol {
	case "PLAINTEXT":
	case "SSL":
		sec.TLS, err = listenerTLS(props, l.Name)
	case "SASL_PLAINTEXT":
		sec.SASL, err = b.listenerSASL(props, l.Name)
	case "SASL_SSL":
		if sec.TLS, err = listenerTLS(props, l.Name); err == nil {
			sec.SASL, err = b.listenerSASL(props, l.Name)
		}
	default:
		err = fmt.Errorf("unsupported security protocol %s", l.SecurityProtocol)
	}
	if err != nil {
		return sec, fmt.Errorf("listener %s (%s): %w", l.Name, l.SecurityProtocol, err)
	}
	return sec, nil
}

// listenerSASL builds the listener's mechanisms: PLAIN users from its JAAS
// line, SCRAM credentials from the metadata store.
func (b *Broker) listenerSASL(props config.Properties, listener string) (*auth.Mechanisms, error) {
	v, _ := config.ListenerValue(props, listener, "sasl.enabled.mechanisms")
	enabled := config.SplitList(v)
	var plain auth.PlainUsers
	if slices.Contains(enabled, auth.MechanismPlain) {
		jaas, ok := auth.JAASFor(props, listener, auth.MechanismPlain)
		if !ok {
			return nil, fmt.Errorf("PLAIN is enabled but neither %s nor sasl.jaas.config is set", auth.JAASKey(listener, auth.MechanismPlain))
		}
		var err error
		if plain, err = auth.PlainUsersFromJAAS(jaas); err != nil {
			return nil, err
		}
	}
	store := b.store
	lookup := func(user, mechanism string) (auth.Credential, bool) {
		return store.Snapshot().ScramCredential(user, mechanism)
	}
	m, err := auth.NewMechanisms(enabled, plain, lookup)
	if err != nil {
		return nil, err
	}
	if len(m.Enabled()) == 0 {
		return nil, errors.New("sasl.enabled.mechanisms is empty")
	}
	return m, nil
}

// listenerTLS builds the server TLS config of a listener from PEM
// (ssl.keystore.type=PEM): the certificate chain and key from
// ssl.keystore.location or inline ssl.keystore.certificate.chain and
// ssl.keystore.key; client certificates per ssl.client.auth, verified
// against ssl.truststore.location or ssl.truststore.certificates.
func listenerTLS(props config.Properties, listener string) (*tls.Config, error) {
	get := func(key string) string { v, _ := config.ListenerValue(props, listener, key); return v }
	chainPEM, keyPEM, password, err := keyStorePEM(get)
	if err != nil {
		return nil, err
	}
	cert, err := pemKeyPair(chainPEM, keyPEM, password)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch get("ssl.client.auth") {
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		return cfg, nil
	}
	trusted, err := trustStorePEM(get)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(trusted) {
		return nil, errors.New("ssl.client.auth needs CA certificates in ssl.truststore.location or ssl.truststore.certificates (PEM)")
	}
	cfg.ClientCAs = pool
	return cfg, nil
}

// keyStorePEM is the key store of a listener, get reading its keys: the
// PEM file at ssl.keystore.location (chain and key), else
// ssl.keystore.certificate.chain and ssl.keystore.key, with the key's
// password (ssl.key.password, else ssl.keystore.password).
func keyStorePEM(get func(key string) string) (chainPEM, keyPEM []byte, password string, err error) {
	if loc := get("ssl.keystore.location"); loc != "" {
		raw, err := os.ReadFile(loc)
		if err != nil {
			return nil, nil, "", fmt.Errorf("ssl.keystore.location: %w", err)
		}
		chainPEM, keyPEM = raw, raw
	} else {
		chainPEM, keyPEM = []byte(get("ssl.keystore.certificate.chain")), []byte(get("ssl.keystore.key"))
	}
	password = get("ssl.key.password")
	if password == "" {
		password = get("ssl.keystore.password")
	}
	return chainPEM, keyPEM, password, nil
}

// trustStorePEM is the trust store of a listener, get reading its keys:
// the PEM file at ssl.truststore.location, else
// ssl.truststore.certificates.
func trustStorePEM(get func(key string) string) ([]byte, error) {
	if loc := get("ssl.truststore.location"); loc != "" {
		trusted, err := os.ReadFile(loc)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		return trusted, nil
	}
	return []byte(get("ssl.truststore.certificates")), nil
}

// pemKeyPair reads the CERTIFICATE blocks of chainPEM and the private key
// of keyPEM: PKCS#8, PKCS#1 or SEC 1, unencrypted or with legacy PEM
// encryption (Proc-Type: 4,ENCRYPTED) under password. Encrypted PKCS#8
// ("ENCRYPTED PRIVATE KEY", Kafka's usual form) is not supported: Go's
// standard library cannot decrypt it.
func pemKeyPair(chainPEM, keyPEM []byte, password string) (tls.Certificate, error) {
	var cert tls.Certificate
	for rest := chainPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, block.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return cert, errors.New("no certificate found: set ssl.keystore.location to a PEM file with the certificate chain and key, or ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	for rest := keyPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		key, err := parsePrivateKey(block, password)
		if err != nil {
			return cert, err
		}
		if err := keyMatchesLeaf(cert.Certificate[0], key); err != nil {
			return cert, err
		}
		cert.PrivateKey = key
		return cert, nil
	}
	return cert, errors.New("no private key found in ssl.keystore.location or ssl.keystore.key")
}

// keyMatchesLeaf checks that key is the private half of the first
// certificate's public key, so a mismatched pair fails when it is
// configured rather than at every client's handshake.
func keyMatchesLeaf(leafDER []byte, key crypto.PrivateKey) error {
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return fmt.Errorf("cannot parse the certificate: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return errors.New("the private key cannot sign")
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return errors.New("the private key does not match the certificate's public key")
	}
	return nil
}

func parsePrivateKey(block *pem.Block, password string) (crypto.PrivateKey, error) {
	der := block.Bytes
	if block.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, errors.New("encrypted PKCS#8 private keys are not supported; decrypt the key (openssl pkcs8) or use legacy PEM encryption (openssl rsa -aes256)")
	}
	//lint:ignore SA1019 legacy PEM encryption is what ssl.key.password can still open without extra libraries.
	if x509.IsEncryptedPEMBlock(block) { //nolint:staticcheck
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		var err error
		if der, err = x509.DecryptPEMBlock(block, []byte(password)); err != nil { //nolint:staticcheck
			return nil, errors.New("ssl.key.password does not decrypt the private key")
		}
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("cannot parse the private key (want PKCS#8, PKCS#1 or SEC 1 PEM)")
}

// startAuthorizer enables the built-in authorizer when
// authorizer.class.name names it, and keeps its ACLs in step with the store.
func (b *Broker) startAuthorizer() (*api.Authorization, error) {
	props := b.cfg.Props
	if !auth.IsBuiltinAuthorizerClass(props["authorizer.class.name"]) {
		return nil, nil // empty: validated by the catalog
	}
	superUsers, err := auth.ParseSuperUsers(props["super.users"])
	if err != nil {
		return nil, err
	}
	allow := strings.EqualFold(strings.TrimSpace(props["allow.everyone.if.no.acl.found"]), "true")
	a := api.NewAuthorization(superUsers, allow)
	b.store.OnChange(func(ev meta.Event) {
		if ev.Full || ev.ChangedACLs() {
			a.SetACLs(ev.Cur.AllACLs())
		}
	})
	a.SetACLs(b.store.Snapshot().AllACLs())
	return a, nil
}

// bootstrapScram creates the kbroker.scram.bootstrap.users credentials
// that do not exist yet, so a new cluster has an admin.
func (b *Broker) bootstrapScram(ctx context.Context) error {
	v := b.cfg.Props["kbroker.scram.bootstrap.users"]
	if strings.TrimSpace(v) == "" {
		return nil
	}
	users, err := auth.ParseScramBootstrap(v)
	if err != nil {
		return fmt.Errorf("kbroker.scram.bootstrap.users: %w", err)
	}
	for _, u := range users {
		wrote, err := b.store.AlterScram(ctx, u.Name, meta.ScramChange{Upserts: []auth.Credential{u.Credential}, IfAbsent: true})
		if err != nil {
			return err
		}
		if wrote {
			b.log.Info("created bootstrap SCRAM user", "user", u.Name, "mechanism", u.Credential.Mechanism)
		}
	}
	return nil
}
