package broker

import "kbroker/internal/replica"

// deleteStrayReplicas deletes, once at startup in a cluster, the logs of
// partitions reassigned away from this broker while it was down: the
// controller no longer assigns them here, and this broker never saw the
// change that took it out (internal/replica deletes the others as the
// change arrives). A single broker holds every partition and skips this:
// its records may predate placement, or name an earlier node.id.
func (b *Broker) deleteStrayReplicas(parts *replica.Partitions) {
	parts.DeleteStrayLogs(b.store.Snapshot())
}
