package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The client side of kbroker's authentication, shared by the admin
// commands (a Kafka client properties file) and the broker's own
// inter-broker clients: both turn Kafka's client settings into kgo options.

// ClientSASL is the kgo option that authenticates as user with password
// over mech (MechanismPlain, MechanismScramSHA256 or MechanismScramSHA512);
// ok is false for any other mechanism.
func ClientSASL(mech, user, password string) (opt kgo.Opt, ok bool) {
	switch mech {
	case MechanismPlain:
		return kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()), true
	case MechanismScramSHA256:
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism()), true
	case MechanismScramSHA512:
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()), true
	}
	return nil, false
}

// VerifyChainOnly makes cfg check the broker's certificate chain against
// cfg.RootCAs (the system's when nil) but not that it names the host
// dialed: Kafka's empty ssl.endpoint.identification.algorithm.
func VerifyChainOnly(cfg *tls.Config) {
	roots := cfg.RootCAs
	cfg.InsecureSkipVerify = true // replaced by the chain check below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the broker sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
		return err
	}
}
