package api

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkQuotaListingCold: building the DescribeClientQuotas listing of
// 100,000 entities (parse, then encode v1), as the first describe after a
// quota change does. Values are decoded from JSON as the store does.
func BenchmarkQuotaListingCold(b *testing.B) {
	quotas := map[string]map[string]float64{}
	for i := range 100000 {
		var p string
		switch i % 4 {
		case 0, 1:
			p = fmt.Sprintf("clients/client-%07d", i)
		case 2:
			p = fmt.Sprintf("users/user-%07d", i)
		default:
			p = fmt.Sprintf("users/user-%07d/clients/client-%07d", i, i)
		}
		var v map[string]float64
		json.Unmarshal(fmt.Appendf(nil, `{"producer_byte_rate":%d,"consumer_byte_rate":%d}`, 1<<20+i, 2<<20+i), &v)
		quotas[p] = v
	}
	b.ResetTimer()
	for range b.N {
		l := &quotaListing{quotas: quotas}
		l.once.Do(l.parse)
		l.encoded(1)
	}
}
