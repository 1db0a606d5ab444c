package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// librdkafka sends client-final with r=<client nonce><server r> (the client
// nonce twice); Kafka accepts any nonce that ends with the server's, and
// checks the proof over the message as sent. So must kbroker, or kcat and
// every librdkafka-based client fail SCRAM.
func TestScramClientFinalNonceEndingWithServerNonce(t *testing.T) {
	const password = "pw"
	cred, err := NewCredential(MechanismScramSHA256, password, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s := newScramSession(MechanismScramSHA256, func(string, string) (Credential, bool) { return cred, true })
	const cnonce = "[kU:qmOuB@hGE0_z0/jfWb"
	serverFirst, done, err := s.Step([]byte("n,,n=alice,r=" + cnonce))
	if err != nil || done {
		t.Fatal(err, done)
	}
	var rValue string
	for _, f := range strings.Split(string(serverFirst), ",") {
		if v, ok := strings.CutPrefix(f, "r="); ok {
			rValue = v
		}
	}
	withoutProof := "c=biws,r=" + cnonce + rValue
	authMessage := "n=alice,r=" + cnonce + "," + string(serverFirst) + "," + withoutProof
	salted := SaltedPassword(MechanismScramSHA256, password, cred.Salt, cred.Iterations)
	clientKey := hmacSum(sha256.New, salted, "Client Key")
	sig := hmacSum(sha256.New, cred.StoredKey, authMessage)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	final, done, err := s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
	if err != nil || !done || !strings.HasPrefix(string(final), "v=") {
		t.Fatalf("client-final with librdkafka's nonce: %q %v %v", final, done, err)
	}
	if s.AuthorizationID() != "alice" {
		t.Fatalf("authorization id %q", s.AuthorizationID())
	}
}
