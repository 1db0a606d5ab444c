package config

import (
	"fmt"
	"strings"
)

// securityDefs are the authentication, TLS, authorization and secret
// configs (Kafka's names and types). PASSWORD-typed keys are sensitive:
// never returned by DescribeConfigs, never logged, and stored encrypted
// with password.encoder.secret when set dynamically. Every listener-level
// key may also be written with the listener.name.<listener>. prefix (and
// sasl.jaas.config with listener.name.<listener>.<mechanism>.), which
// ListenerDef resolves.
func securityDefs() []*Def {
	return []*Def{
		{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "SCRAM-SHA-256,SCRAM-SHA-512", Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Check: subsetOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
			Doc:   "SASL mechanisms enabled on SASL listeners. kbroker implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (no GSSAPI, so its default is the two SCRAM mechanisms rather than Kafka's GSSAPI); PLAIN needs a PlainLoginModule sasl.jaas.config with user_<name>=\"<password>\" options."},
		{Name: "sasl.jaas.config", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "JAAS login module line; for PLAIN its user_<name>=\"<password>\" options are the users. Usually written listener.name.<listener>.plain.sasl.jaas.config."},
		{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", Check: atLeast(0), Mode: ReadOnly,
			Doc: "SASL session lifetime (KIP-368): clients re-authenticate before it ends or their connection is closed. 0: sessions never expire."},
		{Name: "ssl.keystore.type", Type: TypeString, Default: "PEM", Check: oneOf("PEM"), Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Key store format. kbroker reads PEM only (Kafka's default is JKS)."},
		{Name: "ssl.keystore.location", Type: TypeString, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "PEM file with the broker's certificate chain and private key."},
		{Name: "ssl.keystore.password", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Key store password (for PEM, the key's password when ssl.key.password is not set)."},
		{Name: "ssl.key.password", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Password of an encrypted private key (legacy PEM encryption; encrypted PKCS#8 keys are not supported)."},
		{Name: "ssl.keystore.certificate.chain", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "The certificate chain in PEM, inline instead of ssl.keystore.location."},
		{Name: "ssl.keystore.key", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "The private key in PEM, inline instead of ssl.keystore.location."},
		{Name: "ssl.truststore.type", Type: TypeString, Default: "PEM", Check: oneOf("PEM"), Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Trust store format. kbroker reads PEM only."},
		{Name: "ssl.truststore.location", Type: TypeString, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "PEM file of the CA certificates that client certificates must chain to."},
		{Name: "ssl.truststore.password", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Trust store password (unused for PEM)."},
		{Name: "ssl.truststore.certificates", Type: TypePassword, NoDefault: true, Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "The trusted CA certificates in PEM, inline instead of ssl.truststore.location."},
		{Name: "ssl.client.auth", Type: TypeString, Default: "none", Check: oneOf("required", "requested", "none"), Mode: PerBroker, AppliedBy: ApplyListenerSecurity,
			Doc: "Client certificates on SSL listeners: required, requested (verified when sent) or none."},
		{Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT", Check: oneOf("DEFAULT"), Mode: ReadOnly,
			Doc: "How a certificate's distinguished name becomes a principal; kbroker supports DEFAULT only (User:<RFC 2253 DN>)."},
		{Name: "authorizer.class.name", Type: TypeString, Default: "", Check: checkAuthorizerClass, Mode: ReadOnly,
			Doc: "Empty: no authorization. org.apache.kafka.metadata.authorizer.StandardAuthorizer (or the older kafka.security.authorizer.AclAuthorizer) enables kbroker's built-in ACL authorizer."},
		{Name: "super.users", Type: TypeString, Default: "", Mode: ReadOnly,
			Doc: "Principals allowed everything, as User:Bob;User:Alice."},
		{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", Mode: ReadOnly,
			Doc: "Allow an action on a resource that has no ACL at all."},
		{Name: "password.encoder.secret", Type: TypePassword, NoDefault: true, Mode: ReadOnly,
			Doc: "Secret from which the key that encrypts dynamic password configs at rest is derived; without it they cannot be set."},
		{Name: "password.encoder.old.secret", Type: TypePassword, NoDefault: true, Mode: ReadOnly,
			Doc: "The previous password.encoder.secret, to decode values stored under it."},
		{Name: "kbroker.scram.bootstrap.users", Type: TypePassword, NoDefault: true, Mode: ReadOnly,
			Doc: "SCRAM users created at startup when they have no credential yet, in kafka-storage --add-scram syntax, separated by ';': SCRAM-SHA-256=[name=admin,password=secret]."},
		requestReadTimeoutDef(),
	}
}

func checkAuthorizerClass(v string) error {
	v = strings.TrimSpace(v)
	switch v {
	case "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer":
		return nil
	}
	return fmt.Errorf("kbroker has only its built-in authorizer (org.apache.kafka.metadata.authorizer.StandardAuthorizer)")
}

// listenerPrefix is how listener-level keys are scoped to one listener.
const listenerPrefix = "listener.name."

// ListenerDef finds the definition behind a listener-scoped key
// (listener.name.<listener>.<key>, or for sasl.jaas.config
// listener.name.<listener>.<mechanism>.sasl.jaas.config). It returns a
// definition named by the full key, typed as the base key.
func ListenerDef(name string) *Def {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return nil
	}
	_, key, ok := strings.Cut(rest, ".")
	if !ok {
		return nil
	}
	base := Brokers.byName[key]
	if base == nil {
		if _, k, ok := strings.Cut(key, "."); ok && mechanismScoped(k) {
			base = Brokers.byName[k]
		}
	}
	// Only what a listener reads may be scoped to one: its TLS and SASL
	// settings (Kafka lets every ssl.* and sasl.* key be, including the
	// ones kbroker does not need) and its connection limits.
	if base == nil || !(base.AppliedBy == ApplyListenerSecurity || clusterLevelListenerKeys[base.Name] ||
		strings.HasPrefix(base.Name, "ssl.") || strings.HasPrefix(base.Name, "sasl.") || base.Name == "connections.max.reauth.ms") {
		return nil
	}
	d := *base
	d.Name, d.NoDefault, d.Default = name, true, ""
	if !clusterLevelListenerKeys[base.Name] && base.Mode != ReadOnly {
		d.Mode = PerBroker
	}
	return &d
}

// mechanismScoped reports whether key may also be written
// listener.name.<listener>.<mechanism>.<key>, as Kafka allows for the SASL
// settings of one mechanism (sasl.jaas.config, its callback handlers and
// login class) and connections.max.reauth.ms.
func mechanismScoped(key string) bool {
	switch key {
	case "sasl.jaas.config", "sasl.server.callback.handler.class", "sasl.login.callback.handler.class",
		"sasl.login.class", "connections.max.reauth.ms":
		return true
	}
	return false
}

// clusterLevelListenerKeys may be set per listener at the cluster default
// too (Kafka's DynamicBrokerConfig.ClusterLevelListenerConfigs); every
// other listener-scoped key is per broker.
var clusterLevelListenerKeys = map[string]bool{"max.connections": true, "max.connection.creation.rate": true}

// ListenerValue reads a listener-level key from props: the
// listener.name.<lower listener>.<key> form first, then the plain key, then
// the catalog default.
func ListenerValue(props Properties, listener, key string) (string, bool) {
	if v, ok := props[listenerPrefix+strings.ToLower(listener)+"."+key]; ok {
		return strings.TrimSpace(v), true
	}
	if v, ok := props[key]; ok {
		return strings.TrimSpace(v), true
	}
	if d := Brokers.Lookup(key); d != nil && !d.NoDefault {
		return d.Default, false
	}
	return "", false
}
