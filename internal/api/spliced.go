package api

// Encoding of responses that are one long array: DescribeConfigs of
// thousands of topics and DescribeClientQuotas of 100,000 entities are
// megabytes. Building the whole kmsg response first means hundreds of
// thousands of structs (and the garbage they become) before kmsg encodes
// them; instead these responses are encoded piece by piece, each piece
// through kmsg (so the bytes are exactly what kmsg would write), into one
// buffer from the pool the connection returns encodings to.
//
// What the splicing relies on: the arrays spliced are the last field of
// their structure, followed only by its tagged fields (one empty tag
// section, a single zero byte, in flexible versions; nothing before); an
// array's length takes as many bytes for 0 elements as for 1 (int32, or a
// one-byte compact uvarint in flexible versions).

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// trailingArray is an array being filled in place of an empty one that
// ended an encoding: openTrailingArray writes its length, the caller
// appends the elements, close appends what followed the empty array.
type trailingArray struct {
	tail    [1]byte
	tailLen int
}

// openTrailingArray takes dst ending with the encoding of a structure
// whose last field is an empty array, removes that array's length and the
// tagged fields after it, and appends the length n instead.
func openTrailingArray(dst []byte, flexible bool, n int) ([]byte, trailingArray) {
	var a trailingArray
	lenLen := 4
	if flexible {
		a.tailLen, lenLen = 1, 1
	}
	copy(a.tail[:], dst[len(dst)-a.tailLen:])
	dst = dst[:len(dst)-a.tailLen-lenLen]
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1), a
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n)), a
}

func (a trailingArray) close(dst []byte) []byte { return append(dst, a.tail[:a.tailLen]...) }

// appendArrayResponse appends resp, whose trailing array must be empty (not
// null), with n elements in that array, each appended by elem.
func appendArrayResponse(dst []byte, resp kmsg.Response, n int, elem func(dst []byte, i int) []byte) []byte {
	dst, arr := openTrailingArray(resp.AppendTo(dst), resp.IsFlexible(), n)
	for i := range n {
		before := len(dst)
		dst = elem(dst, i)
		if i == 0 && n > 1 {
			// Elements are alike in size: make room for the rest at once,
			// in a pooled buffer, instead of doubling through megabytes.
			dst = grow(dst, (n-1)*(len(dst)-before)*9/8+1)
		}
	}
	return arr.close(dst)
}

// grow returns dst with room for at least extra more bytes, moved to a
// pooled buffer if it has to move (the connection puts the encoding back
// in the pool once written; the buffer it passed in is left to it).
func grow(dst []byte, extra int) []byte {
	if cap(dst)-len(dst) >= extra {
		return dst
	}
	nb := bufpool.Get(len(dst) + extra)[:len(dst)]
	copy(nb, dst)
	return nb
}

// elementEncoder gives the encoding of single array elements: the caller
// puts the element into one, a response holding exactly that element in a
// trailing array depth levels down (1: an element of the response's own
// array; 2: of the array ending that array's only element), and calls
// element.
type elementEncoder struct {
	one    kmsg.Response
	prefix int // bytes before the element: the enclosing fields and array lengths
	tail   int // bytes after it: the enclosing tagged fields
	buf    []byte
}

// newElementEncoder prepares an encoder for one, whose innermost trailing
// array must be empty now: the prefix is measured from that encoding.
func newElementEncoder(one kmsg.Response, depth int) *elementEncoder {
	e := &elementEncoder{one: one}
	if one.IsFlexible() {
		e.tail = depth
	}
	e.buf = one.AppendTo(nil)
	e.prefix = len(e.buf) - e.tail
	return e
}

// element encodes one and returns its element's bytes, valid until the
// next call.
func (e *elementEncoder) element() []byte {
	e.buf = e.one.AppendTo(e.buf[:0])
	return e.buf[e.prefix : len(e.buf)-e.tail]
}
