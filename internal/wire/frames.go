package wire

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// responseBuffer returns an empty buffer likely large enough to encode
// resp without growing: fetch responses are mostly record bytes, and
// growing a multi-megabyte buffer by doubling would copy them several times.
func responseBuffer(resp kmsg.Response) []byte {
	n := 4 << 10
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		for _, t := range r.Topics {
			n += 64 + len(t.Topic)
			for _, p := range t.Partitions {
				n += 128 + len(p.RecordBatches)
			}
		}
	case *kmsg.DescribeConfigsResponse:
		// Describing every config of thousands of topics is megabytes.
		for _, res := range r.Resources {
			n += 32 + len(res.ResourceName)
			for _, c := range res.Configs {
				n += 32 + len(c.Name) + lenOf(c.Value) + lenOf(c.Documentation)
				for _, syn := range c.ConfigSynonyms {
					n += 16 + len(syn.Name) + lenOf(syn.Value)
				}
			}
		}
	}
	return bufpool.Get(n)[:0]
}

func lenOf(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// releaseEncoded returns the buffers an encoded response no longer needs:
// the fetch reads (storage reads into pooled buffers) and the encoding.
func releaseEncoded(resp kmsg.Response, encoded []byte) {
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		for i := range f.Topics {
			for j := range f.Topics[i].Partitions {
				p := &f.Topics[i].Partitions[j]
				bufpool.Put(p.RecordBatches)
				p.RecordBatches = nil
			}
		}
	}
	bufpool.Put(encoded)
}

// releaseFrame returns the frame of a handled request to the pool, if the
// request is of a kind whose handler keeps nothing of it: produce records
// are written to the log and never looked at again. Other handlers may keep
// slices of their request, so their frames are left to the collector.
func releaseFrame(req *Request) {
	if req.Key != int16(kmsg.Produce) {
		return
	}
	frame := req.frame
	req.frame, req.Body = nil, nil
	bufpool.Put(frame)
}
