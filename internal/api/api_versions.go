package api

// ApiVersions (key 18), v0–v5.
//
// Tells the client which APIs and versions this broker serves; the list is
// built from the registry, so it always matches the handlers. A client that
// asks with a newer version than ours gets a v0 response with
// UNSUPPORTED_VERSION and the full list, and retries at our maximum
// (KIP-511). v3+ carries the client's software name and version, which must
// match Kafka's pattern. v5 (KIP-1242) lets a client say which cluster and
// node it believes it reached; a mismatch answers REBOOTSTRAP_REQUIRED.
// Feature levels (KIP-584, v3+) are in features.go: group.version 1, as
// Kafka 4 finalizes it for the KIP-848 consumer protocol.

import (
	"context"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/wire"
)

func init() { register(kmsg.ApiVersions, 0, 5, handleApiVersions) }

var softwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiKeys()
	if s.Groups != nil && s.Groups.Config().Consumer.Disabled {
		resp.ApiKeys = withoutConsumerGroupAPIs(resp.ApiKeys)
	}
	switch {
	case r.Unsupported:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case req.Version >= 3 && (!softwarePattern.MatchString(req.ClientSoftwareName) || !softwarePattern.MatchString(req.ClientSoftwareVersion)):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.Version >= 5 && (req.ClusterID == nil) != (req.NodeID < 0):
		resp.ErrorCode = kerr.InvalidRequest.Code
	case req.Version >= 5 && req.ClusterID != nil && (*req.ClusterID != s.ClusterID || req.NodeID != s.nodeID()):
		resp.ErrorCode = kerr.RebootstrapRequired.Code
	default:
		if req.Version >= 3 {
			c.ClientSoftwareName, c.ClientSoftwareVersion = req.ClientSoftwareName, req.ClientSoftwareVersion
		}
	}
	if req.Version >= 3 && resp.ErrorCode == 0 {
		setFeatures(resp)
	}
	return resp, nil
}

// apiKeys lists every registered API with its version range, by key.
func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(registry))
	for key, d := range registry {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, d.min, d.max
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

// withoutConsumerGroupAPIs drops ConsumerGroupHeartbeat and
// ConsumerGroupDescribe, as Kafka leaves them out of ApiVersions when
// group.coordinator.rebalance.protocols lacks "consumer": a client then
// falls back to the classic protocol instead of trying KIP-848 and
// meeting UNSUPPORTED_VERSION.
func withoutConsumerGroupAPIs(keys []kmsg.ApiVersionsResponseApiKey) []kmsg.ApiVersionsResponseApiKey {
	out := keys[:0:0]
	for _, k := range keys {
		if k.ApiKey != kmsg.ConsumerGroupHeartbeat.Int16() && k.ApiKey != kmsg.ConsumerGroupDescribe.Int16() {
			out = append(out, k)
		}
	}
	return out
}
