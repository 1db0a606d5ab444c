package admin

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerInfo is one broker of the cluster, as Metadata lists it.
type BrokerInfo struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack,omitempty"`
}

// ListBrokers lists the cluster's brokers sorted by id.
func (c *Client) ListBrokers(ctx context.Context) ([]BrokerInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // no topics, only brokers
	resp, err := request[*kmsg.MetadataResponse](ctx, c, req)
	if err != nil {
		return nil, err
	}
	out := make([]BrokerInfo, 0, len(resp.Brokers))
	for _, b := range resp.Brokers {
		out = append(out, BrokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
	}
	slices.SortFunc(out, func(a, b BrokerInfo) int { return int(a.NodeID - b.NodeID) })
	return out, nil
}
