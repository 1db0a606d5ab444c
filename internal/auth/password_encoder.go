package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PasswordEncoder encrypts dynamic password configs (ssl.keystore.password, sasl.jaas.config, ...) before
// they are stored, with a key derived from password.encoder.secret — Kafka's EncryptingPasswordEncoder.
//
// Encode writes Kafka's own at-rest format, a comma-separated key:value map:
//
//	keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/GCM/NoPadding,keyLength:256,
//	salt:<base64 of 256 random bytes>,iterations:4096,encryptedPassword:<base64 ciphertext||tag>,
//	passwordLength:<UTF-16 length>,authenticationTagLength:128,initializationVector:<base64 12-byte nonce>
//
// (one line; keys sorted). Each value gets a fresh salt, so one PBKDF2 per Encode/Decode (a few
// milliseconds: password configs are rare). The key is PBKDF2(secret, salt, iterations, keyLength) with
// HMAC-SHA512 as Kafka's password.encoder.keyfactory.algorithm default; the cipher is AES-GCM, which Kafka
// supports as password.encoder.cipher.algorithm=AES/GCM/NoPadding, with a 256-bit key (Kafka's default
// cipher is AES/CBC/PKCS5Padding with 128 bits; GCM also authenticates, so a wrong secret or a tampered value
// fails instead of yielding garbage). Decode also accepts values Kafka wrote with its defaults
// (AES/CBC/PKCS5Padding, PBKDF2WithHmacSHA1 or SHA512, 128/192/256-bit keys), so configs migrated from a
// Kafka cluster with the same secret decode.
type PasswordEncoder struct {
	secret     string
	iterations int
	keyBits    int
	keyFactory string
}

// PasswordEncoderOption adjusts a PasswordEncoder (password.encoder.* configs).
type PasswordEncoderOption func(*PasswordEncoder) error

// WithEncoderIterations sets password.encoder.iterations (Kafka's minimum is 1024; default 4096).
func WithEncoderIterations(n int) PasswordEncoderOption {
	return func(e *PasswordEncoder) error {
		if n < 1024 || n > maxEncoderIterations {
			return fmt.Errorf("password.encoder.iterations %d outside [1024, %d]", n, maxEncoderIterations)
		}
		e.iterations = n
		return nil
	}
}

// WithEncoderKeyLength sets password.encoder.key.length in bits: 128, 192 or 256 (default 256).
func WithEncoderKeyLength(bits int) PasswordEncoderOption {
	return func(e *PasswordEncoder) error {
		if bits != 128 && bits != 192 && bits != 256 {
			return fmt.Errorf("password.encoder.key.length %d: want 128, 192 or 256", bits)
		}
		e.keyBits = bits
		return nil
	}
}

// WithEncoderKeyFactory sets password.encoder.keyfactory.algorithm: PBKDF2WithHmacSHA512 (default) or
// PBKDF2WithHmacSHA1.
func WithEncoderKeyFactory(name string) PasswordEncoderOption {
	return func(e *PasswordEncoder) error {
		if _, ok := keyFactoryHash(name); !ok {
			return fmt.Errorf("password.encoder.keyfactory.algorithm %q: want PBKDF2WithHmacSHA512 or PBKDF2WithHmacSHA1", name)
		}
		e.keyFactory = name
		return nil
	}
}

const (
	maxEncoderIterations = 1 << 20 // bounds the work a stored (possibly corrupted) value can demand
	encoderSaltLen       = 256     // Kafka's salt size
	gcmCipher            = "AES/GCM/NoPadding"
	cbcCipher            = "AES/CBC/PKCS5Padding"
)

// ErrPasswordDecode is returned for any value that cannot be decoded: wrong secret, tampering, corruption.
var ErrPasswordDecode = errors.New("Password could not be decoded")

// NewPasswordEncoder builds an encoder from password.encoder.secret, which must not be empty: without it
// dynamic password configs cannot be set.
func NewPasswordEncoder(secret string, opts ...PasswordEncoderOption) (*PasswordEncoder, error) {
	if secret == "" {
		return nil, errors.New("password.encoder.secret is not set: dynamic password configs cannot be encoded")
	}
	e := &PasswordEncoder{secret: secret, iterations: 4096, keyBits: 256, keyFactory: "PBKDF2WithHmacSHA512"}
	for _, o := range opts {
		if err := o(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Encode encrypts plaintext under a fresh salt and nonce.
func (e *PasswordEncoder) Encode(plaintext string) (string, error) {
	salt := make([]byte, encoderSaltLen)
	nonce := make([]byte, 12)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	key, err := e.deriveKey(e.keyFactory, salt, e.iterations, e.keyBits)
	if err != nil {
		return "", err
	}
	aead, err := newGCM(key, len(nonce), 16)
	if err != nil {
		return "", err
	}
	fields := map[string]string{
		"keyFactoryAlgorithm":     e.keyFactory,
		"cipherAlgorithm":         gcmCipher,
		"keyLength":               strconv.Itoa(e.keyBits),
		"salt":                    base64.StdEncoding.EncodeToString(salt),
		"iterations":              strconv.Itoa(e.iterations),
		"encryptedPassword":       base64.StdEncoding.EncodeToString(aead.Seal(nil, nonce, []byte(plaintext), nil)),
		"passwordLength":          strconv.Itoa(javaLength(plaintext)),
		"authenticationTagLength": "128",
		"initializationVector":    base64.StdEncoding.EncodeToString(nonce),
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + fields[k]
	}
	return strings.Join(parts, ","), nil
}

// Decode decrypts a value written by Encode (or by Kafka, see the type's comment). Every failure is
// ErrPasswordDecode; the error never contains the value.
func (e *PasswordEncoder) Decode(encoded string) (string, error) {
	p, err := parseEncoded(encoded)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
	}
	key, err := e.deriveKey(p.keyFactory, p.salt, p.iterations, p.keyBits)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
	}
	var plain []byte
	switch p.cipher {
	case gcmCipher:
		plain, err = openGCM(key, p)
	case cbcCipher:
		plain, err = openCBC(key, p)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPasswordDecode, err)
	}
	out := string(plain)
	if javaLength(out) != p.passwordLength { // Kafka's sanity check
		return "", fmt.Errorf("%w: sanity check of length failed", ErrPasswordDecode)
	}
	return out, nil
}

type encodedPassword struct {
	keyFactory, cipher      string
	keyBits, iterations     int
	salt, ciphertext, iv    []byte
	tagBits, passwordLength int
}

// parseEncoded reads Kafka's CSV map (Csv.parseCsvMap: split on ',', key and value at the last ':').
func parseEncoded(s string) (encodedPassword, error) {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		i := strings.LastIndexByte(kv, ':')
		if i < 0 {
			return encodedPassword{}, errors.New("malformed encoded password")
		}
		m[strings.TrimSpace(kv[:i])] = strings.TrimSpace(kv[i+1:])
	}
	var p encodedPassword
	var err error
	num := func(k string) int {
		if err != nil {
			return 0
		}
		var n int
		if n, err = strconv.Atoi(m[k]); err != nil {
			err = fmt.Errorf("field %s is not a number", k)
		}
		return n
	}
	b64 := func(k string) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		if b, err = base64.StdEncoding.DecodeString(m[k]); err != nil {
			err = fmt.Errorf("field %s is not base64", k)
		}
		return b
	}
	p.keyFactory = m["keyFactoryAlgorithm"]
	if p.keyFactory == "" {
		p.keyFactory = "PBKDF2WithHmacSHA512" // Kafka's default when the field is absent
	}
	p.cipher = m["cipherAlgorithm"]
	p.keyBits = num("keyLength")
	p.iterations = num("iterations")
	p.passwordLength = num("passwordLength")
	p.salt = b64("salt")
	p.ciphertext = b64("encryptedPassword")
	p.iv = b64("initializationVector")
	if p.cipher == gcmCipher {
		p.tagBits = num("authenticationTagLength")
	}
	if err != nil {
		return p, err
	}
	switch {
	case p.cipher != gcmCipher && p.cipher != cbcCipher:
		return p, fmt.Errorf("unsupported cipher %q", p.cipher)
	case p.keyBits != 128 && p.keyBits != 192 && p.keyBits != 256:
		return p, fmt.Errorf("unsupported key length %d", p.keyBits)
	case p.iterations < 1 || p.iterations > maxEncoderIterations:
		return p, fmt.Errorf("iterations %d out of range", p.iterations)
	case len(p.salt) == 0:
		return p, errors.New("empty salt")
	}
	return p, nil
}

func keyFactoryHash(name string) (func() hash.Hash, bool) {
	switch name {
	case "PBKDF2WithHmacSHA512":
		return sha512.New, true
	case "PBKDF2WithHmacSHA1":
		return sha1.New, true
	}
	return nil, false
}

// deriveKey is Java's PBEKeySpec(secret chars, salt, iterations, keyLength) through the key factory; SunJCE
// feeds PBKDF2 the secret's UTF-8 bytes.
func (e *PasswordEncoder) deriveKey(factory string, salt []byte, iterations, keyBits int) ([]byte, error) {
	h, ok := keyFactoryHash(factory)
	if !ok {
		return nil, fmt.Errorf("unsupported key factory %q", factory)
	}
	return pbkdf2.Key(h, e.secret, salt, iterations, keyBits/8)
}

func newGCM(key []byte, nonceLen, tagLen int) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	switch {
	case nonceLen == 12:
		return cipher.NewGCMWithTagSize(block, tagLen)
	case tagLen == 16 && nonceLen > 0:
		return cipher.NewGCMWithNonceSize(block, nonceLen)
	}
	return nil, fmt.Errorf("unsupported GCM parameters (nonce %d bytes, tag %d bytes)", nonceLen, tagLen)
}

func openGCM(key []byte, p encodedPassword) ([]byte, error) {
	if p.tagBits%8 != 0 || p.tagBits/8 < 12 || p.tagBits/8 > 16 {
		return nil, fmt.Errorf("unsupported GCM tag length %d", p.tagBits)
	}
	aead, err := newGCM(key, len(p.iv), p.tagBits/8)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, p.iv, p.ciphertext, nil)
	if err != nil {
		return nil, errors.New("authentication failed (wrong secret or tampered value)")
	}
	return plain, nil
}

// openCBC decrypts Kafka's default AES/CBC/PKCS5Padding values. CBC does not authenticate: a wrong secret
// is caught by the padding and length checks only with high probability.
func openCBC(key []byte, p encodedPassword) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if len(p.iv) != aes.BlockSize || len(p.ciphertext) == 0 || len(p.ciphertext)%aes.BlockSize != 0 {
		return nil, errors.New("malformed CBC value")
	}
	plain := make([]byte, len(p.ciphertext))
	cipher.NewCBCDecrypter(block, p.iv).CryptBlocks(plain, p.ciphertext)
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > aes.BlockSize {
		return nil, errors.New("bad padding")
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, errors.New("bad padding")
		}
	}
	return plain[:len(plain)-pad], nil
}

// javaLength is Java's String.length(): UTF-16 code units, which Kafka records as passwordLength.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
