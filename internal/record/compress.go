package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressedBatchBytes bounds how large one compressed batch may inflate to
// while the broker validates it. Kafka has no such bound; without one a
// few-kilobyte compression bomb could make the broker allocate gigabytes. 128 MiB
// is far above any batch a real producer builds (they cap the uncompressed batch at
// batch.max.bytes / max.request.size, 1 MiB by default).
var maxDecompressedBatchBytes = 128 << 20

var errTooLarge = errors.New("decompressed batch exceeds the broker's bound")

// decompress inflates the records section of a batch. Java producers frame snappy
// with xerial's stream format; a raw snappy block is accepted too, as snappy-java's
// reader does.
func decompress(codec Codec, src []byte) ([]byte, error) {
	limit := maxDecompressedBatchBytes
	switch codec {
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return readBounded(zr, limit)
	case CodecLz4:
		return readBounded(lz4.NewReader(bytes.NewReader(src)), limit)
	case CodecSnappy:
		return decompressSnappy(src, limit)
	case CodecZstd:
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		out, err := d.DecodeAll(src, nil)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(maxDecompressedBatchBytes)))
	if err != nil {
		panic(err) // only on invalid options, which are constant
	}
	return d
}}

func readBounded(r io.Reader, limit int) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}

// xerialMagic opens snappy-java's stream format: magic, then version and minimum
// compatible version (int32 each), then blocks of int32 length + raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decompressSnappy(src []byte, limit int) ([]byte, error) {
	if len(src) < 16 || !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(nil, src, limit)
	}
	var out []byte
	rest := src[16:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, errors.New("truncated xerial snappy block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("truncated xerial snappy block")
		}
		var err error
		if out, err = snappyBlock(out, rest[:n], limit); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// snappyBlock appends one decoded snappy block to dst, checking the block's declared
// length against the bound before allocating.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, errTooLarge
	}
	dec, err := s2.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, dec...), nil
}

// compress encodes the records section of a batch with codec at level (the
// topic's compression.<codec>.level), producing what Kafka's own writers produce:
// gzip, xerial-framed snappy (snappy-java's SnappyOutputStream, which Java clients
// expect), an LZ4 frame with independent 64 KiB blocks and no checksums (Kafka's
// KafkaLZ4BlockOutputStream), or a zstd frame.
func compress(codec Codec, level int, src []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		if level != -1 && (level < 1 || level > 9) {
			return nil, fmt.Errorf("gzip level %d", level)
		}
		var buf bytes.Buffer
		pool := &gzipWriters[level+1]
		zw, _ := pool.Get().(*gzip.Writer)
		if zw == nil {
			var err error
			if zw, err = gzip.NewWriterLevel(&buf, level); err != nil {
				return nil, err
			}
		} else {
			zw.Reset(&buf)
		}
		defer pool.Put(zw)
		return writeAll(zw, &buf, src)
	case CodecSnappy:
		return compressXerial(src), nil
	case CodecLz4:
		var buf bytes.Buffer
		pool := &lz4Writers[min(max(level, 1), 9)]
		zw, _ := pool.Get().(*lz4.Writer)
		if zw == nil {
			zw = lz4.NewWriter(&buf)
			if err := zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.BlockChecksumOption(false), lz4.CompressionLevelOption(lz4Level(level))); err != nil {
				return nil, err
			}
		} else {
			zw.Reset(&buf) // keeps the options
		}
		defer pool.Put(zw)
		return writeAll(zw, &buf, src)
	case CodecZstd:
		enc, err := zstdEncoder(level)
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// writeAll compresses src through w, which writes to buf, and returns buf's
// bytes once w is closed (flushed).
func writeAll(w io.WriteCloser, buf *bytes.Buffer, src []byte) ([]byte, error) {
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Writers are reused per level: a gzip writer allocates about 1 MiB of state.
var (
	gzipWriters [11]sync.Pool // levels -1 to 9, at level+1
	lz4Writers  [10]sync.Pool // mapped levels 1 to 9
)

// lz4Level maps Kafka's compression.lz4.level (1-17; 1 is lz4-java's fast
// compressor, 2-17 its high-compression levels) onto pierrec/lz4's Fast and
// Level1-9.
func lz4Level(level int) lz4.CompressionLevel {
	if level <= 1 {
		return lz4.Fast
	}
	return lz4.CompressionLevel(1 << (8 + min(level, 9)))
}

// xerialBlockSize is snappy-java's default block size.
const xerialBlockSize = 32 << 10

func compressXerial(src []byte) []byte {
	out := make([]byte, 0, 16+len(src)/2)
	out = append(out, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1) // version
	out = binary.BigEndian.AppendUint32(out, 1) // minimum compatible version
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		block := s2.EncodeSnappy(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// zstdEncoders holds one encoder per level; EncodeAll may be called concurrently.
var zstdEncoders struct {
	sync.Mutex
	byLevel map[int]*zstd.Encoder
}

func zstdEncoder(level int) (*zstd.Encoder, error) {
	zstdEncoders.Lock()
	defer zstdEncoders.Unlock()
	if e := zstdEncoders.byLevel[level]; e != nil {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	if zstdEncoders.byLevel == nil {
		zstdEncoders.byLevel = map[int]*zstd.Encoder{}
	}
	zstdEncoders.byLevel[level] = e
	return e, nil
}
