package admin_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/admin"
)

// A group's lag per partition, then a replay of the last hour once its
// consumers have stopped (Kafka resets only groups without members).
func ExampleClient_ResetGroupOffsets() {
	addr, stop := exampleBroker(nil)
	defer stop()
	c, err := admin.New(kgo.SeedBrokers(addr))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := c.CreateTopics(ctx, []admin.NewTopic{{Name: "orders", Partitions: 1}}, false)
	if err != nil || rs.All() != nil {
		panic(fmt.Sprint(err, rs.All()))
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for i := 0; i < 3; i++ {
		r := &kgo.Record{Topic: "orders", Timestamp: time.Now().Add(time.Duration(i-3) * time.Hour)}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			panic(err)
		}
	}
	// The group "billing" has read everything (committed offset 3).
	orders := admin.TopicPartition{Topic: "orders", Partition: 0}
	if _, err := c.CommitGroupOffsets(ctx, "billing", map[admin.TopicPartition]int64{orders: 3}); err != nil {
		panic(err)
	}

	lag, err := c.DescribeGroupLag(ctx, "billing")
	if err != nil {
		panic(err)
	}
	for _, p := range lag.Partitions {
		fmt.Printf("%s committed %d, log end %d, lag %d\n", p.TopicPartition, p.CommittedOffset, p.LogEndOffset, p.Lag)
	}
	plan, err := c.ResetGroupOffsets(ctx, "billing", admin.OffsetReset{
		To: admin.ResetToTime, Time: time.Now().Add(-90 * time.Minute), Execute: true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("orders-0 now at", plan.Offsets[orders])
	// Output:
	// orders-0 committed 3, log end 3, lag 0
	// orders-0 now at 2
}
