package cluster

import (
	"context"
	"time"

	"kbroker/internal/meta"
)

// A broker registers marked UncleanShutdown when its previous run did not
// end cleanly (storage.TakeBrokerCleanShutdown). The elected controller then takes it
// out of every ISR and ELR and clears the mark (ClearUncleanShutdown), as
// Kafka's controller does on such a registration
// (ReplicationControlManager.handleBrokerUncleanShutdown).

// UncleanShutdownPending reports whether this broker has not (yet) joined
// with a clean registration: its previous run shut down uncleanly and the
// controller has not cleared the mark, or it never joined. The broker
// writes its clean-shutdown marker at Close only when this is false or
// its previous run was clean, so a crash is never forgotten before the
// controller has acted on it.
func (m *Member) UncleanShutdownPending() bool { return m.uncleanPending.Load() }

// noteUncleanCleared clears uncleanPending once snap holds this broker's
// registration without the mark.
func (m *Member) noteUncleanCleared(snap *meta.Snapshot) {
	if b := snap.LiveBrokers()[m.reg.ID]; b != nil && !b.UncleanShutdown {
		m.uncleanPending.Store(false)
	}
}

// awaitUncleanCleared waits, at most a lease TTL and a request timeout
// (time for a controller to be elected and to act), until the controller
// has cleared this broker's UncleanShutdown mark.
func (m *Member) awaitUncleanCleared(ctx context.Context) {
	start := time.Now()
	deadline := start.Add(time.Duration(m.ttl)*time.Second + m.timeout)
	m.log.Info("the previous run did not shut down cleanly; waiting for the controller to take this broker out of every ISR and ELR", "node.id", m.reg.ID)
	for m.uncleanPending.Load() {
		if time.Now().After(deadline) {
			m.log.Warn("the controller has not acted on this broker's unclean shutdown yet; starting anyway", "node.id", m.reg.ID, "waited", time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	m.log.Info("the controller took this broker out of every ISR and ELR after its unclean shutdown", "node.id", m.reg.ID, "took", time.Since(start).Round(time.Millisecond))
}

// ClearUncleanShutdown clears the UncleanShutdown mark of broker id's
// registration, for the controller once it has taken id out of every ISR
// and ELR; it returns once this broker's store has the change. A broker
// not registered, or not marked, needs nothing.
func (m *Member) ClearUncleanShutdown(ctx context.Context, id int32) error {
	return m.rewriteRegistration(ctx, id, func(reg *meta.Broker) bool {
		if !reg.UncleanShutdown {
			return false
		}
		reg.UncleanShutdown = false
		return true
	})
}
