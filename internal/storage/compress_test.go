package storage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/internal/record"
)

func TestCompressionTypeRecompressesOnAppend(t *testing.T) {
	targets := []struct {
		typ   CompressionType
		codec record.Codec
	}{
		{CompressionGzip, record.CodecGzip}, {CompressionSnappy, record.CodecSnappy}, {CompressionLz4, record.CodecLz4},
		{CompressionZstd, record.CodecZstd}, {CompressionUncompressed, record.CodecNone},
	}
	sources := map[string]testBatch{
		"uncompressed": {n: 20, valueSize: 300, tsStep: 3, pid: 9, epoch: 2, seq: 0},
		"gzip":         {n: 20, valueSize: 300, tsStep: 3, pid: 9, epoch: 2, seq: 0, codec: kgo.GzipCompression(), hasCodec: true},
		"lz4":          {n: 20, valueSize: 300, tsStep: 3, pid: 9, epoch: 2, seq: 0, codec: kgo.Lz4Compression(), hasCodec: true},
	}
	for _, target := range targets {
		for srcName, src := range sources {
			t.Run(fmt.Sprintf("%s-to-%d", srcName, target.codec), func(t *testing.T) {
				cfg := smallConfig()
				cfg.SegmentBytes = 1 << 20
				cfg.CompressionType = target.typ
				l, _ := openTestLog(t, cfg)
				mustAppend(t, l, testBatch{}.build(t)) // so the batch gets a non-zero base offset
				raw := src.build(t)
				want := decodeBatches(t, raw)
				res := mustAppend(t, l, raw)
				got, err := l.Read(res.BaseOffset, 1<<20, true)
				if err != nil {
					t.Fatal(err)
				}
				h, _ := record.ParseHeader(got.Records)
				if c := h.Codec(); c != target.codec {
					t.Fatalf("stored codec %d, want %d", c, target.codec)
				}
				if h.ProducerID != 9 || h.ProducerEpoch != 2 || h.BaseSequence != 0 || h.BaseOffset != 1 || h.LastOffset != 20 {
					t.Fatalf("header changed: %+v", h)
				}
				recs := decodeBatches(t, got.Records) // checks the CRC, decompresses with kgo
				if len(recs) != len(want) {
					t.Fatalf("read %d records, want %d", len(recs), len(want))
				}
				for i, r := range recs {
					w := want[i]
					w.offset += res.BaseOffset
					if r != w {
						t.Fatalf("record %d = %+v, want %+v", i, r, w)
					}
				}
				// A retry of the same batch is still recognised as a duplicate.
				if dup, err := l.Append(src.build(t), testNow); err != nil || !dup.Duplicate {
					t.Fatalf("retry after recompression: %+v %v", dup, err)
				}
			})
		}
	}
}

func TestCompressionTypeProducerKeepsBatch(t *testing.T) {
	for _, src := range []testBatch{
		{n: 5, valueSize: 100},
		{n: 5, valueSize: 100, codec: kgo.SnappyCompression(), hasCodec: true},
	} {
		l, _ := openTestLog(t, smallConfig())
		raw := src.build(t)
		sent := append([]byte(nil), raw...)
		mustAppend(t, l, raw)
		got, err := l.Read(0, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		// Only the broker-assigned fields differ: base offset 0 is unchanged here,
		// and the leader epoch.
		copy(sent[record.PosLeaderEpoch:record.PosMagic], got.Records[record.PosLeaderEpoch:record.PosMagic])
		if !bytes.Equal(got.Records, sent) {
			t.Fatal("compression.type=producer rewrote the batch")
		}
	}
	// A batch already in the target codec is kept as it is, whatever the level.
	cfg := smallConfig()
	cfg.CompressionType, cfg.GzipLevel = CompressionGzip, 9
	l, _ := openTestLog(t, cfg)
	raw := testBatch{n: 5, valueSize: 100, codec: kgo.GzipCompression(), hasCodec: true}.build(t)
	sent := append([]byte(nil), raw...)
	mustAppend(t, l, raw)
	got, _ := l.Read(0, 1<<20, true)
	if !bytes.Equal(got.Records[record.PosAttributes:], sent[record.PosAttributes:]) {
		t.Fatal("a gzip batch was recompressed for compression.type=gzip")
	}
}

func TestRecompressedBatchMustFitMaxMessageBytes(t *testing.T) {
	cfg := smallConfig()
	cfg.CompressionType = CompressionUncompressed
	raw := testBatch{n: 50, valueSize: 1000, codec: kgo.ZstdCompression(), hasCodec: true}.build(t)
	cfg.MaxMessageBytes = int32(len(raw)) + 10
	l, _ := openTestLog(t, cfg)
	if _, err := l.Append(raw, testNow); !errors.Is(err, record.ErrMessageTooLarge) {
		t.Fatalf("decompressed batch over max.message.bytes: %v", err)
	}
}

func TestCompressionLevelsProduceReadableBatches(t *testing.T) {
	for _, c := range []struct {
		typ    CompressionType
		levels []int
	}{
		{CompressionGzip, []int{-1, 1, 9}}, {CompressionLz4, []int{1, 5, 17}}, {CompressionZstd, []int{-5, 1, 3, 22}},
	} {
		for _, level := range c.levels {
			cfg := smallConfig()
			cfg.SegmentBytes = 1 << 20
			cfg.CompressionType, cfg.GzipLevel, cfg.Lz4Level, cfg.ZstdLevel = c.typ, level, level, level
			l, _ := openTestLog(t, cfg)
			raw := testBatch{n: 10, valueSize: 500}.build(t)
			want := decodeBatches(t, raw)
			mustAppend(t, l, raw)
			got, _ := l.Read(0, 1<<20, true)
			if recs := decodeBatches(t, got.Records); len(recs) != len(want) || recs[9] != want[9] {
				t.Fatalf("codec %d level %d: records do not read back", c.typ, level)
			}
			if len(got.Records) >= len(raw) {
				t.Fatalf("codec %d level %d: %d bytes, not smaller than %d", c.typ, level, len(got.Records), len(raw))
			}
		}
	}
}
