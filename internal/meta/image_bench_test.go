package meta

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// scaleTopics is the image the scale benchmarks use: 10,000 topics of 10
// partitions each (100,000 partitions), every topic with config overrides.
const (
	scaleTopics     = 10000
	scalePartitions = 10
)

func scaleTopicValue(i, partitions int) []byte {
	replicas := "[1]"
	for range partitions - 1 {
		replicas += ",[1]"
	}
	id := NewTopicID()
	return fmt.Appendf(nil, `{"name":"scale-%05d","id":"%s","partitions":%d,"replication_factor":1,"replicas":[%s]}`, i, id, partitions, replicas)
}

func scaleBatch() Batch {
	b := Batch{Rev: 1}
	for i := range scaleTopics {
		b.Changes = append(b.Changes,
			Change{Key: fmt.Sprintf("topics/scale-%05d", i), Value: scaleTopicValue(i, scalePartitions)},
			Change{Key: fmt.Sprintf("config/topics/scale-%05d", i), Value: fmt.Appendf(nil, `{"cleanup.policy":"delete","retention.ms":"%d"}`, 86400000+i)})
	}
	return b
}

// BenchmarkImageUpdateOneTopic times installing a change to one topic (its
// partition count raised) into an image of 100,000 partitions: what every
// store listener waits for before it sees the change.
func BenchmarkImageUpdateOneTopic(b *testing.B) {
	benchmarkScaleUpdate(b, Change{Key: "topics/scale-05000", Value: scaleTopicValue(5000, scalePartitions+1)})
}

// BenchmarkImageUpdateOneTopicConfig times installing one topic's new
// config overrides into the same image.
func BenchmarkImageUpdateOneTopicConfig(b *testing.B) {
	benchmarkScaleUpdate(b, Change{Key: "config/topics/scale-05000", Value: []byte(`{"retention.ms":"1000"}`)})
}

func benchmarkScaleUpdate(b *testing.B, c Change) {
	snap, err := applyBatch(emptySnapshot(), scaleBatch())
	if err != nil {
		b.Fatal(err)
	}
	change := Batch{Changes: []Change{c}}
	b.ReportAllocs()
	for b.Loop() {
		change.Rev++
		if _, err := applyBatch(snap, change); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImageBuild10kTopics times building the image of 10,000 topics
// with configs from a full read, the in-memory half of a cold start.
func BenchmarkImageBuild10kTopics(b *testing.B) {
	batch := scaleBatch()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := applyBatch(emptySnapshot(), batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen10kTopics times a cold start of the store: opening a bbolt
// file of 10,000 topics with configs and loading its image.
func BenchmarkOpen10kTopics(b *testing.B) {
	path := filepath.Join(b.TempDir(), "meta.db")
	backend, err := OpenBolt(path)
	if err != nil {
		b.Fatal(err)
	}
	batch := scaleBatch()
	if _, err := backend.Update(context.Background(), func(tx Tx) error {
		for _, c := range batch.Changes {
			tx.Put(c.Key, c.Value)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	backend.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	for b.Loop() {
		backend, err := OpenBolt(path)
		if err != nil {
			b.Fatal(err)
		}
		s, err := Open(backend, log)
		if err != nil {
			b.Fatal(err)
		}
		if n := s.Snapshot().TopicCount(); n != scaleTopics {
			b.Fatalf("%d topics loaded", n)
		}
		s.Close()
	}
}

func applyBatch(s *Snapshot, b Batch) (*Snapshot, error) {
	n, _, err := s.with(b)
	return n, err
}

// BenchmarkLookupTopicsWithConfigs10k times finding every topic of the
// 10,000-topic image and its config overrides by name, as DescribeConfigs
// of every topic does.
func BenchmarkLookupTopicsWithConfigs10k(b *testing.B) {
	snap, err := applyBatch(emptySnapshot(), scaleBatch())
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, scaleTopics)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, name := range names {
			if t, c := snap.TopicWithConfig(name); t == nil || c == nil {
				b.Fatal(name)
			}
		}
	}
}
