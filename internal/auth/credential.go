package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
)

// SASL mechanism names as sasl.enabled.mechanisms and SaslHandshake spell them.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Iteration bounds for SCRAM credentials: both mechanisms' minimum (ScramMechanism.minIterations, also
// enforced at login) and AlterUserScramCredentials' maximum (ScramControlManager.MAX_ITERATIONS).
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096 // kafka-storage --add-scram and kafka-configs' default
)

// Credential is what the broker stores for one user and SCRAM mechanism (Kafka's UserScramCredentialRecord):
// never the password, only what RFC 5802 §3 needs to verify a proof and prove itself. Salt, StoredKey and
// ServerKey are secrets: never log or return them (DescribeUserScramCredentials shows mechanism and
// iterations only).
type Credential struct {
	Mechanism  string // MechanismScramSHA256 or MechanismScramSHA512
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// String hides the key material so a credential can never leak through a log line.
func (c Credential) String() string {
	return fmt.Sprintf("Credential(mechanism=%s, iterations=%d, salt=[hidden], storedKey=[hidden], serverKey=[hidden])",
		c.Mechanism, c.Iterations)
}

// Errors of credential validation, with the messages of Kafka's ScramControlManager. The connection layer
// maps ErrUnknownScramMechanism to UNSUPPORTED_SASL_MECHANISM (33) and the others to
// UNACCEPTABLE_CREDENTIAL (93).
var (
	ErrUnknownScramMechanism = errors.New("Unknown SCRAM mechanism")
	ErrEmptyUsername         = errors.New("Username must not be empty")
	ErrTooFewIterations      = errors.New("Too few iterations")
	ErrTooManyIterations     = errors.New("Too many iterations")
)

// MechanismCode is the AlterUserScramCredentials / DescribeUserScramCredentials wire code of a SCRAM
// mechanism name: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512, 0 = unknown.
func MechanismCode(name string) int8 {
	switch name {
	case MechanismScramSHA256:
		return 1
	case MechanismScramSHA512:
		return 2
	}
	return 0
}

// MechanismName is the inverse of MechanismCode; it returns "" for an unknown code.
func MechanismName(code int8) string {
	switch code {
	case 1:
		return MechanismScramSHA256
	case 2:
		return MechanismScramSHA512
	}
	return ""
}

// ScramMechanisms lists the SCRAM mechanisms in wire-code order.
func ScramMechanisms() []string { return []string{MechanismScramSHA256, MechanismScramSHA512} }

func scramHash(mechanism string) (func() hash.Hash, bool) {
	switch mechanism {
	case MechanismScramSHA256:
		return sha256.New, true
	case MechanismScramSHA512:
		return sha512.New, true
	}
	return nil, false
}

// ValidateUpsertion applies AlterUserScramCredentials' per-user checks in Kafka's order: empty name,
// unknown mechanism (wire code), then iterations outside [MinIterations, MaxIterations].
func ValidateUpsertion(user string, mechanismCode int8, iterations int) error {
	if user == "" {
		return ErrEmptyUsername
	}
	if MechanismName(mechanismCode) == "" {
		return ErrUnknownScramMechanism
	}
	return validateIterations(iterations)
}

// ValidateDeletion applies AlterUserScramCredentials' checks on a deletion (existence is the store's).
func ValidateDeletion(user string, mechanismCode int8) error {
	if user == "" {
		return ErrEmptyUsername
	}
	if MechanismName(mechanismCode) == "" {
		return ErrUnknownScramMechanism
	}
	return nil
}

func validateIterations(iterations int) error {
	if iterations < MinIterations {
		return ErrTooFewIterations
	}
	if iterations > MaxIterations {
		return ErrTooManyIterations
	}
	return nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC, as long as
// one hash output. Like Kafka's ScramFormatter it hashes the password's UTF-8 bytes without SASLprep. It
// returns nil for an unknown mechanism or a non-positive iteration count.
func SaltedPassword(mechanism, password string, salt []byte, iterations int) []byte {
	h, ok := scramHash(mechanism)
	if !ok || iterations <= 0 {
		return nil
	}
	out, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return nil
	}
	return out
}

// FromSaltedPassword derives the stored credential from what an AlterUserScramCredentials upsertion
// carries (the client chose the salt and computed SaltedPassword): StoredKey = H(HMAC(SaltedPassword,
// "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key") — ScramControlManager.finishUpsertion.
func FromSaltedPassword(mechanism string, salt, saltedPassword []byte, iterations int) (Credential, error) {
	h, ok := scramHash(mechanism)
	if !ok {
		return Credential{}, ErrUnknownScramMechanism
	}
	if err := validateIterations(iterations); err != nil {
		return Credential{}, err
	}
	if len(salt) == 0 {
		return Credential{}, errors.New("SCRAM salt must not be empty")
	}
	if len(saltedPassword) == 0 {
		return Credential{}, errors.New("SCRAM salted password must not be empty")
	}
	clientKey := hmacSum(h, saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{
		Mechanism:  mechanism,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, saltedPassword, "Server Key"),
		Iterations: iterations,
	}, nil
}

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// NewCredential hashes a password with a fresh random 32-byte salt, for bootstrapping users from
// server.properties or the kbroker CLI (kafka-storage format --add-scram 'SCRAM-SHA-256=[name=..,password=..]').
func NewCredential(mechanism, password string, iterations int) (Credential, error) {
	if _, ok := scramHash(mechanism); !ok {
		return Credential{}, ErrUnknownScramMechanism
	}
	if err := validateIterations(iterations); err != nil {
		return Credential{}, err
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, fmt.Errorf("SCRAM salt: %w", err)
	}
	return FromSaltedPassword(mechanism, salt, SaltedPassword(mechanism, password, salt, iterations), iterations)
}
