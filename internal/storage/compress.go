package storage

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
func decompress(codec int8, src []byte) ([]byte, error) {
	limit := maxDecompressedBatchBytes
	switch codec {
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return readBounded(zr, limit)
	case codecLz4:
		return readBounded(lz4.NewReader(bytes.NewReader(src)), limit)
	case codecSnappy:
		return decompressSnappy(src, limit)
	case codecZstd:
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
