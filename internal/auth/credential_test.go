package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

func TestFromSaltedPasswordMatchesNewCredential(t *testing.T) {
	for _, mech := range ScramMechanisms() {
		c, err := NewCredential(mech, "hunter2", 4096)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Salt) != 32 || c.Iterations != 4096 || c.Mechanism != mech {
			t.Fatalf("%s: NewCredential = %v", mech, c)
		}
		// What an AlterUserScramCredentials client sends: the salt and Hi(password, salt, i).
		again, err := FromSaltedPassword(mech, c.Salt, SaltedPassword(mech, "hunter2", c.Salt, 4096), 4096)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.StoredKey, c.StoredKey) || !bytes.Equal(again.ServerKey, c.ServerKey) || !bytes.Equal(again.Salt, c.Salt) {
			t.Fatalf("%s: FromSaltedPassword differs from NewCredential", mech)
		}
		// An independent implementation (xdg-go/scram's client) derives the same keys.
		hg := scram.SHA256
		if mech == MechanismScramSHA512 {
			hg = scram.SHA512
		}
		client, _ := hg.NewClient("u", "hunter2", "")
		want := client.GetStoredCredentials(scram.KeyFactors{Salt: string(c.Salt), Iters: 4096})
		if !bytes.Equal(want.StoredKey, c.StoredKey) || !bytes.Equal(want.ServerKey, c.ServerKey) {
			t.Fatalf("%s: keys differ from xdg-go/scram's", mech)
		}
		other, _ := NewCredential(mech, "hunter2", 4096)
		if bytes.Equal(other.Salt, c.Salt) {
			t.Fatal("NewCredential reused a salt")
		}
	}
}

// RFC 7677 §3's SCRAM-SHA-256 example (user "user", password "pencil"): the RFC's client proof must verify
// against our StoredKey and our ServerKey must produce the RFC's server signature.
func TestCredentialRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	c, err := FromSaltedPassword(MechanismScramSHA256, salt, SaltedPassword(MechanismScramSHA256, "pencil", salt, 4096), 4096)
	if err != nil {
		t.Fatal(err)
	}
	const nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," + "r=" + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," + "c=biws,r=" + nonce
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	clientSig := hmacSum(sha256.New, c.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	if got := sha256.Sum256(clientKey); !bytes.Equal(got[:], c.StoredKey) {
		t.Fatal("RFC 7677 client proof does not verify against StoredKey")
	}
	if got := base64.StdEncoding.EncodeToString(hmacSum(sha256.New, c.ServerKey, authMessage)); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server signature %s, want the RFC's", got)
	}
}

func TestCredentialValidation(t *testing.T) {
	salt, sp := []byte("salt"), bytes.Repeat([]byte{1}, 32)
	for _, tc := range []struct {
		mech  string
		iters int
		salt  []byte
		sp    []byte
		want  error
	}{
		{"SCRAM-SHA-1", 4096, salt, sp, ErrUnknownScramMechanism},
		{MechanismScramSHA256, 4095, salt, sp, ErrTooFewIterations},
		{MechanismScramSHA256, 16385, salt, sp, ErrTooManyIterations},
		{MechanismScramSHA256, 16384, salt, sp, nil},
		{MechanismScramSHA256, 4096, nil, sp, errors.New("salt")},
		{MechanismScramSHA256, 4096, salt, nil, errors.New("salted password")},
	} {
		_, err := FromSaltedPassword(tc.mech, tc.salt, tc.sp, tc.iters)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s/%d: %v", tc.mech, tc.iters, err)
		case tc.want != nil && (err == nil || !errors.Is(err, tc.want) && !strings.Contains(err.Error(), tc.want.Error())):
			t.Errorf("%s/%d: err %v, want %v", tc.mech, tc.iters, err, tc.want)
		}
	}
	if _, err := NewCredential(MechanismScramSHA512, "pw", 100); !errors.Is(err, ErrTooFewIterations) {
		t.Errorf("NewCredential low iterations: %v", err)
	}
	if SaltedPassword("nope", "pw", salt, 4096) != nil || SaltedPassword(MechanismScramSHA256, "pw", salt, 0) != nil {
		t.Error("SaltedPassword accepted bad input")
	}

	for _, tc := range []struct {
		user  string
		code  int8
		iters int
		want  error
	}{
		{"", 1, 4096, ErrEmptyUsername},
		{"alice", 0, 4096, ErrUnknownScramMechanism},
		{"alice", 3, 4096, ErrUnknownScramMechanism},
		{"alice", 2, 4095, ErrTooFewIterations},
		{"alice", 2, 16385, ErrTooManyIterations},
		{"alice", 1, 4096, nil},
	} {
		if err := ValidateUpsertion(tc.user, tc.code, tc.iters); !errors.Is(err, tc.want) {
			t.Errorf("ValidateUpsertion(%q, %d, %d) = %v, want %v", tc.user, tc.code, tc.iters, err, tc.want)
		}
	}
	if ValidateDeletion("", 1) != ErrEmptyUsername || ValidateDeletion("a", 9) != ErrUnknownScramMechanism || ValidateDeletion("a", 2) != nil {
		t.Error("ValidateDeletion")
	}
}

func TestMechanismCodes(t *testing.T) {
	if MechanismCode("SCRAM-SHA-256") != 1 || MechanismCode("SCRAM-SHA-512") != 2 || MechanismCode("PLAIN") != 0 {
		t.Error("MechanismCode")
	}
	if MechanismName(1) != "SCRAM-SHA-256" || MechanismName(2) != "SCRAM-SHA-512" || MechanismName(0) != "" || MechanismName(-1) != "" {
		t.Error("MechanismName")
	}
}

func TestCredentialStringHidesKeys(t *testing.T) {
	c, _ := NewCredential(MechanismScramSHA256, "pw", 4096)
	s := c.String()
	if strings.Contains(s, hex.EncodeToString(c.StoredKey)) || !strings.Contains(s, "[hidden]") || !strings.Contains(s, "4096") {
		t.Fatalf("String() = %s", s)
	}
}
