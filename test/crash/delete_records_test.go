package crash

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A DeleteRecords the broker acknowledged survives kill -9: the log start
// offset is on disk before the answer (log-start-offset-checkpoint), so a
// broker killed right after answering comes back with its log starting at
// the acknowledged low watermark, not at the base of the segment holding
// it, and ListOffsets earliest and a consumer from the start agree.
func TestKill9KeepsAcknowledgedDeleteRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and SIGKILLs the kbroker binary")
	}
	b := newBroker(t, nil, false)
	p := run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clientOf := func(addr string) (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, kadm.NewClient(cl)
	}
	cl, adm := clientOf(p.Addr)
	segment := "2000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"internal.segment.bytes": &segment}, "trimmed"); err != nil {
		t.Fatal(err)
	}
	produced := 0
	for round, deleteTo := range []int64{37, 111, 205} {
		for ; produced < 100*(round+1); produced++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "trimmed", Value: []byte(fmt.Sprint("v", produced))}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", produced, err)
			}
		}
		res, err := adm.DeleteRecords(ctx, kadm.Offsets{"trimmed": {0: {Topic: "trimmed", Partition: 0, At: deleteTo}}})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := res.Lookup("trimmed", 0); r.Err != nil || r.LowWatermark != deleteTo {
			t.Fatalf("round %d: DeleteRecords to %d: %d, %v", round, deleteTo, r.LowWatermark, r.Err)
		}
		p.Kill9(t)
		p = run(t, b)
		cl, adm = clientOf(p.Addr)
		starts, err := adm.ListStartOffsets(ctx, "trimmed")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup("trimmed", 0); o.Err != nil || o.Offset != deleteTo {
			t.Fatalf("round %d: after kill -9 the log starts at %d (%v), DeleteRecords acknowledged %d", round, o.Offset, o.Err, deleteTo)
		}
		consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trimmed": {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		fs := consumer.PollRecords(ctx, 1)
		consumer.Close()
		if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != deleteTo {
			t.Fatalf("round %d: a consumer from the start read %v first, want offset %d", round, recs, deleteTo)
		}
	}
}
