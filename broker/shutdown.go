package broker

// Controlled shutdown: before a broker of an etcd cluster stops, its
// leaderships move to other in-sync replicas and it leaves every ISR, so
// clients lose no more than a metadata refresh, as Kafka's
// controlled.shutdown.enable does.

import (
	"context"
	"fmt"
	"time"

	"kbroker/internal/config"
	"kbroker/internal/controller"
)

// shutdownMarker is the membership that can ask the controller for a
// controlled shutdown (cluster.Member; the single broker's cluster.Local
// has nothing to hand over).
type shutdownMarker interface {
	BeginControlledShutdown(ctx context.Context, id int32) error
}

// ControlledShutdownTimeout is how long ControlledShutdown waits for the
// controller by default: Kafka's broker waits at most its shutdown
// timeout, five minutes, for the controller's approval.
const ControlledShutdownTimeout = 5 * time.Minute

// ControlledShutdown hands this broker's partitions over before Close:
// it stops following (so no leader puts it back in an ISR), marks its
// registration in controlled shutdown, and waits until the controller has
// moved every replicated partition it led to another in-sync replica and
// taken it out of every ISR it shared, or until ctx ends. Partitions with
// no other eligible replica are left without a leader, as Kafka leaves
// them. It does nothing with controlled.shutdown.enable=false, for a
// single broker, or before Start; the broker keeps serving until Close.
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	static := config.Layers{Static: b.cfg.Props}
	if config.BrokerValue("controlled.shutdown.enable", static) != "true" || b.store == nil || b.elections == nil {
		return nil
	}
	marker, ok := b.member.(shutdownMarker)
	if !ok {
		return nil
	}
	start := time.Now()
	id := b.cfg.NodeID
	if b.fetchers != nil {
		b.fetchers.Close()
		b.fetchers = nil
	}
	if err := marker.BeginControlledShutdown(ctx, id); err != nil {
		return fmt.Errorf("asking the controller for a controlled shutdown: %w", err)
	}
	b.log.Info("controlled shutdown: asked the controller to move this broker's leaderships", "partitions", controller.ShutdownPending(b.store.Snapshot(), id))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pending := controller.ShutdownPending(b.store.Snapshot(), id)
		if pending == 0 {
			b.log.Info("controlled shutdown complete", "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the controller to approve controlled shutdown: %d partitions still led by this broker or sharing their ISR with it: %w", pending, ctx.Err())
		case <-tick.C:
		}
	}
}
