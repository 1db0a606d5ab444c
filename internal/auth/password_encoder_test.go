package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func mustEncoder(t *testing.T, secret string, opts ...PasswordEncoderOption) *PasswordEncoder {
	t.Helper()
	e, err := NewPasswordEncoder(secret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPasswordEncoderRoundTrip(t *testing.T) {
	e := mustEncoder(t, "encoder-secret")
	for _, pw := range []string{"", "keystore-password", "pässwörd 🔑", strings.Repeat("x", 1000), "a,b:c"} {
		enc, err := e.Encode(pw)
		if err != nil {
			t.Fatal(err)
		}
		if pw != "" && strings.Contains(enc, pw) {
			t.Fatalf("encoded value contains the plaintext: %s", enc)
		}
		for _, field := range []string{"keyFactoryAlgorithm:PBKDF2WithHmacSHA512", "cipherAlgorithm:AES/GCM/NoPadding",
			"keyLength:256", "iterations:4096", "authenticationTagLength:128", "initializationVector:", "salt:", "encryptedPassword:"} {
			if !strings.Contains(enc, field) {
				t.Fatalf("encoded value lacks %q: %s", field, enc)
			}
		}
		got, err := e.Decode(enc)
		if err != nil || got != pw {
			t.Fatalf("Decode = %q, %v; want %q", got, err, pw)
		}
	}
	a, _ := e.Encode("same")
	b, _ := e.Encode("same")
	if a == b {
		t.Fatal("two encodings of one password are identical (salt/nonce reused)")
	}
}

func TestPasswordEncoderRejectsWrongSecretAndTampering(t *testing.T) {
	e := mustEncoder(t, "encoder-secret")
	enc, err := e.Encode("keystore-password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustEncoder(t, "other-secret").Decode(enc); !errors.Is(err, ErrPasswordDecode) {
		t.Fatalf("wrong secret: err = %v", err)
	}

	fields := map[string]string{}
	for _, kv := range strings.Split(enc, ",") {
		k, v, _ := strings.Cut(kv, ":")
		fields[k] = v
	}
	flip := func(b64 string) string {
		raw, _ := base64.StdEncoding.DecodeString(b64)
		raw[len(raw)/2] ^= 1
		return base64.StdEncoding.EncodeToString(raw)
	}
	for name, mutate := range map[string]func(map[string]string){
		"ciphertext bit flipped": func(f map[string]string) { f["encryptedPassword"] = flip(f["encryptedPassword"]) },
		"nonce changed":          func(f map[string]string) { f["initializationVector"] = flip(f["initializationVector"]) },
		"salt changed":           func(f map[string]string) { f["salt"] = flip(f["salt"]) },
		"iterations changed":     func(f map[string]string) { f["iterations"] = "4097" },
		"length changed":         func(f map[string]string) { f["passwordLength"] = "3" },
		"unknown cipher":         func(f map[string]string) { f["cipherAlgorithm"] = "DES" },
		"bad key length":         func(f map[string]string) { f["keyLength"] = "64" },
		"huge iterations":        func(f map[string]string) { f["iterations"] = "2000000000" },
		"field missing":          func(f map[string]string) { delete(f, "salt") },
		"not base64":             func(f map[string]string) { f["encryptedPassword"] = "!!" },
	} {
		f := map[string]string{}
		for k, v := range fields {
			f[k] = v
		}
		mutate(f)
		var parts []string
		for k, v := range f {
			parts = append(parts, k+":"+v)
		}
		if got, err := e.Decode(strings.Join(parts, ",")); !errors.Is(err, ErrPasswordDecode) {
			t.Errorf("%s: Decode = %q, %v; want ErrPasswordDecode", name, got, err)
		} else if strings.Contains(err.Error(), "keystore-password") {
			t.Errorf("%s: error leaks the password", name)
		}
	}
	for _, junk := range []string{"", "garbage", ",,,", "a:b"} {
		if _, err := e.Decode(junk); !errors.Is(err, ErrPasswordDecode) {
			t.Errorf("Decode(%q) err = %v", junk, err)
		}
	}
}

// Kafka's default encoder (AES/CBC/PKCS5Padding, 128-bit key, PBKDF2WithHmacSHA1 on JVMs without SHA512)
// writes values this encoder must read after a migration. The value is built here exactly as Kafka's
// EncryptingPasswordEncoder.encode does.
func TestPasswordEncoderDecodesKafkaCBCValues(t *testing.T) {
	salt := []byte("0123456789abcdef0123456789abcdef")
	iv := []byte("fedcba9876543210")
	key, _ := pbkdf2.Key(sha1.New, "kafka-secret", salt, 1024, 16)
	block, _ := aes.NewCipher(key)
	plain := []byte("ssl-password") // 12 bytes → 4 bytes of PKCS#5 padding
	padded := append(plain, 4, 4, 4, 4)
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
	enc := "encryptedPassword:" + base64.StdEncoding.EncodeToString(ct) + ",keyLength:128,passwordLength:12," +
		"initializationVector:" + base64.StdEncoding.EncodeToString(iv) + ",keyFactoryAlgorithm:PBKDF2WithHmacSHA1," +
		"salt:" + base64.StdEncoding.EncodeToString(salt) + ",iterations:1024,cipherAlgorithm:AES/CBC/PKCS5Padding"
	got, err := mustEncoder(t, "kafka-secret").Decode(enc)
	if err != nil || got != "ssl-password" {
		t.Fatalf("Decode = %q, %v", got, err)
	}
	if _, err := mustEncoder(t, "wrong").Decode(enc); !errors.Is(err, ErrPasswordDecode) {
		t.Fatalf("wrong secret decoded a CBC value: %v", err)
	}
}

func TestPasswordEncoderOptions(t *testing.T) {
	if _, err := NewPasswordEncoder(""); err == nil {
		t.Error("empty secret accepted")
	}
	e := mustEncoder(t, "s", WithEncoderIterations(1024), WithEncoderKeyLength(128), WithEncoderKeyFactory("PBKDF2WithHmacSHA1"))
	enc, err := e.Encode("pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"iterations:1024", "keyLength:128", "keyFactoryAlgorithm:PBKDF2WithHmacSHA1"} {
		if !strings.Contains(enc, f) {
			t.Errorf("missing %s in %s", f, enc)
		}
	}
	// The parameters travel with the value: an encoder with other defaults still decodes it.
	if got, err := mustEncoder(t, "s").Decode(enc); err != nil || got != "pw" {
		t.Errorf("Decode with default options = %q, %v", got, err)
	}
	for _, opt := range []PasswordEncoderOption{WithEncoderIterations(10), WithEncoderKeyLength(100), WithEncoderKeyFactory("MD5")} {
		if _, err := NewPasswordEncoder("s", opt); err == nil {
			t.Error("bad option accepted")
		}
	}
}
