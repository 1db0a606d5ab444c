package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// waitReady polls until the broker accepts a TCP connection and answers a
// kadm metadata request, which is the first thing every benchmark client
// does. A bare TCP accept is not enough: a broker may listen before it can
// serve.
func waitReady(ctx context.Context, b *Broker) error {
	var last error
	for {
		select {
		case <-b.child.Done():
			return fmt.Errorf("process exited before ready: %v", b.child.Err())
		default:
		}
		if last = probe(ctx, b.Addr); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func probe(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(pctx)
	if err != nil {
		return err
	}
	if len(md.Brokers) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// CreateTopic creates a 1-partition, RF 1 topic. Each run uses a fresh
// topic so no run reads or appends to another run's data.
func CreateTopic(ctx context.Context, addr, topic string) error {
	return CreateTopicPartitions(ctx, addr, topic, 1)
}

// CreateTopicPartitions creates an RF 1 topic of partitions partitions.
func CreateTopicPartitions(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return nil
}
