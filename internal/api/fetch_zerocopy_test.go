package api_test

import (
	"crypto/sha256"
	"crypto/x509/pkix"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/broker/brokertest"
	"kbroker/internal/config"
	"kbroker/internal/testkit"
	"kbroker/internal/testpki"
	"kbroker/internal/wire"
)

// Consumers read large preloaded partitions whole, every record once and
// in order, over a plaintext listener (record sets sent from the segment
// files with sendfile) and a TLS one (sent from the read buffers), with
// compressed and uncompressed batches, reads crossing 1 MiB segments,
// partition limits that cut reads short of a batch (and below the first
// batch, which comes whole, KIP-74), and read_committed.
func TestConsumersReadLargePartitionsOverPlaintextAndTLS(t *testing.T) {
	pki := testpki.New(t, pkix.Name{CommonName: "consumer"})
	keystore, truststore := pki.Files(t)
	for _, listener := range []string{"PLAINTEXT", "SSL"} {
		t.Run(listener, func(t *testing.T) {
			props := config.Properties{"listeners": listener + "://127.0.0.1:0"}
			var dial []kgo.Opt
			if listener == "SSL" {
				props["ssl.keystore.location"], props["ssl.truststore.location"] = keystore, truststore
				dial = append(dial, kgo.DialTLSConfig(pki.ClientTLS(false)))
			}
			b := brokertest.Start(t, props)
			adm := testkit.Client(t, b.Addr(), dial...)
			testkit.CreateTopic(t, kadm.NewClient(adm), "big", 3, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")})

			want := map[string][32]byte{} // key -> value digest
			rng := rand.New(rand.NewPCG(18, 1))
			for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.ZstdCompression()} {
				p := testkit.Client(t, b.Addr(), append(dial, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(256<<10))...)
				var recs []*kgo.Record
				for i := range 600 {
					v := make([]byte, 1000+rng.IntN(12000))
					for j := range v {
						v[j] = byte(j * i) // compressible, distinct per record
					}
					k := fmt.Sprintf("%v-%d", codec, i)
					want[k] = sha256.Sum256(v)
					recs = append(recs, &kgo.Record{Topic: "big", Partition: int32(i % 3), Key: []byte(k), Value: v})
				}
				if err := p.ProduceSync(ctx(t), recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			before := wire.SentFromFiles()
			for _, opts := range [][]kgo.Opt{
				nil,
				{kgo.FetchMaxPartitionBytes(40 << 10), kgo.FetchMaxBytes(100 << 10)},
				{kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(1 << 20)},
			} {
				c := testkit.Client(t, b.Addr(), append(append(dial, kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), opts...)...)
				got := map[string]int{}
				next := map[int32]int64{}
				for len(got) < len(want) {
					fs := c.PollFetches(ctx(t))
					if err := fs.Err(); err != nil {
						t.Fatal(err)
					}
					fs.EachRecord(func(r *kgo.Record) {
						if r.Offset != next[r.Partition] {
							t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
						}
						next[r.Partition]++
						k := string(r.Key)
						if got[k]++; got[k] > 1 {
							t.Fatalf("%s read twice", k)
						}
						if sha256.Sum256(r.Value) != want[k] {
							t.Fatalf("%s: value differs from the one produced", k)
						}
					})
				}
				c.Close()
			}
			sent := wire.SentFromFiles() - before
			if listener == "PLAINTEXT" && sent == 0 {
				t.Fatal("nothing was sent from the segment files on the plaintext listener")
			}
			if listener == "SSL" && sent != 0 {
				t.Fatalf("%d bytes were sent with sendfile on the TLS listener", sent)
			}
		})
	}
}
