package wire

// Splicing: encoding responses that are one long array piece by piece.
// DescribeConfigs of thousands of topics and DescribeClientQuotas of
// 100,000 entities are megabytes. Building the whole kmsg response first means hundreds of
// thousands of structs (and the garbage they become) before kmsg encodes
// them; instead these responses are encoded piece by piece, each piece
// through kmsg (so the bytes are exactly what kmsg would write), into one
// buffer from the pool the connection returns encodings to.
//
// What the splicing relies on: the arrays spliced are the last field of
// their structure, followed only by its tagged fields (one empty tag
// section, a single zero byte, in flexible versions; nothing before), or
// by a few bytes the caller counts (the *Before variants: Metadata's
// topics are followed by fixed-size fields in some versions); an array's
// length takes as many bytes for 0 elements as for 1 (int32, or a
// one-byte compact uvarint in flexible versions).
//
// It lives beside the response writer because it leans on the writer's
// contract: a handler's encoding may sit in a pooled buffer, which the
// connection returns to the pool once the frame is written
// (releaseEncoded).

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// TrailingArray is an array being filled in place of an empty one that
// ended an encoding: OpenTrailingArray writes its length, the caller
// appends the elements, Close appends what followed the empty array.
type TrailingArray struct {
	tail    [maxAfter]byte
	tailLen int
}

// maxAfter bounds the bytes that may follow a spliced array: Metadata v13's
// topics are followed by an int16 and the tag section, v8–v10's by an int32.
const maxAfter = 8

// OpenTrailingArray takes dst ending with the encoding of a structure
// whose last field is an empty array, removes that array's length and the
// tagged fields after it, and appends the length n instead.
func OpenTrailingArray(dst []byte, flexible bool, n int) ([]byte, TrailingArray) {
	return OpenArrayBefore(dst, flexible, n, tagSection(flexible))
}

// tagSection is the length of an empty tag section: one byte in flexible
// versions, none before.
func tagSection(flexible bool) int {
	if flexible {
		return 1
	}
	return 0
}

// OpenArrayBefore is OpenTrailingArray for an empty array followed by
// after bytes (at most 8) that end dst: they are kept for Close.
func OpenArrayBefore(dst []byte, flexible bool, n, after int) ([]byte, TrailingArray) {
	a := TrailingArray{tailLen: after}
	lenLen := 4
	if flexible {
		lenLen = 1
	}
	copy(a.tail[:], dst[len(dst)-a.tailLen:])
	dst = dst[:len(dst)-a.tailLen-lenLen]
	if flexible {
		return binary.AppendUvarint(dst, uint64(n)+1), a
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n)), a
}

// Close appends what followed the array.
func (a TrailingArray) Close(dst []byte) []byte { return append(dst, a.tail[:a.tailLen]...) }

// AppendArrayResponse appends resp, whose trailing array must be empty (not
// null), with n elements in that array, each appended by elem.
func AppendArrayResponse(dst []byte, resp kmsg.Response, n int, elem func(dst []byte, i int) []byte) []byte {
	return AppendArrayResponseBefore(dst, resp, n, tagSection(resp.IsFlexible()), elem)
}

// AppendArrayResponseBefore is AppendArrayResponse for an array followed
// by after bytes of resp's encoding.
func AppendArrayResponseBefore(dst []byte, resp kmsg.Response, n, after int, elem func(dst []byte, i int) []byte) []byte {
	dst, arr := OpenArrayBefore(resp.AppendTo(dst), resp.IsFlexible(), n, after)
	for i := range n {
		before := len(dst)
		dst = elem(dst, i)
		if i == 0 && n > 1 {
			// Elements are alike in size: make room for the rest at once,
			// in a pooled buffer, instead of doubling through megabytes.
			dst = Grow(dst, (n-1)*(len(dst)-before)*9/8+1)
		}
	}
	return arr.Close(dst)
}

// Grow returns dst with room for at least extra more bytes, moved to a
// pooled buffer if it has to move (the connection puts the encoding back
// in the pool once written; the buffer it passed in is left to it).
func Grow(dst []byte, extra int) []byte {
	if cap(dst)-len(dst) >= extra {
		return dst
	}
	nb := bufpool.Get(len(dst) + extra)[:len(dst)]
	copy(nb, dst)
	return nb
}

// ElementEncoder gives the encoding of single array elements: the caller
// puts the element into one, a response holding exactly that element in a
// trailing array depth levels down (1: an element of the response's own
// array; 2: of the array ending that array's only element), and calls
// Element.
type ElementEncoder struct {
	one    kmsg.Response
	prefix int // bytes before the element: the enclosing fields and array lengths
	tail   int // bytes after it: the enclosing tagged fields
	buf    []byte
}

// NewElementEncoder prepares an encoder for one, whose innermost trailing
// array must be empty now: the prefix is measured from that encoding.
func NewElementEncoder(one kmsg.Response, depth int) *ElementEncoder {
	return NewElementEncoderBefore(one, depth*tagSection(one.IsFlexible()))
}

// NewElementEncoderBefore is NewElementEncoder for a response whose array
// of one element is followed by after bytes of its encoding.
func NewElementEncoderBefore(one kmsg.Response, after int) *ElementEncoder {
	e := &ElementEncoder{one: one, tail: after}
	e.buf = one.AppendTo(nil)
	e.prefix = len(e.buf) - e.tail
	return e
}

// Element encodes one and returns its element's bytes, valid until the
// next call.
func (e *ElementEncoder) Element() []byte {
	e.buf = e.one.AppendTo(e.buf[:0])
	return e.buf[e.prefix : len(e.buf)-e.tail]
}

// Flexible reports whether the encoder's response version is flexible.
func (e *ElementEncoder) Flexible() bool { return e.one.IsFlexible() }
