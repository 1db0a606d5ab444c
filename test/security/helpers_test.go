// Package security tests authentication and authorization end to end: real
// brokers (brokertest) with SASL, TLS and ACLs, and real clients (franz-go,
// sarama, kcat) or raw Kafka frames over TCP.
package security

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"kbroker/broker"
	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

const (
	adminPass = "admin-secret-9f3a"
	alicePass = "alice-secret-77c1"
)

const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// saslProps is a SASL_PLAINTEXT broker with PLAIN users admin and alice from
// the JAAS line and the same users bootstrapped for SCRAM.
func saslProps(extra config.Properties) config.Properties {
	p := config.Properties{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + adminPass + `" user_admin="` + adminPass + `" user_alice="` + alicePass + `";`,
		"kbroker.scram.bootstrap.users": "SCRAM-SHA-256=[name=admin,password=" + adminPass + "];SCRAM-SHA-512=[name=admin,password=" + adminPass + "];" +
			"SCRAM-SHA-256=[name=alice,password=" + alicePass + "];SCRAM-SHA-512=[name=alice,password=" + alicePass + "]",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// secured adds the built-in authorizer with admin as super user.
func secured(extra config.Properties) config.Properties {
	p := config.Properties{"authorizer.class.name": standardAuthorizer, "super.users": "User:admin"}
	for k, v := range extra {
		p[k] = v
	}
	return saslProps(p)
}

func start(t *testing.T, props config.Properties, opts ...broker.Option) *broker.Broker {
	t.Helper()
	return brokertest.Start(t, props, opts...)
}

func scram256(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
}

func scram512(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
}

func plainAuth(user, pass string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass}.AsMechanism()
}

func client(t *testing.T, addr string, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := []kgo.Opt{kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}
	if mech != nil {
		all = append(all, kgo.SASL(mech))
	}
	return testkit.Client(t, addr, append(all, opts...)...)
}

func adminClient(t *testing.T, addr string) *kadm.Client {
	return kadm.NewClient(client(t, addr, scram256("admin", adminPass)))
}

func ctxT(t *testing.T) context.Context { return testkit.Context(t, 20*time.Second) }

// batch is one record batch (magic 2) holding value, with producer id pid
// (-1: not idempotent).
func batch(value []byte, pid int64) []byte {
	rec := kmsg.Record{Value: value}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1)
	body = rec.AppendTo(nil)
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: pid, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: body}
	if pid >= 0 {
		b.ProducerEpoch, b.FirstSequence = 0, 0
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// transactional marks a batch of batch() transactional (attributes bit 4)
// and recomputes its CRC.
func transactional(raw []byte) []byte {
	raw[22] |= 0x10
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func adminClientOf(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }
