package api

// ElectLeaders (key 43), v0–v2 (KIP-183, KIP-460).
//
// A preferred (v0, or election_type 0) or unclean (1) election of the
// partitions named, or of every partition when topics is null; the
// controller package runs each as a compare-and-swap of the partition
// record. Per partition: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
// ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION; an answer for
// every partition leaves out those that needed no election, as Kafka's
// does. Needs ALTER on the cluster: without it every partition, and from
// v1 the whole answer, gets CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/controller"
	"kbroker/internal/wire"
)

func init() {
	register(kmsg.ElectLeaders, 0, 2, handleElectLeaders, catchesUp(), clusterACL(auth.OpAlter))
}

func handleElectLeaders(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := controller.ElectPreferred
	if req.Version >= 1 && req.ElectionType == 1 {
		typ = controller.ElectUnclean
	}
	result := func(topic string, partitions map[int32]error) {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = topic
		ids := make([]int32, 0, len(partitions))
		for p := range partitions {
			ids = append(ids, p)
		}
		slices.Sort(ids)
		for _, p := range ids {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode, rp.ErrorMessage = errorCode(partitions[p])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if !s.clusterAllowed(c, kmsg.ElectLeaders) {
		resp.ErrorCode, _ = errorCode(errClusterAuth)
		for _, rt := range req.Topics {
			refused := map[int32]error{}
			for _, p := range rt.Partitions {
				refused[p] = errClusterAuth
			}
			result(rt.Topic, refused)
		}
		return resp, nil
	}
	if req.Topics == nil {
		all := s.controller.ElectAll(ctx, typ)
		names := make([]string, 0, len(all))
		for name := range all {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			result(name, all[name])
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		outcome := map[int32]error{}
		for _, p := range rt.Partitions {
			outcome[p] = s.controller.Elect(ctx, typ, rt.Topic, p)
		}
		result(rt.Topic, outcome)
	}
	return resp, nil
}
