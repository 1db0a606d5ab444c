package api

// Dynamic PASSWORD configs (ssl.keystore.password, listener-scoped
// sasl.jaas.config, ...) are encrypted before they reach the store, with a
// key derived from password.encoder.secret (auth.PasswordEncoder: AES-GCM,
// Kafka's at-rest format). Without the secret they cannot be set, as in
// Kafka. Their values are never returned (DescribeConfigs reports them
// sensitive, with null values) and the audit log masks them.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/config"
)

// encryptPasswords replaces every PASSWORD value that ops set in next with
// its encrypted form.
func (s *Server) encryptPasswords(catalog *config.Catalog, ops []configOp, next map[string]string) error {
	for _, op := range ops {
		d := catalog.Lookup(op.name)
		v, set := next[op.name]
		if d == nil || !d.Sensitive() || !set || op.value == nil {
			continue
		}
		if s.Passwords == nil {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Cannot set the password config %s dynamically: password.encoder.secret is not configured", op.name))
		}
		enc, err := s.Passwords.Encode(v)
		if err != nil {
			return newError(kerr.InvalidConfig, fmt.Sprintf("Cannot encode the password config %s", op.name))
		}
		next[op.name] = enc
	}
	return nil
}
