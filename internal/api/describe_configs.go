package api

// DescribeConfigs (key 32), v0–v4.
//
// Every value of a TOPIC, BROKER (this broker's id, or "" for the
// cluster-wide dynamic default) or BROKER_LOGGER resource, with its source,
// read-only flag, sensitivity (sensitive values are null, synonyms too),
// and on request its synonyms (v1+) and documentation (v3+); the type is
// reported from v3. A null or empty key list means every key; unknown keys
// are left out silently. Errors are per resource, except that an unknown
// resource type fails every resource with INVALID_REQUEST, as in Kafka.
// v0 (removed in Kafka 4) is still served for old clients: IsDefault is set
// when the value is the catalog default.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	unknownType := slices.ContainsFunc(req.Resources, func(rr kmsg.DescribeConfigsRequestResource) bool {
		return configResources[rr.ResourceType] == nil
	})
	snap := s.Store.Snapshot()
	// Every topic without overrides describes the same way: render that
	// answer once per request and share it (encoding only reads it), so
	// describing thousands of topics builds one set of entries, not one each.
	var plainTopic []kmsg.DescribeConfigsResponseResourceConfig
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if unknownType {
			res.ErrorCode = kerr.InvalidRequest.Code
			msg := "Unsupported resource type in request"
			res.ErrorMessage = &msg
			resp.Resources = append(resp.Resources, res)
			continue
		}
		err := s.configResourceAllowed(c, rr.ResourceType, rr.ResourceName, auth.OpDescribeConfigs)
		if err == nil && plainTopic != nil && rr.ResourceType == kmsg.ConfigResourceTypeTopic && len(rr.ConfigNames) == 0 &&
			snap.Topics[rr.ResourceName] != nil && len(snap.TopicConfigs[rr.ResourceName]) == 0 {
			res.Configs = plainTopic
			resp.Resources = append(resp.Resources, res)
			continue
		}
		var entries []configEntry
		if err == nil {
			entries, err = configResources[rr.ResourceType].describe(s, snap, rr.ResourceName)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		if !slices.IsSortedFunc(entries, byName) {
			slices.SortFunc(entries, byName)
		}
		for _, e := range entries {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			res.Configs = append(res.Configs, describedConfig(req, e))
		}
		if rr.ResourceType == kmsg.ConfigResourceTypeTopic && len(rr.ConfigNames) == 0 && len(snap.TopicConfigs[rr.ResourceName]) == 0 {
			plainTopic = res.Configs
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func byName(a, b configEntry) int { return strings.Compare(a.Name, b.Name) }

// describedConfig renders one entry for the request's version and options.
func describedConfig(req *kmsg.DescribeConfigsRequest, e configEntry) kmsg.DescribeConfigsResponseResourceConfig {
	rc := kmsg.NewDescribeConfigsResponseResourceConfig()
	rc.Name = e.Name
	rc.ReadOnly = e.readOnly
	rc.IsSensitive = e.sensitive
	rc.Source = kmsg.ConfigSource(e.Source)
	rc.IsDefault = e.Source == config.SourceDefault
	if !e.sensitive {
		rc.Value = e.Value
	}
	if e.def != nil {
		rc.ConfigType = kmsg.ConfigType(e.def.Type)
		if req.IncludeDocumentation && e.def.Doc != "" {
			doc := e.def.Doc
			rc.Documentation = &doc
		}
	}
	if req.IncludeSynonyms {
		for _, syn := range e.Synonyms {
			rs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			rs.Name, rs.Source = syn.Name, kmsg.ConfigSource(syn.Source)
			if !e.sensitive {
				rs.Value = syn.Value
			}
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, rs)
		}
	}
	return rc
}
