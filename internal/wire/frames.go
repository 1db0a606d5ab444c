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
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		for _, t := range f.Topics {
			n += 64 + len(t.Topic)
			for _, p := range t.Partitions {
				n += 128 + len(p.RecordBatches)
			}
		}
	}
	return bufpool.Get(n)[:0]
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
