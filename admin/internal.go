package admin

import (
	"context"
	"encoding/base64"
	"math"
	"time"
)

// timeoutMillis is the broker-side timeout of a topic request: what is left
// of ctx's deadline (KIP-133's AdminClient timeoutMs), 60 s without one.
func timeoutMillis(ctx context.Context) int32 {
	d, ok := ctx.Deadline()
	if !ok {
		return 60000
	}
	ms := time.Until(d).Milliseconds()
	return int32(max(1, min(ms, math.MaxInt32)))
}

// topicID prints a topic id as Kafka does (URL-safe base64 without padding).
func topicID(id [16]byte) string {
	if id == [16]byte{} {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}
