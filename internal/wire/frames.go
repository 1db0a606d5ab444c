package wire

import (
	"math/bits"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce frames are the big, frequent allocations of a busy broker: each
// carries up to a megabyte of records that are written to the log and then
// never looked at again. Reusing their buffers saves zeroing a fresh one per
// request and the garbage collection that follows. Other requests keep
// fresh buffers, since handlers may hold on to slices of them.

const (
	minPooledFrame = 64 << 10  // smaller frames are cheap to allocate
	maxPooledFrame = 128 << 20 // larger than socket.request.max.bytes' default
)

// framePools holds one pool per power-of-two size class.
var framePools [bits.UintSize]sync.Pool

func sizeClass(n int) int { return bits.Len(uint(n - 1)) }

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
	return newFrame(n)[:0]
}

// releaseBuffer returns a buffer from responseBuffer or newFrame to its
// pool once nothing refers to it.
func releaseBuffer(b []byte) {
	c := cap(b)
	if c < minPooledFrame || c > maxPooledFrame || c != 1<<sizeClass(c) {
		return
	}
	b = b[:c]
	framePools[sizeClass(c)].Put(&b)
}

// newFrame returns a buffer of length n, pooled when n is large enough.
func newFrame(n int) []byte {
	if n < minPooledFrame || n > maxPooledFrame {
		return make([]byte, n)
	}
	if p, ok := framePools[sizeClass(n)].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<sizeClass(n))
}

// releaseFrame returns the frame of a handled request to its pool, if the
// request is of a kind whose handler keeps nothing of it.
func releaseFrame(req *Request) {
	if req.Key != int16(kmsg.Produce) {
		return
	}
	frame := req.frame
	req.frame, req.Body = nil, nil
	releaseBuffer(frame)
}
