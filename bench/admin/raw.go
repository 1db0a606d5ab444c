package admin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is one TCP connection speaking the Kafka protocol without any
// client library in between: no connection pool, no retries, no throttle
// handling, so what is measured is exactly one request and its response.
type rawConn struct {
	nc       net.Conn
	clientID string
	corr     int32
	// received is when the last response's final byte was read: request
	// latencies stop there, so decoding a large response on the client
	// (shared cores) is not charged to the broker.
	received time.Time
}

func dialRaw(ctx context.Context, addr, clientID string) (*rawConn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, clientID: clientID}, nil
}

func (c *rawConn) Close() error { return c.nc.Close() }

// appendRequest frames req (version already set) with a request header.
func appendRequest(dst []byte, req kmsg.Request, corr int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, patched below
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0) // no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Do sends req and reads its response into resp (whose version must match
// req's). It returns the response frame's size.
func (c *rawConn) Do(req kmsg.Request, resp kmsg.Response, timeout time.Duration) (int, error) {
	c.corr++
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := c.nc.Write(appendRequest(nil, req, c.corr, c.clientID)); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return 0, fmt.Errorf("response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return 0, err
	}
	c.received = time.Now()
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return 0, fmt.Errorf("correlation id %d, want %d", corr, c.corr)
	}
	body = body[4:]
	// Flexible responses carry header tagged fields, except ApiVersions.
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(body) < 1 || body[0] != 0 {
			return 0, errors.New("unexpected response header tagged fields")
		}
		body = body[1:]
	}
	return n + 4, resp.ReadFrom(body)
}

// APIVersions asks the broker which APIs it serves (ApiVersions v0, which
// every broker answers) and returns the max version per API key.
func APIVersions(ctx context.Context, addr string) (map[int16]int16, error) {
	c, err := dialRaw(ctx, addr, "kbench")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	resp := kmsg.NewPtrApiVersionsResponse()
	if _, err := c.Do(req, resp, 5*time.Second); err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	out := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = k.MaxVersion
	}
	return out, nil
}

// recordBatch encodes one uncompressed v2 record batch holding n records
// with the given value and no key, as a producer without idempotence
// writes it.
func recordBatch(value []byte, n int, now time.Time) []byte {
	var records []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: value}
		body := r.AppendTo(nil) // Length is 0, one varint byte
		r.Length = int32(len(body) - 1)
		records = r.AppendTo(records)
	}
	ts := now.UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              records,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:], crc)
	return out
}

// batchSummary describes the record batches of one fetched partition.
type batchSummary struct {
	Batches    int
	Records    int
	Bytes      int   // whole batches only
	NextOffset int64 // offset after the last whole batch; -1 if none
	Partial    int   // bytes of a trailing partial batch (Kafka may return one)
}

// summarizeBatches walks the concatenated v2 batches of a fetch response
// by their length fields, without decoding records.
func summarizeBatches(b []byte) batchSummary {
	s := batchSummary{NextOffset: -1}
	for len(b) >= 61 {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:])))
		if size < 61 || size > len(b) {
			break
		}
		first := int64(binary.BigEndian.Uint64(b))
		lastDelta := int32(binary.BigEndian.Uint32(b[23:]))
		s.Batches++
		s.Records += int(int32(binary.BigEndian.Uint32(b[57:])))
		s.Bytes += size
		s.NextOffset = first + int64(lastDelta) + 1
		b = b[size:]
	}
	s.Partial = len(b)
	return s
}
