package api

// The TOPIC config resource: every topic config of the catalog, resolved
// through the topic's overrides and the broker's synonyms; overrides live in
// the metadata store under config/topics/<topic>.

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/wire"
	"kbroker/policy"
)

type topicConfigResource struct{}

func (topicConfigResource) describe(s *Server, snap *meta.Snapshot, name string) ([]configEntry, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	if snap.Topic(name) == nil {
		return nil, newError(kerr.UnknownTopicOrPartition, "")
	}
	base := s.topicConfigBase(snap)
	overrides := snap.TopicConfig(name)
	out := make([]configEntry, len(base))
	for i, e := range base {
		out[i] = e
		if v, ok := overrides[e.Name]; ok {
			out[i].Entry = config.WithTopicOverride(e.Entry, v)
		}
	}
	return out, nil
}

// topicConfigBase is every topic config resolved without topic overrides,
// sorted by name. It depends only on the broker-level layers, so it is
// computed once per snapshot and shared by every topic described.
func (s *Server) topicConfigBase(snap *meta.Snapshot) []configEntry {
	if c := s.topicBase.Load(); c != nil && c.snap == snap {
		return c.entries
	}
	out := topicBaseEntries(s.Logs.Layers(snap, ""))
	s.topicBase.Store(&topicBaseCache{snap: snap, entries: out})
	return out
}

// topicBaseEntries resolves every topic config through the broker-level
// layers, sorted by name.
func topicBaseEntries(layers config.Layers) []configEntry {
	var out []configEntry
	for _, d := range config.Topics.Defs() {
		out = append(out, configEntry{Entry: config.TopicBase(d, layers), def: d, sensitive: d.Sensitive()})
	}
	slices.SortFunc(out, byName)
	return out
}

type topicBaseCache struct {
	snap    *meta.Snapshot
	entries []configEntry
}

func (topicConfigResource) alter(ctx context.Context, s *Server, c *wire.Conn, name string, ops []configOp, replace, validateOnly bool) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	if s.Store.Snapshot().Topic(name) == nil {
		return newError(kerr.UnknownTopicOrPartition, "")
	}
	return storedConfigChange{
		kind:     meta.TopicConfigs,
		resource: policy.ConfigResource{Type: policy.Topic, Name: name},
		catalog:  config.Topics,
		check: func(d *config.Def, name, value string) error {
			if err := d.Validate(value); err != nil {
				return newError(kerr.InvalidConfig, err.Error())
			}
			return nil
		},
		checkAll: checkCompactionLags,
	}.apply(ctx, s, c, ops, replace, validateOnly)
}

// checkCompactionLags applies Kafka's cross-key rule on the merged set.
func checkCompactionLags(next map[string]string) error {
	minLag, okMin := next["min.compaction.lag.ms"]
	maxLag, okMax := next["max.compaction.lag.ms"]
	if !okMin || !okMax {
		return nil
	}
	lo, _ := strconv.ParseInt(minLag, 10, 64)
	hi, _ := strconv.ParseInt(maxLag, 10, 64)
	if lo > hi {
		return newError(kerr.InvalidConfig, fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi))
	}
	return nil
}
