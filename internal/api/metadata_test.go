package api_test

import (
	"fmt"
	"sync"
	"testing"

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
