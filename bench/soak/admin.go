package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The principals of the soak. The admin is bootstrapped by the broker; the
// others are created over the protocol by the admin.
const (
	adminUser = "admin"
	adminPass = "soak-admin-secret"
	// Producers and consumers with a quota ("-q") and without ("-f").
	prodQuota, prodFree = "prod-q", "prod-f"
	consQuota, consFree = "cons-q", "cons-f"
	// intruder has a credential but no ACL: nothing it asks for may work.
	intruder    = "intruder"
	rotatedUser = "soak-rotate"
	topicPrefix = "soak-"
)

// The soak's segment size and size retention per partition (brokerProps).
const segmentBytes, retentionBytes = 2 << 20, 8 << 20

func password(user string) string { return user + "-secret" }

// brokerProps are the server.properties lines beyond listeners and
// log.dirs (README, Security): SCRAM on the SASL listener, the admin
// bootstrapped, the built-in authorizer with the admin as super user.
// PLAINTEXT stays open for the harness's readiness probe; its ANONYMOUS
// principal has no ACL.
func brokerProps() []string {
	return []string{
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"kbroker.scram.bootstrap.users=SCRAM-SHA-512=[name=" + adminUser + ",password=" + adminPass + "]",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:" + adminUser,
		"auto.create.topics.enable=false",
		// Steady state on disk as well as in memory: small segments that
		// roll every minute or so at the soak's rate, and a size retention
		// that deletes the oldest, so the log (and what the broker keeps
		// per segment) stops growing after the warm-up, as on a production
		// broker whose retention is reached.
		"log.segment.bytes=" + strconv.Itoa(segmentBytes),
		"log.retention.bytes=" + strconv.Itoa(retentionBytes),
		"log.retention.check.interval.ms=10000",
	}
}

// client is a franz-go client authenticated as user on the SASL listener.
func (s *soak) client(user, pass, clientID string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.b.SASLAddr),
		kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()),
		kgo.ClientID(clientID),
	}, opts...)...)
}

func topicName(i int) string { return topicPrefix + strconv.Itoa(i) }

// setup creates the users, ACLs, quotas and topics.
func (s *soak) setup(ctx context.Context) error {
	cl, err := s.client(adminUser, adminPass, "soak-admin")
	if err != nil {
		return err
	}
	s.admin = kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	var ups []kadm.UpsertSCRAM
	for _, u := range []string{prodQuota, prodFree, consQuota, consFree, intruder, rotatedUser} {
		ups = append(ups, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password(u)})
	}
	scrams, err := s.admin.AlterUserSCRAMs(ctx, nil, ups)
	if err == nil {
		err = scrams.Error()
	}
	if err != nil {
		return fmt.Errorf("create SCRAM users: %w", err)
	}
	acls := kadm.NewACLs().Topics(topicPrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:"+prodQuota, "User:"+prodFree).AllowHosts("*").Operations(kadm.OpWrite, kadm.OpDescribe)
	if err := createACLs(ctx, s.admin, acls); err != nil {
		return err
	}
	acls = kadm.NewACLs().Topics(topicPrefix).ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:"+consQuota, "User:"+consFree).AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe)
	if err := createACLs(ctx, s.admin, acls); err != nil {
		return err
	}
	s.producerQuota.Store(int64(s.o.producerQuota))
	if err := s.setQuota(ctx, prodQuota, "producer_byte_rate", s.o.producerQuota); err != nil {
		return err
	}
	if err := s.setQuota(ctx, consQuota, "consumer_byte_rate", s.o.consumerQuota); err != nil {
		return err
	}
	for i := range s.o.topics {
		resp, err := s.admin.CreateTopic(ctx, int32(s.o.partitions), 1, nil, topicName(i))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w", topicName(i), err)
		}
		s.topicIDs = append(s.topicIDs, resp.ID)
	}
	return nil
}

func createACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) error {
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("create ACL %s %s: %w", r.Principal, r.Name, r.Err)
		}
	}
	return nil
}

func (s *soak) setQuota(ctx context.Context, user, key string, value int) error {
	res, err := s.admin.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr(user)}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: float64(value)}},
	}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if err != nil {
		return fmt.Errorf("set %s of %s: %w", key, user, err)
	}
	return nil
}

// changeRound is one round of admin changes, the k-th: a topic config and
// the cluster default altered, an ACL created or deleted, a SCRAM
// credential rotated, every fourth round the producer quota toggled, and
// the intruder and a wrong password tried.
func (s *soak) changeRound(ctx context.Context, k int) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	count := func(what string, err error) {
		s.changes.Add(1)
		if err != nil {
			s.changeErrs.Add(1)
			progress("change %d (%s) failed: %v", k, what, err)
		}
	}
	v := strconv.Itoa(3_600_000 + k)
	res, err := s.admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &v}}, topicName(k%s.o.topics))
	count("topic config", firstConfigErr(res, err))
	v = strconv.Itoa(86_400_000 + k)
	res, err = s.admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: &v}})
	count("cluster default", firstConfigErr(res, err))

	acl := kadm.NewACLs().Topics("rotating-" + strconv.Itoa(k/2)).Allow("User:" + rotatedUser).AllowHosts("*").Operations(kadm.OpRead)
	if k%2 == 0 {
		count("create ACL", createACLs(ctx, s.admin, acl))
	} else {
		acl.ResourcePatternType(kadm.ACLPatternLiteral)
		_, err := s.admin.DeleteACLs(ctx, acl)
		count("delete ACL", err)
	}
	scrams, err := s.admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: rotatedUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password(rotatedUser) + strconv.Itoa(k)}})
	if err == nil {
		err = scrams.Error()
	}
	count("rotate SCRAM", err)
	if k%4 == 3 {
		q := int64(s.o.producerQuota)
		if s.producerQuota.Load() == q {
			q *= 2
		}
		err := s.setQuota(ctx, prodQuota, "producer_byte_rate", int(q))
		if err == nil {
			s.producerQuota.Store(q)
			s.quotaChanged.Store(time.Now().UnixNano())
		}
		count("toggle quota", err)
	}
	s.tryIntruders(ctx, k)
}

func firstConfigErr(res kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}

// tryIntruders has the user without ACLs produce and fetch, and a wrong
// password log in; any success is a breach.
func (s *soak) tryIntruders(ctx context.Context, k int) {
	s.intrusions.Add(3)
	cl, err := s.client(intruder, password(intruder), "intruder", kgo.RecordRetries(0), kgo.RequestRetries(1))
	if err != nil {
		return
	}
	defer cl.Close()
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: topicName(k % s.o.topics), Value: []byte("let me in")}).FirstErr()
	s.judge("intruder produce", err, kerr.TopicAuthorizationFailed)

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topicName(0), s.topicIDs[0]
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				err = kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	s.judge("intruder fetch", err, kerr.TopicAuthorizationFailed)

	wrong, err := s.client(prodFree, "wrong-password", "wrong-password", kgo.RequestRetries(0))
	if err != nil {
		return
	}
	defer wrong.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, wrong)
	s.judge("wrong password", err, kerr.SaslAuthenticationFailed)
}

// judge counts an intrusion attempt's outcome: refused with want (as it
// must be), let in (a breach), or refused otherwise (noted).
func (s *soak) judge(what string, err, want error) {
	switch {
	case err == nil:
		s.breaches.Add(1)
		progress("BREACH: %s succeeded", what)
	case !errors.Is(err, want):
		s.oddRefusals.Add(1)
		progress("%s refused with %v, expected %v", what, err, want)
	}
}

// counter is an atomic int64 for the soak's tallies.
type counter = atomic.Int64
