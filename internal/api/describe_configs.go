package api

// DescribeConfigs (key 32), v0–v4.
//
// Every value of a TOPIC, BROKER (this broker's id, or "" for the
// cluster-wide dynamic default), BROKER_LOGGER or GROUP resource (Kafka 4's
// group configs, config_group.go), with its source,
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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"kbroker/internal/auth"
	"kbroker/internal/config"
	"kbroker/internal/dynconfig"
	"kbroker/internal/wire"
)

func init() { register(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs, catchesUp()) }

func handleDescribeConfigs(ctx context.Context, s *Server, c *wire.Conn, r *wire.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := &describeConfigsResponse{DescribeConfigsResponse: req.ResponseKind().(*kmsg.DescribeConfigsResponse)}
	unknownType := slices.ContainsFunc(req.Resources, func(rr kmsg.DescribeConfigsRequestResource) bool {
		return configResources[rr.ResourceType] == nil
	})
	snap := s.Store.Snapshot()
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if unknownType {
			res.ErrorCode = kerr.InvalidRequest.Code
			msg := "Unsupported resource type in request"
			res.ErrorMessage = &msg
			resp.resources = append(resp.resources, describedResource{res: &res})
			continue
		}
		err := s.configResourceAllowed(c, rr.ResourceType, rr.ResourceName, auth.OpDescribeConfigs)
		if err == nil && rr.ResourceType == kmsg.ConfigResourceTypeTopic && len(rr.ConfigNames) == 0 {
			// Every config of a topic: rendered while encoding (see
			// topicConfigRenderer), the case that scales to thousands,
			// so the topic and its overrides come from one lookup.
			if t, overrides := snap.TopicWithConfig(rr.ResourceName); t != nil && validateTopicName(rr.ResourceName) == nil && !setsInternalKey(overrides) {
				if resp.topics == nil {
					resp.topics = newTopicConfigRenderer(req, s.Configs.TopicBase(snap))
				}
				resp.resources = append(resp.resources, describedResource{topic: rr.ResourceName, overrides: overrides})
				continue
			}
		}
		var entries []dynconfig.Described
		if err == nil {
			entries, err = configResources[rr.ResourceType].describe(s, snap, rr.ResourceName)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = resourceError(err)
			resp.resources = append(resp.resources, describedResource{res: &res})
			continue
		}
		if !slices.IsSortedFunc(entries, dynconfig.ByName) {
			slices.SortFunc(entries, dynconfig.ByName)
		}
		for _, e := range entries {
			if len(rr.ConfigNames) > 0 && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			res.Configs = append(res.Configs, describedConfig(req, e))
		}
		resp.resources = append(resp.resources, describedResource{res: &res})
	}
	return resp, nil
}

// describeConfigsResponse is a DescribeConfigsResponse whose resources are
// encoded one by one (wire/splice.go): describing every config of 10,000
// topics is 330,000 entries, which are never all built as structs.
type describeConfigsResponse struct {
	*kmsg.DescribeConfigsResponse // Resources stays empty; the rest is encoded as is
	resources                     []describedResource
	topics                        *topicConfigRenderer // set when a resource is rendered while encoding
}

// describedResource is one resource of the answer: built by the handler
// (errors, brokers, loggers, chosen keys), or every config of an existing
// topic, rendered from its overrides while encoding.
type describedResource struct {
	res       *kmsg.DescribeConfigsResponseResource
	topic     string
	overrides map[string]string
}

func (r *describeConfigsResponse) AppendTo(dst []byte) []byte {
	one := kmsg.NewPtrDescribeConfigsResponse()
	one.Version = r.Version
	enc := wire.NewElementEncoder(one, 1)
	one.Resources = make([]kmsg.DescribeConfigsResponseResource, 1)
	return wire.AppendArrayResponse(dst, r.DescribeConfigsResponse, len(r.resources), func(dst []byte, i int) []byte {
		d := r.resources[i]
		if d.res == nil {
			return r.topics.appendTopic(dst, d.topic, d.overrides)
		}
		one.Resources[0] = *d.res
		return append(dst, enc.Element()...)
	})
}

// topicConfigRenderer encodes every config of topics for one request. The
// entries a topic does not override are the same for every topic: they
// are rendered and encoded once, and each topic's resource is its header,
// those bytes, and its overrides rendered in their place.
type topicConfigRenderer struct {
	req      *kmsg.DescribeConfigsRequest
	base     []dynconfig.Described // dynconfig TopicBase: sorted by name
	position map[string]int
	encoded  []byte // base entries encoded back to back
	offsets  []int  // entry i is encoded[offsets[i]:offsets[i+1]]

	header    *wire.ElementEncoder // a resource without configs
	headerRes *kmsg.DescribeConfigsResponseResource
	config    *wire.ElementEncoder // one config of a resource
	configRes *kmsg.DescribeConfigsResponseResource
	overrides []topicOverride // scratch: one topic's, in base order
}

type topicOverride struct {
	position int
	value    string
}

func newTopicConfigRenderer(req *kmsg.DescribeConfigsRequest, base []dynconfig.Described) *topicConfigRenderer {
	t := &topicConfigRenderer{req: req, base: base, position: make(map[string]int, len(base))}
	t.header, t.headerRes = oneResourceEncoder(req.Version, 1)
	t.headerRes.ResourceType = kmsg.ConfigResourceTypeTopic
	t.config, t.configRes = oneResourceEncoder(req.Version, 2)
	t.configRes.Configs = make([]kmsg.DescribeConfigsResponseResourceConfig, 1)
	t.offsets = append(t.offsets, 0)
	for i, e := range base {
		t.position[e.Name] = i
		t.encoded = append(t.encoded, t.encodeConfig(e)...)
		t.offsets = append(t.offsets, len(t.encoded))
	}
	return t
}

// oneResourceEncoder is an element encoder over a response of one
// resource, and that resource: for depth 1 the element is the resource,
// for depth 2 the caller gives it one config, the element.
func oneResourceEncoder(version int16, depth int) (*wire.ElementEncoder, *kmsg.DescribeConfigsResponseResource) {
	one := kmsg.NewPtrDescribeConfigsResponse()
	one.Version = version
	one.Resources = []kmsg.DescribeConfigsResponseResource{kmsg.NewDescribeConfigsResponseResource()}
	if depth == 1 {
		one.Resources = one.Resources[:0] // measured empty
	}
	enc := wire.NewElementEncoder(one, depth)
	one.Resources = one.Resources[:1]
	return enc, &one.Resources[0]
}

// encodeConfig renders and encodes one entry; valid until the next call.
func (t *topicConfigRenderer) encodeConfig(e dynconfig.Described) []byte {
	t.configRes.Configs[0] = describedConfig(t.req, e)
	return t.config.Element()
}

// appendTopic appends the resource of every config of a topic with the
// given overrides, resolved as describe resolves them (overrides of keys
// outside the catalog are not described).
func (t *topicConfigRenderer) appendTopic(dst []byte, name string, overrides map[string]string) []byte {
	t.headerRes.ResourceName = name
	dst, configs := wire.OpenTrailingArray(append(dst, t.header.Element()...), t.header.Flexible(), len(t.base))
	t.overrides = t.overrides[:0]
	for k, v := range overrides {
		if i, ok := t.position[k]; ok {
			t.overrides = append(t.overrides, topicOverride{i, v})
		}
	}
	slices.SortFunc(t.overrides, func(a, b topicOverride) int { return a.position - b.position })
	next := 0
	for _, o := range t.overrides {
		dst = append(dst, t.encoded[t.offsets[next]:t.offsets[o.position]]...)
		e := t.base[o.position]
		e.Entry = config.WithTopicOverride(e.Entry, o.value)
		dst = append(dst, t.encodeConfig(e)...)
		next = o.position + 1
	}
	dst = append(dst, t.encoded[t.offsets[next]:]...)
	return configs.Close(dst)
}

// describedConfig renders one entry for the request's version and options.
func describedConfig(req *kmsg.DescribeConfigsRequest, e dynconfig.Described) kmsg.DescribeConfigsResponseResourceConfig {
	rc := kmsg.NewDescribeConfigsResponseResourceConfig()
	rc.Name = e.Name
	rc.ReadOnly = e.ReadOnly
	rc.IsSensitive = e.Sensitive
	rc.Source = kmsg.ConfigSource(e.Source)
	rc.IsDefault = e.Source == config.SourceDefault
	if !e.Sensitive {
		rc.Value = e.Value
	}
	if e.Def != nil {
		rc.ConfigType = kmsg.ConfigType(e.Def.Type)
		if req.IncludeDocumentation && e.Def.Doc != "" {
			doc := e.Def.Doc
			rc.Documentation = &doc
		}
	}
	if req.IncludeSynonyms {
		for _, syn := range e.Synonyms {
			rs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			rs.Name, rs.Source = syn.Name, kmsg.ConfigSource(syn.Source)
			if !e.Sensitive {
				rs.Value = syn.Value
			}
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, rs)
		}
	}
	return rc
}

// setsInternalKey reports whether a topic's overrides set an internal
// config (internal.segment.bytes), which only such topics describe: they
// take the general path rather than the pre-rendered one.
func setsInternalKey(overrides map[string]string) bool {
	for _, d := range config.Topics.InternalDefs() {
		if _, ok := overrides[d.Name]; ok {
			return true
		}
	}
	return false
}
