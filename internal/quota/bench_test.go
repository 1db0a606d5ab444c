package quota

import (
	"fmt"
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// manyEntities is n (user, client-id) quotas plus n user quotas and the
// default entities, the shape of benchmark B9's "100,000 quota entities".
func manyEntities(n int) Overrides {
	o := Overrides{
		"users/<default>":   {ProducerByteRate: 1e12},
		"clients/<default>": {ConsumerByteRate: 1e12},
	}
	for i := range n {
		o[fmt.Sprintf("users/user%d/clients/client%d", i, i)] = map[string]float64{ProducerByteRate: 1e12, ConsumerByteRate: 1e12}
		if i%2 == 0 {
			o[fmt.Sprintf("users/user%d", i)] = map[string]float64{ProducerByteRate: 1e12}
		}
	}
	return o
}

// BenchmarkRecordProduce: the per-request quota check must cost the same
// with 1 or 100,000 entities loaded (O(1)) and allocate nothing.
func BenchmarkRecordProduce(b *testing.B) {
	for _, n := range []int{1, 100_000} {
		for _, withMetrics := range []bool{false, true} {
			b.Run(fmt.Sprintf("entities=%d/metrics=%v", n, withMetrics), func(b *testing.B) {
				opts := Options{ExpireEvery: -1}
				if withMetrics {
					opts.Registerer = prometheus.NewRegistry()
				}
				m := New(opts)
				m.SetOverrides(manyEntities(n))
				// Bind a spread of connections so the shards hold real maps.
				for i := 0; i < n; i += max(1, n/1000) {
					m.RecordProduce(fmt.Sprint("user", i), fmt.Sprint("client", i), 1)
				}
				user, client := fmt.Sprint("user", n/2), fmt.Sprint("client", n/2)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					m.RecordProduce(user, client, 1024)
				}
			})
		}
	}
}

// BenchmarkRecordProduceParallel: many connections of distinct entities at
// once (sharded bindings, per-sensor locks).
func BenchmarkRecordProduceParallel(b *testing.B) {
	m := New(Options{ExpireEvery: -1, Registerer: prometheus.NewRegistry()})
	m.SetOverrides(manyEntities(100_000))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := i % 1000
			m.RecordProduce(users[k], clients[k], 1024)
			i++
		}
	})
}

var users, clients = func() ([]string, []string) {
	u, c := make([]string, 1000), make([]string, 1000)
	for i := range u {
		u[i], c[i] = fmt.Sprint("user", i*97), fmt.Sprint("client", i*97)
	}
	return u, c
}()

// BenchmarkUnlimited: quotas configured for others, none for this key: the
// cost the broker pays on a request that no quota covers.
func BenchmarkUnlimited(b *testing.B) {
	m := New(Options{ExpireEvery: -1})
	m.SetOverrides(Overrides{"users/someone": {ProducerByteRate: 1}})
	b.ReportAllocs()
	for b.Loop() {
		m.RecordFetch("u", "c", 1024)
	}
}

func BenchmarkResolve(b *testing.B) {
	for _, n := range []int{1, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			m := New(Options{ExpireEvery: -1, UserProducerDefault: 5})
			m.SetOverrides(manyEntities(n))
			b.ReportAllocs()
			for b.Loop() {
				m.Resolve("user0", "client0", ProducerByteRate)
			}
		})
	}
}

// BenchmarkCompile: a full compile of 150,000 entities (100,000 pairs and
// 50,000 users), paid at start-up and when many entities change at once.
func BenchmarkCompile(b *testing.B) {
	o := manyEntities(100_000)
	opts := Options{}
	b.ReportAllocs()
	for b.Loop() {
		compile(o, &opts, 1)
	}
}

// BenchmarkSetOverridesOneChange: the metadata store's usual event, one
// entity altered among 100,000 (inner maps shared with the previous set).
func BenchmarkSetOverridesOneChange(b *testing.B) {
	o := manyEntities(100_000)
	m := New(Options{ExpireEvery: -1})
	m.SetOverrides(o)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		next := maps.Clone(o) // the store's new snapshot, not our cost
		next["users/user7/clients/client7"] = map[string]float64{ProducerByteRate: float64(1000 + i)}
		i++
		b.StartTimer()
		m.SetOverrides(next)
		o = next
	}
}
