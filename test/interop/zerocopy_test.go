package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/testkit"
	"kbroker/internal/wire"
)

// kcat (librdkafka, its own Fetch versions and parser) consumes large
// partitions that the broker sends from the segment files with sendfile,
// every record once, in order, with its value.
func TestKcatConsumesPartitionsSentFromFiles(t *testing.T) {
	kcat := testkit.KcatPath(t)
	addr := startBroker(t, nil)
	const topic = "zero-copy"
	testkit.CreateTopic(t, newAdmin(t, addr), topic, 3, nil)
	p := testkit.Client(t, addr, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression(), kgo.NoCompression()))
	value := func(i int) string {
		return fmt.Sprintf("%05d-", i) + strings.Repeat(string(rune('a'+i%26)), 2000+i%5000)
	}
	var recs []*kgo.Record
	for i := range 1500 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Key: []byte(fmt.Sprint(i)), Value: []byte(value(i))})
	}
	if err := p.ProduceSync(testkit.Context(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := wire.SentFromFiles()
	out := runCmd(t, 60*time.Second, "", kcat, "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%p %o %k %s\n`)
	next := map[int]int{}
	seen := 0
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var part, off, key int
		var v string
		if _, err := fmt.Sscanf(line, "%d %d %d %s", &part, &off, &key, &v); err != nil {
			t.Fatalf("kcat printed %.80q: %v", line, err)
		}
		if off != next[part] || key%3 != part || v != value(key) {
			t.Fatalf("partition %d offset %d (want %d): key %d, value of %d bytes", part, off, next[part], key, len(v))
		}
		next[part]++
		seen++
	}
	if seen != len(recs) {
		t.Fatalf("kcat consumed %d records, want %d", seen, len(recs))
	}
	if wire.SentFromFiles() == before {
		t.Fatal("nothing was sent from the segment files")
	}
}
