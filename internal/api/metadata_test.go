package api_test

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
)

// TestRacingAutoCreatingMetadataRequestsNeverAnswerTopicExists: when two
// Metadata requests auto-create the same topic at once, the one whose
// store write loses the race answers as Kafka does for a topic created
// concurrently (the topic, or LEADER_NOT_AVAILABLE until it is seen), never
// TOPIC_ALREADY_EXISTS, which a Metadata client does not retry.
func TestRacingAutoCreatingMetadataRequestsNeverAnswerTopicExists(t *testing.T) {
	b := brokertest.Start(t, config.Properties{"auto.create.topics.enable": "true"})
	const racers, rounds = 4, 40
	clients := make([]*kgo.Client, racers)
	for i := range clients {
		clients[i] = testkit.Client(t, b.Addr())
	}
	c := ctx(t)
	for round := range rounds {
		topic := fmt.Sprintf("raced-%d", round)
		codes := make([]int16, racers)
		var start, done sync.WaitGroup
		start.Add(1)
		for i, cl := range clients {
			done.Add(1)
			go func() {
				defer done.Done()
				req := kmsg.NewPtrMetadataRequest()
				req.AllowAutoTopicCreation = true
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(topic)
				req.Topics = append(req.Topics, rt)
				start.Wait()
				resp, err := req.RequestWith(c, cl)
				switch {
				case err != nil:
					t.Errorf("%s: metadata: %v", topic, err)
					codes[i] = -2
				case len(resp.Topics) != 1:
					t.Errorf("%s: %d topics in the answer", topic, len(resp.Topics))
					codes[i] = -2
				default:
					codes[i] = resp.Topics[0].ErrorCode
				}
			}()
		}
		start.Done()
		done.Wait()
		for i, code := range codes {
			if code != 0 && code != kerr.LeaderNotAvailable.Code && code != -2 {
				t.Fatalf("%s: racer %d answered %v, want the topic or LEADER_NOT_AVAILABLE", topic, i, kerr.ErrorForCode(code))
			}
		}
	}
}

// TestAllTopicsMetadataSplicedIsKmsgEncoding: the answer to a request for
// every topic is encoded topic by topic (allTopicsResponse); in every
// version, with and without the KIP-430 bits, its bytes must be what kmsg
// writes for the response it decodes to, and its topics what the
// struct-built answer naming each topic gives.
func TestAllTopicsMetadataSplicedIsKmsgEncoding(t *testing.T) {
	br := brokertest.Start(t, nil)
	adm := kadm.NewClient(testkit.Client(t, br.Addr()))
	// Topics of unlike sizes: the encoder reserves room from the first.
	for i, n := range []int32{1, 7, 3, 12} {
		testkit.CreateTopic(t, adm, fmt.Sprintf("spliced-%d-%s", i, strings.Repeat("x", i*9)), n, nil)
	}
	conn := testkit.Dial(t, br.Addr())
	for version := int16(0); version <= 13; version++ {
		for _, ops := range []bool{false, true} {
			if ops && version < 8 {
				continue
			}
			all := kmsg.NewPtrMetadataRequest()
			all.Version = version
			all.IncludeTopicAuthorizedOperations, all.IncludeClusterAuthorizedOperations = ops, ops
			if version == 0 {
				all.Topics = []kmsg.MetadataRequestTopic{} // v0's "every topic"
			}
			corr := conn.Send(all)
			got, body, err := conn.ReadFrame()
			if err != nil || got != corr {
				t.Fatalf("v%d: reading the answer: corr %d (want %d), %v", version, got, corr, err)
			}
			resp := testkit.DecodeResponse(t, all, body).(*kmsg.MetadataResponse)
			if resp.IsFlexible() {
				body = body[1:] // the response header's tag section
			}
			if again := resp.AppendTo(nil); !bytes.Equal(again, body) {
				t.Fatalf("v%d ops=%v: %d bytes answered, kmsg encodes what they decode to in %d", version, ops, len(body), len(again))
			}
			if len(resp.Topics) != 4 {
				t.Fatalf("v%d: %d topics answered, want 4", version, len(resp.Topics))
			}

			named := kmsg.NewPtrMetadataRequest()
			named.Version = version
			named.IncludeTopicAuthorizedOperations, named.IncludeClusterAuthorizedOperations = ops, ops
			for _, mt := range resp.Topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = mt.Topic
				named.Topics = append(named.Topics, rt)
			}
			want := conn.RoundTrip(named).(*kmsg.MetadataResponse)
			if !reflect.DeepEqual(want.Topics, resp.Topics) || want.AuthorizedOperations != resp.AuthorizedOperations {
				t.Fatalf("v%d ops=%v: every topic's answer differs from the named topics' answer:\n%+v\nwant\n%+v", version, ops, resp.Topics, want.Topics)
			}
			if ops && resp.Topics[0].AuthorizedOperations == math.MinInt32 {
				t.Fatalf("v%d: topic authorized operations asked for, not given", version)
			}
		}
	}
}
