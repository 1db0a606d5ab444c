package api

// Quota enforcement shared by the handlers: who a connection counts as, and
// how a throttle reaches the client (the response's throttle_time_ms, and
// the connection layer mutes the connection for that long — KIP-219).

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

// quotaUser is the principal's name, as quotas know users (Kafka uses the
// name without the "User:" type).
func quotaUser(c *wire.Conn) string {
	_, name, ok := strings.Cut(c.Principal, ":")
	if !ok {
		return c.Principal
	}
	return name
}

// throttleMillis converts a throttle for the wire.
func throttleMillis(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<31-1 {
		return 1<<31 - 1
	}
	return int32(ms)
}

// addThrottle raises resp's throttle to d if d is longer: when several
// quotas are violated, the longest throttle applies.
func addThrottle(resp kmsg.Response, d time.Duration) {
	tr, ok := resp.(kmsg.ThrottleResponse)
	if !ok || d <= 0 {
		return
	}
	if cur, _ := tr.Throttle(); throttleMillis(d) > cur {
		resp.(kmsg.SetThrottleResponse).SetThrottle(throttleMillis(d))
	}
}

// chargeRequestTime records the handler's time against the connection's
// request_percentage quota and applies the throttle. Time spent parked (a
// fetch long poll) is not work and is not charged; acks=0 produce, which
// has no response, is not charged either (as in Kafka).
func (s *Server) chargeRequestTime(c *wire.Conn, r *wire.Request, resp kmsg.Response, elapsed time.Duration) {
	if resp == nil || s.isReplication(c, r) {
		return
	}
	work := elapsed - r.Parked
	if work < 0 {
		work = 0
	}
	addThrottle(resp, s.Quotas.RecordRequestTime(quotaUser(c), r.ClientID, work))
}

// admitMutations applies the controller mutation quota (KIP-599) to an
// operation creating or deleting n partitions. In strict mode (CreateTopics
// v6+, CreatePartitions v3+, DeleteTopics v5+) an operation arriving while
// the quota is exhausted is refused with THROTTLING_QUOTA_EXCEEDED; older
// clients are always admitted and throttled afterwards. The throttle to
// report is returned either way.
func (s *Server) admitMutations(c *wire.Conn, r *wire.Request, strict bool, n int) (time.Duration, error) {
	user := quotaUser(c)
	if strict {
		if throttle, ok := s.Quotas.CheckMutations(user, r.ClientID); !ok {
			return throttle, newError(kerr.ThrottlingQuotaExceeded, "The throttling quota has been exceeded.")
		}
	}
	return s.Quotas.RecordMutations(user, r.ClientID, n), nil
}

// isReplication reports whether r is a follower's fetch from a broker
// allowed CLUSTER_ACTION: Kafka answers those exempt from request quotas
// (sendResponseExemptThrottle), so replication is never throttled by a
// client quota.
func (s *Server) isReplication(c *wire.Conn, r *wire.Request) bool {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok || !(req.ReplicaID >= 0 || (req.Version >= 15 && req.ReplicaState.ID >= 0)) {
		return false
	}
	return s.followerFetchAllowed(c) == nil
}
