// Package bufpool recycles the large byte buffers of the data path: produce
// frames, fetch reads and encoded responses. A busy broker would otherwise
// allocate, zero and garbage-collect megabytes per request.
//
// Buffers come in power-of-two size classes. Get returns a buffer of the
// asked length whose contents are unspecified (not zeroed); Put takes back a
// buffer that nothing refers to any more. Only buffers from Get are pooled;
// Put ignores anything else, so callers need not track where a buffer came
// from.
package bufpool

import (
	"math/bits"
	"sync"
)

const (
	// Min is the smallest pooled size. Every response is encoded into a
	// buffer of at least 4 KiB, so it is pooled too: a broker answering a
	// few thousand small produce and empty fetch responses a second would
	// otherwise allocate megabytes a second of them, and its heap would
	// swing with the garbage (the soak showed 4 KiB response buffers as 80 %
	// of all bytes allocated). The classes below 4 KiB serve produce frames
	// of a record or two (the B3 latency benchmark's 1 KiB records): they
	// were most of what such a producer made the broker allocate. Smaller
	// buffers are cheap to allocate.
	Min = 1 << 10
	// Max is the largest pooled size (above the default
	// socket.request.max.bytes).
	Max = 128 << 20
)

var pools [bits.UintSize]sync.Pool

func class(n int) int { return bits.Len(uint(n - 1)) }

// Get returns a buffer of length n (contents unspecified).
func Get(n int) []byte {
	if n < Min || n > Max {
		return make([]byte, n)
	}
	if p, ok := pools[class(n)].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<class(n))
}

// Put returns b to its pool. The caller must not use b afterwards.
func Put(b []byte) {
	c := cap(b)
	if c < Min || c > Max || c != 1<<class(c) {
		return
	}
	b = b[:c]
	pools[class(c)].Put(&b)
}
