package interop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/testkit"
)

// sarama, at its default protocol version (2.8) and at the newest it knows,
// creates a topic, produces with a SyncProducer and reads back with a
// PartitionConsumer, seeing the offsets the producer was given.
func TestSarama(t *testing.T) {
	for _, c := range []struct {
		name        string
		version     sarama.KafkaVersion
		compression sarama.CompressionCodec
	}{
		{"default version " + sarama.DefaultVersion.String(), sarama.DefaultVersion, sarama.CompressionNone},
		{"newest version " + sarama.MaxVersion.String() + " zstd", sarama.MaxVersion, sarama.CompressionZSTD},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.ClientID = "kbroker-interop"
			cfg.Version = c.version
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Compression = c.compression
			cfg.Consumer.Return.Errors = true
			cfg.Metadata.AllowAutoTopicCreation = false
			saramaRoundTrip(t, startBroker(t, nil), cfg)
		})
	}
}

func saramaRoundTrip(t *testing.T, addr string, cfg *sarama.Config) {
	const (
		topic = "sarama"
		n     = 200 // per partition
	)
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("CreateTopic of an existing topic: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}
	checkSaramaListTopics(t, addr, admin, topic)

	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()
	value := func(p int32, i int) string { return fmt.Sprintf("p%d-value-%04d", p, i) }
	for i := range n {
		for p := int32(0); p < 2; p++ {
			msg := &sarama.ProducerMessage{Topic: topic, Partition: p, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(value(p, i))}
			gotP, off, err := producer.SendMessage(msg)
			if err != nil {
				t.Fatalf("SendMessage %d to partition %d: %v", i, p, err)
			}
			if gotP != p || off != int64(i) {
				t.Fatalf("SendMessage %d to partition %d: stored in partition %d at offset %d, want offset %d", i, p, gotP, off, i)
			}
		}
	}
	// A batch of messages in one call.
	var batch []*sarama.ProducerMessage
	for i := n; i < n+50; i++ {
		batch = append(batch, &sarama.ProducerMessage{Topic: topic, Partition: 1, Value: sarama.StringEncoder(value(1, i))})
	}
	if err := producer.SendMessages(batch); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	for j, m := range batch {
		if m.Offset != int64(n+j) {
			t.Errorf("SendMessages message %d: offset %d, want %d", j, m.Offset, n+j)
		}
	}

	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer consumer.Close()
	for p, count := range map[int32]int{0: n, 1: n + 50} {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%d, oldest): %v", p, err)
		}
		for i := range count {
			m := saramaNext(t, pc)
			if m.Offset != int64(i) || string(m.Value) != value(p, i) {
				t.Fatalf("partition %d message %d: offset %d value %q; want offset %d value %q", p, i, m.Offset, m.Value, i, value(p, i))
			}
		}
		if hw := pc.HighWaterMarkOffset(); hw != int64(count) {
			t.Errorf("partition %d high watermark %d, want %d", p, hw, count)
		}
		pc.Close()
	}

	// From the newest offset, only what is produced afterwards is seen.
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatalf("ConsumePartition(0, newest): %v", err)
	}
	defer pc.Close()
	if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("late")}); err != nil {
		t.Fatalf("SendMessage late: %v", err)
	}
	if m := saramaNext(t, pc); m.Offset != n || string(m.Value) != "late" {
		t.Errorf("from newest: offset %d value %q, want offset %d value %q", m.Offset, m.Value, n, "late")
	}
}

// saramaNext waits up to 10s for the partition consumer's next message.
func saramaNext(t *testing.T, pc sarama.PartitionConsumer) *sarama.ConsumerMessage {
	t.Helper()
	select {
	case m := <-pc.Messages():
		return m
	case err := <-pc.Errors():
		t.Fatalf("partition consumer: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("partition consumer: no message within 10s")
	}
	return nil
}

// checkSaramaListTopics checks ClusterAdmin.ListTopics, which needs
// DescribeConfigs besides Metadata: if the broker does not advertise that
// API yet, the check is skipped with a note rather than failed.
func checkSaramaListTopics(t *testing.T, addr string, admin sarama.ClusterAdmin, topic string) {
	t.Helper()
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, addr))
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	describeConfigs := false
	for _, k := range versions.ApiKeys {
		describeConfigs = describeConfigs || k.ApiKey == int16(kmsg.DescribeConfigs)
	}
	if !describeConfigs {
		t.Logf("NOTE: skipping ClusterAdmin.ListTopics: it sends DescribeConfigs, which this broker does not serve yet")
		return
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ClusterAdmin.ListTopics: %v", err)
	}
	d, ok := topics[topic]
	if !ok {
		t.Fatalf("ClusterAdmin.ListTopics: %q missing from %v", topic, topics)
	}
	if d.NumPartitions != 2 || d.ReplicationFactor != 1 {
		t.Errorf("ClusterAdmin.ListTopics: %s has %d partitions, replication factor %d; want 2 and 1", topic, d.NumPartitions, d.ReplicationFactor)
	}
}
