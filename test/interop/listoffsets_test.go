package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/broker/brokertest"
	"kbroker/internal/testkit"
)

// A user looks offsets up by time with kadm: the first record at or after a
// timestamp, the log start and end, and the record with the largest
// timestamp — before and after a restart, as the time index must survive it
// (or be rebuilt).
func TestListOffsetsByTimestamp(t *testing.T) {
	const topic = "by-time"
	base := time.Now().Add(-time.Hour).UnixMilli()
	ts := func(i int) int64 { return base + int64(i)*10 } // record i at base+10i
	const n = 10

	props := testProps(t.TempDir(), nil)
	b := brokertest.StartWith(t, props)
	testkit.CreateTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)

	cl := testkit.Client(t, b.Addr())
	ctx := testkit.Context(t, 10*time.Second)
	// Records 0–4 go in one batch (lookups must look inside a batch),
	// records 5–9 in a batch each.
	var first []*kgo.Record
	for i := range 5 {
		first = append(first, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i), Timestamp: time.UnixMilli(ts(i))})
	}
	if err := cl.ProduceSync(ctx, first...).FirstErr(); err != nil {
		t.Fatalf("produce batch: %v", err)
	}
	for i := 5; i < n; i++ {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i), Timestamp: time.UnixMilli(ts(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
	}

	check := func(t *testing.T, addr string) {
		adm := newAdmin(t, addr)
		ctx := testkit.Context(t, 10*time.Second)
		lookup := func(what string, list kadm.ListedOffsets, err error) kadm.ListedOffset {
			t.Helper()
			if err == nil {
				err = list.Error()
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			o, ok := list.Lookup(topic, 0)
			if !ok {
				t.Fatalf("%s: no answer for partition 0: %v", what, list)
			}
			return o
		}
		for _, c := range []struct {
			name       string
			milli      int64
			wantOffset int64
			wantTS     int64
		}{
			{"before every record", base - 1000, 0, ts(0)},
			{"exactly the first record", ts(0), 0, ts(0)},
			{"inside the first batch, between records 2 and 3", ts(2) + 5, 3, ts(3)},
			{"exactly record 4 (last of the batch)", ts(4), 4, ts(4)},
			{"between batches, records 6 and 7", ts(6) + 1, 7, ts(7)},
			{"exactly the last record", ts(n - 1), n - 1, ts(n - 1)},
		} {
			list, err := adm.ListOffsetsAfterMilli(ctx, c.milli, topic)
			o := lookup(c.name, list, err)
			if o.Offset != c.wantOffset || o.Timestamp != c.wantTS {
				t.Errorf("ListOffsetsAfterMilli(%s = %d): offset %d timestamp %d; want offset %d timestamp %d",
					c.name, c.milli, o.Offset, o.Timestamp, c.wantOffset, c.wantTS)
			}
		}

		// After every record: Kafka answers -1 and kadm falls back to the end.
		list, err := adm.ListOffsetsAfterMilli(ctx, ts(n-1)+1, topic)
		if o := lookup("after every record", list, err); o.Offset != n {
			t.Errorf("ListOffsetsAfterMilli(after every record): offset %d, want the end offset %d", o.Offset, n)
		}
		raw := rawListOffsets(t, addr, topic, ts(n-1)+1)
		if raw.ErrorCode != 0 || raw.Offset != -1 || raw.Timestamp != -1 {
			t.Errorf("raw ListOffsets(after every record): error %d offset %d timestamp %d; want 0, -1, -1",
				raw.ErrorCode, raw.Offset, raw.Timestamp)
		}

		list, err = adm.ListStartOffsets(ctx, topic)
		if o := lookup("start offsets", list, err); o.Offset != 0 {
			t.Errorf("ListStartOffsets: %d, want 0", o.Offset)
		}
		list, err = adm.ListEndOffsets(ctx, topic)
		if o := lookup("end offsets", list, err); o.Offset != n {
			t.Errorf("ListEndOffsets: %d, want %d", o.Offset, n)
		}
		list, err = adm.ListMaxTimestampOffsets(ctx, topic)
		if o := lookup("max timestamp", list, err); o.Offset != n-1 || o.Timestamp != ts(n-1) {
			t.Errorf("ListMaxTimestampOffsets: offset %d timestamp %d; want %d, %d", o.Offset, o.Timestamp, n-1, ts(n-1))
		}
	}
	t.Run("live", func(t *testing.T) { check(t, b.Addr()) })
	if t.Failed() {
		return
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b = brokertest.StartWith(t, props)
	t.Run("after restart", func(t *testing.T) { check(t, b.Addr()) })
}

// KIP-734 (ListOffsets -3) names the record with the largest timestamp, even
// when it sits inside a batch whose later records are older; Kafka 3.8 fixed
// its own answer to be that record's offset (KAFKA-16310), not the batch's
// last offset.
func TestListOffsetsMaxTimestampInsideBatch(t *testing.T) {
	const topic = "max-ts-mid-batch"
	addr := startBroker(t, nil)
	testkit.CreateTopic(t, newAdmin(t, addr), topic, 1, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	stamps := []int64{base, base + 300, base + 100, base + 200} // max at offset 1
	var rs []*kgo.Record
	for i, s := range stamps {
		rs = append(rs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i), Timestamp: time.UnixMilli(s)})
	}
	if err := testkit.Client(t, addr).ProduceSync(testkit.Context(t, 10*time.Second), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	raw := rawListOffsets(t, addr, topic, -3)
	if raw.ErrorCode != 0 || raw.Offset != 1 || raw.Timestamp != base+300 {
		t.Errorf("ListOffsets(-3): error %d offset %d timestamp %d; want 0, 1, %d", raw.ErrorCode, raw.Offset, raw.Timestamp, base+300)
	}
	// The first record at or after base+150 is offset 1 (base+300), not
	// offset 3 (base+200, the first one after base+150 in time order).
	raw = rawListOffsets(t, addr, topic, base+150)
	if raw.ErrorCode != 0 || raw.Offset != 1 || raw.Timestamp != base+300 {
		t.Errorf("ListOffsets(%d): error %d offset %d timestamp %d; want 0, 1, %d", base+150, raw.ErrorCode, raw.Offset, raw.Timestamp, base+300)
	}
}

// rawListOffsets sends one ListOffsets for partition 0 of topic at the
// newest version both sides know, bypassing kadm's fallbacks.
func rawListOffsets(t *testing.T, addr, topic string, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testkit.Context(t, 10*time.Second), testkit.Client(t, addr))
	if err != nil {
		t.Fatalf("ListOffsets(%d): %v", timestamp, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets(%d): want one topic and partition, got %+v", timestamp, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}
