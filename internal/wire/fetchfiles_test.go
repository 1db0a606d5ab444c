package wire

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testFile is a RecordFile over a file of the test's: each Pin opens the
// file anew, as storage's Pin gives a descriptor of the sender's own.
type testFile struct {
	path string
	off  int64
	n    int
}

func (f testFile) Len() int { return f.n }
func (f testFile) Pin() (*os.File, int64, error) {
	fd, err := os.Open(f.path)
	return fd, f.off, err
}

// randomFetch builds a random Fetch response of version v: many topics
// and partitions, errors, aborted transactions, preferred replicas, the
// tagged fields of v12+ (diverging epoch, current leader, snapshot id,
// node endpoints), and record sets empty, small, large in memory, or in
// file (those in files are written to dir; files maps them). want is the
// whole response as kmsg encodes it; got has the files' partitions empty,
// as the handler leaves them.
func randomFetch(t testing.TB, rng *rand.Rand, v int16, dir string) (want, got *kmsg.FetchResponse, files RecordFiles) {
	want = kmsg.NewPtrFetchResponse()
	want.Version = v
	want.ThrottleMillis = rng.Int32N(1000)
	if rng.IntN(4) == 0 {
		want.ErrorCode = int16(rng.IntN(100))
	}
	want.SessionID = rng.Int32()
	if v >= 16 && rng.IntN(3) == 0 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 2, "broker-2.example", 9092
		want.Brokers = append(want.Brokers, b)
	}
	path := filepath.Join(dir, "segment.log")
	seg, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	var segLen int64
	got = kmsg.NewPtrFetchResponse()
	for ti := range 1 + rng.IntN(4) {
		wt := kmsg.NewFetchResponseTopic()
		if v >= 13 {
			wt.TopicID[0], wt.TopicID[15] = byte(ti+1), byte(rng.IntN(256))
		} else {
			wt.Topic = "topic-" + string(rune('a'+ti))
		}
		for pi := range 1 + rng.IntN(12) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = int32(pi)
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64N(1<<40), rng.Int64N(1<<40), rng.Int64N(1<<20)
			if rng.IntN(5) == 0 {
				p.ErrorCode = int16(1 + rng.IntN(100))
			}
			for range rng.IntN(3) {
				a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				a.ProducerID, a.FirstOffset = rng.Int64N(1<<30), rng.Int64N(1<<30)
				p.AbortedTransactions = append(p.AbortedTransactions, a)
			}
			if v >= 11 && rng.IntN(4) == 0 {
				p.PreferredReadReplica = rng.Int32N(5)
			}
			if v >= 12 && rng.IntN(4) == 0 {
				switch rng.IntN(3) {
				case 0:
					p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 1234
				case 1:
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 7
				case 2:
					p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 99, 1
				}
			}
			var inFile bool
			switch rng.IntN(5) {
			case 0:
				p.RecordBatches = []byte{}
			case 1:
				p.RecordBatches = randomBytes(rng, 1+rng.IntN(2000))
			case 2:
				p.RecordBatches = randomBytes(rng, largeRecords+rng.IntN(200<<10))
			default:
				// Sizes whose compact length takes 3 and 4 bytes.
				p.RecordBatches = randomBytes(rng, []int{largeRecords, 100 << 10, largeRecords, 100 << 10, 3 << 20}[rng.IntN(5)]+rng.IntN(1000))
				inFile = true
			}
			gp := p
			if inFile {
				gap := rng.Int64N(5000)
				if _, err := seg.WriteAt(p.RecordBatches, segLen+gap); err != nil {
					t.Fatal(err)
				}
				files.Add(wt.Topic, wt.TopicID, p.Partition, testFile{path, segLen + gap, len(p.RecordBatches)})
				segLen += gap + int64(len(p.RecordBatches))
				gp.RecordBatches = []byte{}
			} else {
				gp.RecordBatches = bytes.Clone(p.RecordBatches)
			}
			wt.Partitions = append(wt.Partitions, p)
			gt := len(got.Topics)
			if pi == 0 {
				got.Topics = append(got.Topics, wt)
				got.Topics[gt].Partitions = nil
			} else {
				gt--
			}
			got.Topics[gt].Partitions = append(got.Topics[gt].Partitions, gp)
		}
		want.Topics = append(want.Topics, wt)
	}
	got.Version, got.ThrottleMillis, got.ErrorCode, got.SessionID, got.Brokers = want.Version, want.ThrottleMillis, want.ErrorCode, want.SessionID, want.Brokers
	return want, got, files
}

// noise is random bytes that record sets are cut from.
var noise = func() []byte {
	b := make([]byte, 4<<20)
	rand.NewChaCha8([32]byte{18}).Read(b)
	return b
}()

// randomBytes is n random bytes (n at most 4 MiB).
func randomBytes(rng *rand.Rand, n int) []byte {
	off := rng.IntN(len(noise) - n + 1)
	return bytes.Clone(noise[off : off+n])
}

// tcpPair is a connected loopback TCP pair: the server side as a Conn.
func tcpPair(t testing.TB) (*Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	c := &Conn{nc: server, srv: &Server{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), Remote: server.RemoteAddr()}
	return c, client
}

// writeAndReceive writes resp as the connection answers a request and
// returns the frame the client receives.
func writeAndReceive(t testing.TB, c *Conn, client net.Conn, req *Request, resp kmsg.Response) []byte {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		w := &pooledWriter{dst: progressWriter{c: c, ctx: context.Background()}}
		err := c.writeResponse(context.Background(), w, req, resp)
		if err == nil {
			err = w.Flush()
		}
		done <- err
	}()
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(client, size[:]); err != nil {
		t.Fatal(err)
	}
	n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	if _, err := io.ReadFull(client, frame[4:]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return frame
}

// The bytes the zero-copy writer puts on the wire, for record sets sent
// from files with sendfile and from memory outside the encoding, are
// exactly kmsg's encoding of the same response, in every Fetch version
// served (4-16), flexible and not, with every field and tag the response
// can carry.
func TestFetchResponseFromFilesIsKmsgEncoding(t *testing.T) {
	t.Run("TCP", func(t *testing.T) {
		c, client := tcpPair(t)
		before := SentFromFiles()
		differential(t, c, client)
		if SentFromFiles() == before {
			t.Fatal("nothing was sent with sendfile")
		}
	})
	// A connection that is not TCP (as TLS ones are not) gets the files'
	// bytes read, and large record sets written outside the encoding.
	t.Run("pipe", func(t *testing.T) {
		server, client := net.Pipe()
		t.Cleanup(func() { client.Close(); server.Close() })
		c := &Conn{nc: server, srv: &Server{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), Remote: &net.TCPAddr{}}
		differential(t, c, client)
	})
}

func differential(t *testing.T, c *Conn, client net.Conn) {
	rng := rand.New(rand.NewPCG(18, 227))
	sent := 0
	for round := range 3 {
		for v := int16(4); v <= 16; v++ {
			want, got, files := randomFetch(t, rng, v, t.TempDir())
			req := &Request{Key: int16(kmsg.Fetch), Version: v, CorrelationID: int32(round*100) + int32(v), RecordFiles: files}
			wantFrame := appendResponse(nil, req, want)
			gotFrame := writeAndReceive(t, c, client, req, got)
			if !bytes.Equal(gotFrame, wantFrame) {
				t.Fatalf("v%d round %d: %d bytes on the wire differ from kmsg's %d (first difference at %d)", v, round, len(gotFrame), len(wantFrame), mismatch(gotFrame, wantFrame))
			}
			sent += len(files)
		}
	}
	if sent == 0 {
		t.Fatal("no record set was sent from a file")
	}
}

// A record set whose file is gone by the time the response is written is
// answered empty, the rest of the response intact, and the connection
// stays usable.
func TestFetchResponseWithAFileGoneAnswersItEmpty(t *testing.T) {
	c, client := tcpPair(t)
	dir := t.TempDir()
	records := bytes.Repeat([]byte("r"), 64<<10)
	path := filepath.Join(dir, "seg.log")
	if err := os.WriteFile(path, records, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{11, 16} {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		topic := kmsg.NewFetchResponseTopic()
		topic.Topic, topic.TopicID = "t", [16]byte{1}
		if v < 13 {
			topic.TopicID = [16]byte{}
		} else {
			topic.Topic = ""
		}
		for i := range 2 {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.RecordBatches = int32(i), []byte{}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
		var files RecordFiles
		files.Add(topic.Topic, topic.TopicID, 0, testFile{filepath.Join(dir, "gone.log"), 0, 100 << 10})
		files.Add(topic.Topic, topic.TopicID, 1, testFile{path, 0, len(records)})
		want := kmsg.NewPtrFetchResponse()
		*want = *resp
		want.Topics = []kmsg.FetchResponseTopic{topic}
		want.Topics[0].Partitions = append([]kmsg.FetchResponseTopicPartition(nil), topic.Partitions...)
		want.Topics[0].Partitions[1].RecordBatches = records
		req := &Request{Key: int16(kmsg.Fetch), Version: v, CorrelationID: 5, RecordFiles: files}
		wantFrame := appendResponse(nil, req, want)
		if got := writeAndReceive(t, c, client, req, resp); !bytes.Equal(got, wantFrame) {
			t.Fatalf("v%d: the answer with a file gone is not kmsg's encoding of it answered empty", v)
		}
	}
}

// FuzzFetchResponseFromFiles runs the differential test on responses
// generated from the fuzzer's seeds.
func FuzzFetchResponseFromFiles(f *testing.F) {
	f.Add(uint64(1), uint8(4))
	f.Add(uint64(2), uint8(12))
	f.Add(uint64(3), uint8(16))
	f.Fuzz(func(t *testing.T, seed uint64, version uint8) {
		v := 4 + int16(version%13)
		rng := rand.New(rand.NewPCG(seed, uint64(version)))
		c, client := tcpPair(t)
		want, got, files := randomFetch(t, rng, v, t.TempDir())
		req := &Request{Key: int16(kmsg.Fetch), Version: v, CorrelationID: 1, RecordFiles: files}
		if !bytes.Equal(writeAndReceive(t, c, client, req, got), appendResponse(nil, req, want)) {
			t.Fatalf("v%d seed %d: the wire differs from kmsg's encoding", v, seed)
		}
	})
}

// A response of more file-backed partitions than a send may pin
// (maxPinnedFiles) sends the first ones from their files and reads the
// rest, and is still kmsg's encoding.
func TestFetchResponseOfManyFilesPinsABoundedNumber(t *testing.T) {
	c, client := tcpPair(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "seg.log")
	rng := rand.New(rand.NewPCG(3, 4))
	const parts, size = maxPinnedFiles + 20, largeRecords + 100
	seg := randomBytes(rng, parts*size)
	if err := os.WriteFile(path, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	want, got := kmsg.NewPtrFetchResponse(), kmsg.NewPtrFetchResponse()
	want.Version, got.Version = 16, 16
	wt, gt := kmsg.NewFetchResponseTopic(), kmsg.NewFetchResponseTopic()
	wt.TopicID, gt.TopicID = [16]byte{9}, [16]byte{9}
	var files RecordFiles
	for i := range parts {
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition, p.RecordBatches = int32(i), []byte{}
		gt.Partitions = append(gt.Partitions, p)
		p.RecordBatches = seg[i*size : (i+1)*size]
		wt.Partitions = append(wt.Partitions, p)
		files.Add("", wt.TopicID, int32(i), testFile{path, int64(i * size), size})
	}
	want.Topics, got.Topics = []kmsg.FetchResponseTopic{wt}, []kmsg.FetchResponseTopic{gt}
	req := &Request{Key: int16(kmsg.Fetch), Version: 16, CorrelationID: 1, RecordFiles: files}
	before := SentFromFiles()
	if !bytes.Equal(writeAndReceive(t, c, client, req, got), appendResponse(nil, req, want)) {
		t.Fatal("the wire differs from kmsg's encoding")
	}
	if sent := SentFromFiles() - before; sent != maxPinnedFiles*size {
		t.Fatalf("%d bytes sent from files, want %d (%d pinned)", sent, maxPinnedFiles*size, maxPinnedFiles)
	}
}
