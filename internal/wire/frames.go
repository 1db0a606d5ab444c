package wire

import (
	"bufio"
	"encoding/binary"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// connBuffer is the size of a connection's read and write buffers: large
// enough that pipelined requests and their responses move in few
// syscalls. A connection takes them from a pool only while it has bytes in
// them; held for life they would cost 128 KiB per idle connection (1.25
// GiB for 10,000), all of it touched once the memory is reused, and would
// count as live heap, raising the collector's target by as much again.
const connBuffer = 64 << 10

var (
	readBuffers  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, connBuffer) }}
	writeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, connBuffer) }}
)

// pooledReader reads through a pooled buffer that it gives back when the
// buffer is empty at a frame boundary, so a connection waiting for its
// next request holds none.
type pooledReader struct {
	src io.Reader
	r   *bufio.Reader // nil while nothing is buffered
}

func (p *pooledReader) Read(b []byte) (int, error) {
	if p.r == nil {
		if len(b) >= connBuffer {
			// What bufio would do with an empty buffer: read straight
			// into b. A big frame trickling in holds no buffer.
			return p.src.Read(b)
		}
		p.r = readBuffers.Get().(*bufio.Reader)
		p.r.Reset(p.src)
	}
	return p.r.Read(b)
}

// readSize reads a frame's size prefix. With nothing buffered (the buffer
// was given back after the last frame, releaseIfEmpty) it reads the prefix
// straight from the socket, as Kafka reads every size prefix: one more small
// read per request when nothing is pipelined, and no buffer held while the
// client is silent.
func (p *pooledReader) readSize(size []byte) (int, error) {
	if p.r == nil {
		return io.ReadFull(p.src, size)
	}
	return io.ReadFull(p.r, size)
}

// readSizeStart reads at least the first byte of a size prefix, and as much
// more of it as one read brings (all four bytes, nearly always): the moment
// a frame starts, without a second read per request.
func (p *pooledReader) readSizeStart(size []byte) (int, error) {
	if p.r == nil {
		return io.ReadAtLeast(p.src, size, 1)
	}
	return io.ReadAtLeast(p.r, size, 1)
}

// frameBuffered reports whether a whole next frame is already buffered,
// that is, whether the client pipelined another request behind this one.
func (p *pooledReader) frameBuffered() bool {
	if p.r == nil || p.r.Buffered() < 4 {
		return false
	}
	size, err := p.r.Peek(4)
	if err != nil {
		return false
	}
	n := int64(int32(binary.BigEndian.Uint32(size)))
	return n >= 0 && int64(p.r.Buffered())-4 >= n
}

// releaseIfEmpty gives the buffer back if nothing is left in it. The
// connection calls it once a frame is read, before the request is handled
// (and so before the next size prefix is read):
// a long-polling fetch would otherwise hold a read buffer for its whole wait
// (the soak's 200 consumers held 15 MiB of them).
func (p *pooledReader) releaseIfEmpty() {
	if p.r != nil && p.r.Buffered() == 0 {
		p.release()
	}
}

// release gives the buffer back, dropping anything still in it.
func (p *pooledReader) release() {
	if p.r != nil {
		p.r.Reset(nil)
		readBuffers.Put(p.r)
		p.r = nil
	}
}

// pooledWriter buffers responses in a pooled buffer that it holds only
// until the next Flush: a connection holds one while it has responses to
// send, none while it waits for a request.
type pooledWriter struct {
	dst io.Writer
	w   *bufio.Writer // nil while nothing is buffered
}

func (p *pooledWriter) Write(b []byte) (int, error) {
	if p.w == nil {
		if len(b) >= connBuffer {
			// What bufio would do with an empty buffer: write b
			// straight out. A slow reader of a big response holds no
			// buffer.
			return p.dst.Write(b)
		}
		p.w = writeBuffers.Get().(*bufio.Writer)
		p.w.Reset(p.dst)
	}
	return p.w.Write(b)
}

// Flush sends what is buffered and gives the buffer back.
func (p *pooledWriter) Flush() error {
	if p.w == nil {
		return nil
	}
	err := p.w.Flush()
	p.release()
	return err
}

// release gives the buffer back, dropping anything still in it.
func (p *pooledWriter) release() {
	if p.w != nil {
		p.w.Reset(nil)
		writeBuffers.Put(p.w)
		p.w = nil
	}
}

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
