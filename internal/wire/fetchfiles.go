package wire

// Zero-copy Fetch responses. A Fetch response is nearly all record bytes,
// which kmsg's encoding would copy into the encoding buffer (18 % of fetch
// CPU in B2). Here the response's framing is still kmsg's encoding, and
// only the large record sets are sent as they are: from their segment
// files with sendfile on plaintext TCP listeners (the handler left them in
// the files, Request.RecordFiles), or from the read buffers on TLS ones
// (one copy, the read; TLS encrypts from the buffer).
//
// How the framing is found: the response is encoded twice by kmsg, with
// every such partition's RecordBatches empty, then one byte long. The two
// encodings are the same but for each of those partitions' length field
// (its last byte differs: 0 and 1 in int32 lengths, 1 and 2 in compact
// ones, KIP-482) and the placeholder byte after it, so a walk comparing
// them finds where each length field sits, whatever comes before or after
// it (headers, aborted transactions, tagged fields). The first encoding
// is written with each empty length replaced by the record set's length
// (kbin, the encoding kmsg's generated code uses) followed by the records.
// Nothing in the framing is encoded by hand; the differential test
// (fetchfiles_test.go) checks the bytes against kmsg's encoding of the
// whole response.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/bufpool"
)

// RecordFile is a partition's record batches left in a file until its
// Fetch response is written.
type RecordFile interface {
	// Len is the number of bytes of the batches.
	Len() int
	// Pin returns a descriptor of the file of the sender's own, which the
	// sender closes, and the batches' offset in it; an error if the file
	// is gone.
	Pin() (*os.File, int64, error)
}

// RecordFileKey names a partition of a Fetch response: by topic name
// before v13, by topic id from v13 (the other is zero).
type RecordFileKey struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// RecordFiles are the partitions of a Fetch response whose RecordBatches
// (left empty by the handler) are in files.
type RecordFiles map[RecordFileKey]RecordFile

// Add records that partition's batches are f.
func (fs *RecordFiles) Add(topic string, topicID [16]byte, partition int32, f RecordFile) {
	if *fs == nil {
		*fs = make(RecordFiles)
	}
	(*fs)[RecordFileKey{topic, topicID, partition}] = f
}

// Len is the number of record bytes in partition's file, 0 if none.
func (fs RecordFiles) Len(topic string, topicID [16]byte, partition int32) int {
	if f, ok := fs[RecordFileKey{topic, topicID, partition}]; ok {
		return f.Len()
	}
	return 0
}

// SendsFiles reports whether record bytes can go from files to this
// connection's socket without being read (sendfile): a plaintext TCP
// connection. TLS ones encrypt in user space and get bytes.
func (c *Conn) SendsFiles() bool {
	_, ok := c.nc.(*net.TCPConn)
	return ok && sendfileEnabled
}

// sentFromFiles counts the record bytes sent with sendfile.
var sentFromFiles atomic.Int64

// SentFromFiles is the number of record bytes this process has sent from
// files with sendfile, never read into user space (for metrics and tests).
func SentFromFiles() int64 { return sentFromFiles.Load() }

// sendfileEnabled is off only in tests and benchmarks comparing the
// copying path with the zero-copy one.
var sendfileEnabled = true

// largeRecords is the smallest in-memory record set written from its own
// buffer rather than copied into the encoding: the size of the files
// storage leaves reads in (storage.FileRangeMin), so both listeners move
// the same record sets outside the encoding.
const largeRecords = 16 << 10

// recordPiece is one record set sent outside the encoding.
type recordPiece struct {
	p   *kmsg.FetchResponseTopicPartition
	mem []byte   // in memory, or
	f   *os.File // in f at off
	off int64
	n   int
}

// writeResponse encodes resp and writes it to w, a Fetch response's large
// record sets outside the encoding (writeFetch).
func (c *Conn) writeResponse(ctx context.Context, w *pooledWriter, req *Request, resp kmsg.Response) error {
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		done, err := c.writeFetch(ctx, w, req, f)
		if done {
			releaseEncoded(resp, nil)
			return err
		}
		if err != nil {
			// A file that could not be read: its partition goes without
			// records, and the consumer fetches the offset again.
			c.logLimited(slog.LevelWarn, "fetched records could not be read for the send", "err", err)
		}
	}
	buf := appendResponse(responseBuffer(resp), req, resp)
	_, err := w.Write(buf)
	releaseEncoded(resp, buf)
	return sendFailed(err)
}

// writeFetch writes resp with its record sets in files (req.RecordFiles)
// and its large ones in memory outside the encoding. done is false when it
// wrote nothing and resp is to be written the ordinary way: no such record
// set, or framing it could not find (then the files are read into resp).
func (c *Conn) writeFetch(ctx context.Context, w *pooledWriter, req *Request, resp *kmsg.FetchResponse) (done bool, err error) {
	var pieces []recordPiece
	pinned := 0
	defer func() {
		for _, pc := range pieces {
			if pc.f != nil {
				pc.f.Close()
			}
		}
	}()
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if rf, ok := req.RecordFiles[RecordFileKey{t.Topic, t.TopicID, p.Partition}]; ok && rf.Len() > 0 {
				f, off, err := rf.Pin()
				if err != nil {
					// Deleted since the read (retention, the cleaner):
					// the partition is answered without records, and the
					// consumer fetches the same offset again.
					c.logLimited(slog.LevelDebug, "fetched records gone before the send", "topic", t.Topic, "partition", p.Partition, "err", err)
					p.RecordBatches = []byte{}
					continue
				}
				if pinned == maxPinnedFiles {
					// Enough descriptors held by this send: the rest are
					// read now, one descriptor at a time.
					err := readPinned(p, f, off, rf.Len())
					f.Close()
					if err != nil {
						c.logLimited(slog.LevelWarn, "fetched records could not be read for the send", "topic", t.Topic, "partition", p.Partition, "err", err)
						p.RecordBatches = []byte{}
						continue
					}
					pieces = append(pieces, recordPiece{p: p, mem: p.RecordBatches, n: len(p.RecordBatches)})
					continue
				}
				pinned++
				pieces = append(pieces, recordPiece{p: p, f: f, off: off, n: rf.Len()})
			} else if len(p.RecordBatches) >= largeRecords {
				pieces = append(pieces, recordPiece{p: p, mem: p.RecordBatches, n: len(p.RecordBatches)})
			}
		}
	}
	if len(pieces) == 0 {
		return false, nil
	}
	if _, tcp := c.nc.(*net.TCPConn); !tcp {
		// Files for a connection that cannot take them (a handler that
		// did not ask SendsFiles): one copy, as on TLS listeners.
		if err := c.readPieces(resp, pieces); err != nil {
			return false, err
		}
		for i := range pieces {
			if pieces[i].f != nil {
				pieces[i].mem = pieces[i].p.RecordBatches
				pieces[i].f.Close()
				pieces[i].f = nil
			}
		}
	}
	frame, at, ok := fetchFraming(req, resp, pieces)
	defer bufpool.Put(frame)
	if !ok {
		return false, c.readPieces(resp, pieces)
	}
	lenLen := 4
	if resp.IsFlexible() {
		lenLen = 1
	}
	size := len(frame) - 4
	for _, pc := range pieces {
		size += len(appendRecordsLen(nil, pc.n, lenLen == 1)) - lenLen + pc.n
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	prev := 0
	var lb [8]byte
	for k, pc := range pieces {
		if _, err := w.Write(frame[prev:at[k]]); err != nil {
			return true, sendFailed(err)
		}
		if _, err := w.Write(appendRecordsLen(lb[:0], pc.n, lenLen == 1)); err != nil {
			return true, sendFailed(err)
		}
		if pc.f == nil {
			err = w.writeDirect(pc.mem)
		} else if err = w.Flush(); err == nil {
			err = c.sendFile(ctx, pc.f, pc.off, pc.n)
		}
		if err != nil {
			return true, err
		}
		prev = at[k] + lenLen
	}
	_, err = w.Write(frame[prev:])
	return true, sendFailed(err)
}

// appendRecordsLen appends the length of a RecordBatches of n bytes, as kmsg
// encodes nullable bytes.
func appendRecordsLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(dst, uint32(n)+1)
	}
	return kbin.AppendInt32(dst, int32(n))
}

// fetchFraming encodes resp's frame with the pieces' RecordBatches empty
// and finds each empty length in it (at, where each starts). It leaves
// the pieces' RecordBatches as it found them, empty for files.
func fetchFraming(req *Request, resp *kmsg.FetchResponse, pieces []recordPiece) (frame []byte, at []int, ok bool) {
	for _, pc := range pieces {
		pc.p.RecordBatches = []byte{}
	}
	frame = appendResponse(responseBuffer(resp), req, resp)
	placeholder := []byte{0}
	for _, pc := range pieces {
		pc.p.RecordBatches = placeholder
	}
	probe := appendResponse(bufpool.Get(len(frame) + len(pieces))[:0], req, resp)
	defer bufpool.Put(probe)
	for _, pc := range pieces {
		pc.p.RecordBatches = pc.mem
		if pc.mem == nil {
			pc.p.RecordBatches = []byte{}
		}
	}
	at, ok = emptyLengths(frame, probe, len(pieces), resp.IsFlexible())
	return frame, at, ok
}

// emptyLengths walks the two encodings, which differ only at n empty
// record sets (empty, then the one-byte placeholder), and returns where
// each empty length starts in empty. The size prefixes differ and are
// skipped.
func emptyLengths(empty, one []byte, n int, flexible bool) ([]int, bool) {
	zero, unit := []byte{0, 0, 0, 0}, []byte{0, 0, 0, 1, 0}
	if flexible {
		zero, unit = []byte{1}, []byte{2, 0}
	}
	at := make([]int, 0, n)
	i, j := 4, 4
	for range n {
		d := mismatch(empty[i:], one[j:])
		if d < 0 {
			return nil, false
		}
		start := i + d + 1 - len(zero) // the last byte of the length differs
		js := j + d + 1 - len(zero)
		if start < i || !bytes.HasPrefix(empty[start:], zero) || !bytes.HasPrefix(one[js:], unit) {
			return nil, false
		}
		at = append(at, start)
		i, j = start+len(zero), js+len(unit)
	}
	return at, bytes.Equal(empty[i:], one[j:])
}

// mismatch is the index of the first byte where a and b differ, -1 if
// neither differs within the shorter.
func mismatch(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// maxPinnedFiles bounds the descriptors one response's send holds: a
// fetch of 50 MiB over 16 KiB partitions would otherwise hold 3,200 for
// as long as its consumer takes it, against a RLIMIT_NOFILE that may be
// 1,024 (shared with the segment file cache and the connections). Past
// the bound the records are read into memory, one copy, as on TLS.
const maxPinnedFiles = 64

// readPieces reads the pieces in files into resp, for writing it the
// ordinary way.
func (c *Conn) readPieces(resp *kmsg.FetchResponse, pieces []recordPiece) error {
	for _, pc := range pieces {
		if pc.f == nil {
			continue
		}
		if err := readPinned(pc.p, pc.f, pc.off, pc.n); err != nil {
			return err
		}
	}
	return nil
}

// readPinned reads n bytes at off of f into p's RecordBatches, a pooled
// buffer (releaseEncoded returns it).
func readPinned(p *kmsg.FetchResponseTopicPartition, f *os.File, off int64, n int) error {
	buf := bufpool.Get(n)
	if _, err := f.ReadAt(buf, off); err != nil {
		bufpool.Put(buf)
		return fmt.Errorf("reading fetched records: %w", err)
	}
	p.RecordBatches = buf
	return nil
}

// errFileShort is a file that ended before the range being sent: it was
// truncated under the send (a follower truncating its log), and the
// response can only be cut short, so the connection closes.
var errFileShort = errors.New("file truncated under the send")

// sendFile sends n bytes of f from off to the connection's socket with
// sendfile, so they never enter user space, in chunks that must each go
// out within connections.max.idle.ms (progressWriter's rule). It uses the
// descriptor's own offset argument, not the file's position, as Go's
// io.Copy into a *net.TCPConn would (it sends from the shared position of
// the descriptor, which concurrent sends of one segment would race on).
func (c *Conn) sendFile(ctx context.Context, f *os.File, off int64, n int) error {
	tc := c.nc.(*net.TCPConn)
	rc, err := tc.SyscallConn()
	if err != nil {
		return sendFailed(err)
	}
	src := int(f.Fd())
	pw := progressWriter{c: c, ctx: ctx}
	for n > 0 {
		chunk := min(n, writeChunk)
		tc.SetWriteDeadline(pw.deadline())
		var serr error
		err := rc.Write(func(fd uintptr) bool {
			for chunk > 0 {
				m, e := syscall.Sendfile(int(fd), src, &off, chunk)
				if m > 0 {
					chunk, n = chunk-m, n-m
					sentFromFiles.Add(int64(m))
				}
				switch {
				case e == syscall.EINTR:
				case e == syscall.EAGAIN:
					return false // wait until the socket takes more, or the deadline
				case e != nil:
					serr = e
					return true
				case m == 0:
					serr = errFileShort
					return true
				}
			}
			return true
		})
		if err == nil {
			err = serr
		}
		if errors.Is(err, errFileShort) {
			return fmt.Errorf("sending %s: %w", f.Name(), err)
		}
		if err != nil {
			return sendFailed(err)
		}
	}
	return nil
}

// writeDirect writes b from its own buffer when it is at least a write
// buffer long (what is buffered goes first), instead of through the buffer.
func (p *pooledWriter) writeDirect(b []byte) error {
	if len(b) < connBuffer {
		_, err := p.Write(b)
		return sendFailed(err)
	}
	if err := p.Flush(); err != nil {
		return sendFailed(err)
	}
	_, err := p.dst.Write(b)
	return sendFailed(err)
}
