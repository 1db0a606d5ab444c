package api

// ListConfigResources (key 74), v0–v1 (KIP-1000 as ListClientMetricsResources,
// renamed and widened by KIP-1142 in Kafka 4.1).
//
// The config resources a DescribeConfigs can ask about. v0 lists the
// client-metrics subscriptions only: kbroker has none (KIP-714 client
// metrics are not served), so its answer is empty. v1 takes a filter of
// resource types (empty: all of them) over TOPIC (every topic), BROKER
// and BROKER_LOGGER (every live broker), GROUP (every group with config
// overrides, whether or not the group exists) and CLIENT_METRICS (none);
// a type outside those fails the request with UNSUPPORTED_VERSION, as in
// Kafka. Needs CLUSTER DESCRIBE_CONFIGS (else CLUSTER_AUTHORIZATION_FAILED
// for the whole request). Entries are sorted by type, then name.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
)

func init() { register(kmsg.ListConfigResources, 0, 1, handleListConfigResources, catchesUp()) }

// listableConfigTypes are the types v1 lists, each with its lister.
var listableConfigTypes = map[kmsg.ConfigResourceType]func(s *Server, snap *meta.Snapshot) []string{
	kmsg.ConfigResourceTypeTopic:        func(_ *Server, snap *meta.Snapshot) []string { return slices.Collect(snap.TopicNames()) },
	kmsg.ConfigResourceTypeBroker:       liveBrokerNames,
	kmsg.ConfigResourceTypeBrokerLogger: liveBrokerNames,
	kmsg.ConfigResourceTypeGroupConfig: func(_ *Server, snap *meta.Snapshot) []string {
		var out []string
		for group := range snap.AllGroupConfigs() {
			out = append(out, group)
		}
		return out
	},
	kmsg.ConfigResourceTypeClientMetrics: func(*Server, *meta.Snapshot) []string { return nil },
}

func liveBrokerNames(s *Server, snap *meta.Snapshot) []string {
	var out []string
	for id := range s.liveBrokerSet(snap) {
		out = append(out, itoa32(id))
	}
	return out
}

func handleListConfigResources(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if !s.allowed(c, auth.OpDescribeConfigs, auth.ResourceCluster, auth.ClusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	types := []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	if req.Version >= 1 {
		types = types[:0]
		for _, t := range req.ResourceTypes {
			typ := kmsg.ConfigResourceType(t)
			if listableConfigTypes[typ] == nil {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return resp, nil
			}
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
		}
		if len(types) == 0 {
			for typ := range listableConfigTypes {
				types = append(types, typ)
			}
		}
	}
	snap := s.Store.Snapshot()
	for _, typ := range types {
		for _, name := range listableConfigTypes[typ](s, snap) {
			res := kmsg.NewListConfigResourcesResponseConfigResource()
			res.Name, res.Type = name, int8(typ)
			resp.ConfigResources = append(resp.ConfigResources, res)
		}
	}
	slices.SortFunc(resp.ConfigResources, func(a, b kmsg.ListConfigResourcesResponseConfigResource) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
	})
	return resp, nil
}
