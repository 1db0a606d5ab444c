package wire

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A response spliced element by element is byte for byte what kmsg writes
// for the whole response, in flexible and non-flexible versions, for 0, 1
// and many elements.
func TestAppendArrayResponseIsKmsgEncoding(t *testing.T) {
	for version := int16(0); version <= 1; version++ {
		for _, n := range []int{0, 1, 3, 200} {
			whole := kmsg.NewPtrDescribeClientQuotasResponse()
			whole.Version, whole.ThrottleMillis = version, 7
			whole.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
			for i := range n {
				e := kmsg.NewDescribeClientQuotasResponseEntry()
				ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
				ent.Type, ent.Name = "user", kmsg.StringPtr(fmt.Sprint("u", i))
				e.Entity = append(e.Entity, ent)
				v := kmsg.NewDescribeClientQuotasResponseEntryValue()
				v.Key, v.Value = "producer_byte_rate", float64(i)
				e.Values = append(e.Values, v)
				whole.Entries = append(whole.Entries, e)
			}
			want := whole.AppendTo(nil)

			empty := kmsg.NewPtrDescribeClientQuotasResponse()
			empty.Version, empty.ThrottleMillis = version, 7
			empty.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
			one := kmsg.NewPtrDescribeClientQuotasResponse()
			one.Version = version
			one.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
			enc := NewElementEncoder(one, 1)
			one.Entries = append(one.Entries, kmsg.DescribeClientQuotasResponseEntry{})
			got := AppendArrayResponse(nil, empty, n, func(dst []byte, i int) []byte {
				one.Entries[0] = whole.Entries[i]
				return append(dst, enc.Element()...)
			})
			if !bytes.Equal(got, want) {
				t.Errorf("v%d, %d entries: spliced %d bytes differ from kmsg's %d", version, n, len(got), len(want))
			}
		}
	}
}
