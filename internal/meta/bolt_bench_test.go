package meta

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkBoltAlterCommit times the store transaction of altering one
// topic's configs with 10,000 topics (and their overrides) in the file:
// read the topic and its overrides, write the overrides and the revision,
// commit durably. p99 is the goal of issue 3 (< 5 ms).
func BenchmarkBoltAlterCommit(b *testing.B) {
	for _, v := range []struct {
		name string
		opts bolt.Options
	}{
		{"default", bolt.Options{}},
		{"nofreelistsync-map", bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType}},
	} {
		b.Run(v.name, func(b *testing.B) {
			db, err := bolt.Open(filepath.Join(b.TempDir(), "meta.db"), 0o600, &v.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.Update(func(tx *bolt.Tx) error {
				keys, _ := tx.CreateBucketIfNotExists(boltKeys)
				tx.CreateBucketIfNotExists(boltInfo)
				for i := range 10000 {
					keys.Put(fmt.Appendf(nil, "topics/cfg-%07d", i), fmt.Appendf(nil, `{"name":"cfg-%07d","id":"AAAAAAAAAAAAAAAAAAAAAA","partitions":1,"replication_factor":1,"replicas":[[1]]}`, i))
					keys.Put(fmt.Appendf(nil, "config/topics/cfg-%07d", i), fmt.Appendf(nil, `{"cleanup.policy":"delete","max.message.bytes":"1048576","retention.ms":"%d"}`, 86400000+i))
				}
				return nil
			})
			var ms []float64
			before := db.Stats().TxStats
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				err := db.Update(func(tx *bolt.Tx) error {
					keys := tx.Bucket(boltKeys)
					keys.Get([]byte("topics/cfg-0000000"))
					keys.Get([]byte("config/topics/cfg-0000000"))
					if err := keys.Put([]byte("config/topics/cfg-0000000"), fmt.Appendf(nil, `{"cleanup.policy":"delete","max.message.bytes":"1048576","retention.ms":"%d"}`, 3600000+i)); err != nil {
						return err
					}
					return tx.Bucket(boltInfo).Put(revKey, binary.BigEndian.AppendUint64(nil, uint64(i)))
				})
				if err != nil {
					b.Fatal(err)
				}
				ms = append(ms, float64(time.Since(start).Microseconds())/1000)
			}
			b.StopTimer()
			after := db.Stats().TxStats
			slices.Sort(ms)
			b.ReportMetric(ms[len(ms)/2], "p50-ms")
			b.ReportMetric(ms[len(ms)*99/100], "p99-ms")
			b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "page-writes/op")
		})
	}
}
