package admin

// Configs: DescribeConfigs (32), AlterConfigs (33) and
// IncrementalAlterConfigs (44), shaped as KIP-133's describeConfigs /
// alterConfigs with KIP-339's incremental operations.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConfigResourceType is a config resource type as DescribeConfigs and
// AlterConfigs encode it (int8). Codes this package does not name are kept
// as they are; String calls them UNKNOWN, as KIP-133 asks of types a newer
// broker returns.
type ConfigResourceType int8

// Config resource types. Topic, Broker, BrokerLogger, ClientMetrics and
// Group are Apache Kafka's;
// User and Client (codes 7 and 6) are kbroker's own, served to read and
// write client quotas as configs; Apache Kafka's resource types (2, 4, 8,
// 16, 32) collide with neither.
const (
	ResourceUnknown      ConfigResourceType = 0
	ResourceTopic        ConfigResourceType = 2
	ResourceBroker       ConfigResourceType = 4
	ResourceClient       ConfigResourceType = 6
	ResourceUser         ConfigResourceType = 7
	ResourceBrokerLogger ConfigResourceType = 8
	// ResourceClientMetrics is a KIP-714 client-metrics subscription
	// (kbroker serves none; ListConfigResources names the type).
	ResourceClientMetrics ConfigResourceType = 16
	// ResourceGroup is a group's configs (Kafka 4, KIP-848):
	// consumer.session.timeout.ms and the other keys of Kafka's
	// GroupConfig.
	ResourceGroup ConfigResourceType = 32
)

var resourceTypeNames = map[ConfigResourceType]string{
	ResourceTopic: "TOPIC", ResourceBroker: "BROKER", ResourceClient: "CLIENT",
	ResourceUser: "USER", ResourceBrokerLogger: "BROKER_LOGGER",
	ResourceClientMetrics: "CLIENT_METRICS", ResourceGroup: "GROUP",
}

// String is Kafka's name of the type (TOPIC, BROKER, BROKER_LOGGER,
// CLIENT_METRICS, GROUP, USER, CLIENT), UNKNOWN for any other code.
func (t ConfigResourceType) String() string {
	if s, ok := resourceTypeNames[t]; ok {
		return s
	}
	return "UNKNOWN"
}

// MarshalText writes the name, or the code for a type without one, so a
// JSON document keeps types this package does not know.
func (t ConfigResourceType) MarshalText() ([]byte, error) {
	if s, ok := resourceTypeNames[t]; ok {
		return []byte(s), nil
	}
	return []byte(strconv.Itoa(int(t))), nil
}

// UnmarshalText reads what MarshalText writes (names case-insensitively).
func (t *ConfigResourceType) UnmarshalText(b []byte) error {
	s := strings.ToUpper(strings.TrimSpace(string(b)))
	for code, name := range resourceTypeNames {
		if name == s {
			*t = code
			return nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 8)
	if err != nil {
		return fmt.Errorf("unknown config resource type %q", b)
	}
	*t = ConfigResourceType(n)
	return nil
}

// ConfigResource names what configs belong to (KIP-133's ConfigResource).
type ConfigResource struct {
	Type ConfigResourceType `json:"type"`
	// Name is the topic, the group, the broker id ("" = the cluster-wide broker
	// default), or for User/Client the entity ("<default>" = the default
	// entity; a (user, client-id) pair is the USER "alice/clients/c1").
	Name string `json:"name"`
}

// DefaultEntity is the name of the default user or client-id in a USER or
// CLIENT config resource (Kafka's ZooKeeper path spelling).
const DefaultEntity = "<default>"

// TopicResource is the configs of a topic.
func TopicResource(name string) ConfigResource { return ConfigResource{ResourceTopic, name} }

// BrokerResource is the configs of one broker.
func BrokerResource(id int32) ConfigResource {
	return ConfigResource{ResourceBroker, strconv.Itoa(int(id))}
}

// BrokerDefaultResource is the cluster-wide dynamic broker default.
func BrokerDefaultResource() ConfigResource { return ConfigResource{ResourceBroker, ""} }

// BrokerLoggerResource is the log levels of one broker.
func BrokerLoggerResource(id int32) ConfigResource {
	return ConfigResource{ResourceBrokerLogger, strconv.Itoa(int(id))}
}

// GroupResource is the configs of a group, which need not exist yet.
func GroupResource(group string) ConfigResource { return ConfigResource{ResourceGroup, group} }

// UserResource is a user's quota configs (kbroker's USER type); user ""
// means the default user.
func UserResource(user string) ConfigResource {
	return ConfigResource{ResourceUser, orDefault(user)}
}

// ClientResource is a client-id's quota configs (kbroker's CLIENT type);
// client "" means the default client-id.
func ClientResource(client string) ConfigResource {
	return ConfigResource{ResourceClient, orDefault(client)}
}

// UserClientResource is the quota configs of a (user, client-id) pair; an
// empty part means that part's default.
func UserClientResource(user, client string) ConfigResource {
	return ConfigResource{ResourceUser, orDefault(user) + "/clients/" + orDefault(client)}
}

func orDefault(s string) string {
	if s == "" {
		return DefaultEntity
	}
	return s
}

// String reads "TOPIC t", "BROKER 1", "BROKER <cluster default>".
func (r ConfigResource) String() string {
	if r.Type == ResourceBroker && r.Name == "" {
		return "BROKER <cluster default>"
	}
	return r.Type.String() + " " + r.Name
}

// ConfigSource says where a config value comes from. The names are the
// Java AdminClient's (DYNAMIC_TOPIC_CONFIG… DYNAMIC_GROUP_CONFIG), which is
// what kafka-configs.sh prints.
type ConfigSource int8

// Config sources (the wire codes).
const (
	SourceUnknown                    ConfigSource = 0
	SourceDynamicTopicConfig         ConfigSource = 1
	SourceDynamicBrokerConfig        ConfigSource = 2
	SourceDynamicDefaultBrokerConfig ConfigSource = 3
	SourceStaticBrokerConfig         ConfigSource = 4
	SourceDefaultConfig              ConfigSource = 5
	SourceDynamicBrokerLoggerConfig  ConfigSource = 6
	SourceDynamicClientMetricsConfig ConfigSource = 7
	SourceDynamicGroupConfig         ConfigSource = 8
)

var sourceNames = []string{
	"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
	"STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG",
	"DYNAMIC_CLIENT_METRICS_CONFIG", "DYNAMIC_GROUP_CONFIG",
}

// String is the Java AdminClient's name; codes it does not know (and the
// "unset" -1 of old responses) are UNKNOWN, as the Java client decodes them.
func (s ConfigSource) String() string {
	if s >= 0 && int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "UNKNOWN"
}

// MarshalText writes String.
func (s ConfigSource) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name String writes.
func (s *ConfigSource) UnmarshalText(b []byte) error {
	i := slices.Index(sourceNames, strings.ToUpper(string(b)))
	if i < 0 {
		return fmt.Errorf("unknown config source %q", b)
	}
	*s = ConfigSource(i)
	return nil
}

// ConfigType is a config's data type (DescribeConfigs v3+).
type ConfigType int8

// Config types (the wire codes).
const (
	TypeUnknown ConfigType = iota
	TypeBoolean
	TypeString
	TypeInt
	TypeShort
	TypeLong
	TypeDouble
	TypeList
	TypeClass
	TypePassword
)

var typeNames = []string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String is Kafka's name of the type.
func (t ConfigType) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "UNKNOWN"
}

// MarshalText writes String.
func (t ConfigType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads a name String writes.
func (t *ConfigType) UnmarshalText(b []byte) error {
	i := slices.Index(typeNames, strings.ToUpper(string(b)))
	if i < 0 {
		return fmt.Errorf("unknown config type %q", b)
	}
	*t = ConfigType(i)
	return nil
}

// ConfigEntry is one config of a resource (KIP-133's ConfigEntry, with the
// later additions of KIP-226 and KIP-569).
type ConfigEntry struct {
	Name string `json:"name"`
	// Value is nil when the broker withholds it (sensitive) or it is unset.
	Value       *string `json:"value"`
	IsDefault   bool    `json:"is_default"`
	IsSensitive bool    `json:"is_sensitive"`
	IsReadOnly  bool    `json:"is_read_only"`
	// Source is where the value comes from (v1+; UNKNOWN on v0).
	Source ConfigSource `json:"source"`
	// Synonyms are every place that sets this config, most specific first
	// (with DescribeOptions.IncludeSynonyms).
	Synonyms []ConfigSynonym `json:"synonyms,omitempty"`
	Type     ConfigType      `json:"type"`
	// Documentation is the config's doc string (with
	// DescribeOptions.IncludeDocumentation, v3+).
	Documentation *string `json:"documentation,omitempty"`
}

// ValueString is the value, or "null" when there is none (as Kafka's tools
// print it).
func (e ConfigEntry) ValueString() string { return strOrNull(e.Value) }

// ConfigSynonym is one source of a config's value.
type ConfigSynonym struct {
	Name   string       `json:"name"`
	Value  *string      `json:"value"`
	Source ConfigSource `json:"source"`
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// DescribeOptions tune DescribeConfigs.
type DescribeOptions struct {
	// IncludeSynonyms asks for every source of each value.
	IncludeSynonyms bool
	// IncludeDocumentation asks for each config's documentation.
	IncludeDocumentation bool
	// Keys limits the answer to these configs (all when empty).
	Keys []string
}

// ResourceConfigs is the answer for one resource.
type ResourceConfigs struct {
	Resource ConfigResource
	Entries  []ConfigEntry
	// Err is this resource's error (an *Error), nil on success.
	Err error
}

// Entry finds a config by name.
func (r ResourceConfigs) Entry(name string) (ConfigEntry, bool) {
	i := slices.IndexFunc(r.Entries, func(e ConfigEntry) bool { return e.Name == name })
	if i < 0 {
		return ConfigEntry{}, false
	}
	return r.Entries[i], true
}

// DescribeConfigsResults holds one result per distinct resource, in the
// order they were asked for.
type DescribeConfigsResults []ResourceConfigs

// All is KIP-133's all(): every resource's entries, or the joined errors
// of the resources that failed.
func (rs DescribeConfigsResults) All() (map[ConfigResource][]ConfigEntry, error) {
	out := make(map[ConfigResource][]ConfigEntry, len(rs))
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		out[r.Resource] = r.Entries
	}
	return out, joinErrs(errs)
}

// On finds the result for one resource.
func (rs DescribeConfigsResults) On(res ConfigResource) (ResourceConfigs, bool) {
	i := slices.IndexFunc(rs, func(r ResourceConfigs) bool { return r.Resource == res })
	if i < 0 {
		return ResourceConfigs{}, false
	}
	return rs[i], true
}

// DescribeConfigs reads the configs of resources. A resource listed twice is
// asked for once (KIP-133's AdminClient takes a collection of resources). Requests for a
// broker or broker-logger id go to that broker; the rest to any broker.
func (c *Client) DescribeConfigs(ctx context.Context, resources []ConfigResource, opts DescribeOptions) (DescribeConfigsResults, error) {
	var results DescribeConfigsResults
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = opts.IncludeSynonyms
	req.IncludeDocumentation = opts.IncludeDocumentation
	for _, res := range resources {
		if _, dup := results.On(res); dup {
			continue
		}
		results = append(results, ResourceConfigs{Resource: res})
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(res.Type), res.Name
		if len(opts.Keys) > 0 {
			rr.ConfigNames = slices.Clone(opts.Keys)
		}
		req.Resources = append(req.Resources, rr)
	}
	if len(results) == 0 {
		return results, nil
	}
	shards := c.cl.RequestSharded(ctx, req)
	if err := allShardsFailed(shards); err != nil {
		return nil, err
	}
	index := func(t kmsg.ConfigResourceType, name string) int {
		return slices.IndexFunc(results, func(r ResourceConfigs) bool {
			return r.Resource == ConfigResource{ConfigResourceType(t), name}
		})
	}
	answered := make([]bool, len(results))
	for _, sh := range shards {
		if sh.Err != nil {
			for _, rr := range sh.Req.(*kmsg.DescribeConfigsRequest).Resources {
				if i := index(rr.ResourceType, rr.ResourceName); i >= 0 {
					results[i].Err = &Error{Resource: results[i].Resource.String(), Err: sh.Err}
				}
			}
			continue
		}
		for _, rr := range sh.Resp.(*kmsg.DescribeConfigsResponse).Resources {
			i := index(rr.ResourceType, rr.ResourceName)
			if i < 0 {
				continue // not asked for: ignore, as the Java client does
			}
			answered[i] = true
			results[i].Err = codeError(results[i].Resource.String(), rr.ErrorCode, rr.ErrorMessage)
			for _, cfg := range rr.Configs {
				results[i].Entries = append(results[i].Entries, entryFrom(cfg))
			}
		}
	}
	for i := range results {
		if !answered[i] && results[i].Err == nil {
			results[i].Err = &Error{Resource: results[i].Resource.String(), Err: kerr.UnknownServerError,
				Message: "the broker's response did not include this resource"}
		}
	}
	return results, nil
}

func entryFrom(cfg kmsg.DescribeConfigsResponseResourceConfig) ConfigEntry {
	e := ConfigEntry{
		Name: cfg.Name, Value: cfg.Value, IsSensitive: cfg.IsSensitive, IsReadOnly: cfg.ReadOnly,
		Source: ConfigSource(cfg.Source), Type: ConfigType(cfg.ConfigType), Documentation: cfg.Documentation,
	}
	if e.Source < 0 { // v0: no source on the wire
		e.Source = SourceUnknown
		if cfg.IsDefault {
			e.Source = SourceDefaultConfig
		}
	}
	// v1+ brokers derive is-default from the source (Java's ConfigEntry does too).
	e.IsDefault = cfg.IsDefault || e.Source == SourceDefaultConfig
	for _, s := range cfg.ConfigSynonyms {
		e.Synonyms = append(e.Synonyms, ConfigSynonym{Name: s.Name, Value: s.Value, Source: ConfigSource(s.Source)})
	}
	return e
}

// allShardsFailed returns the first error when no shard got an answer (the
// broker is unreachable, authentication failed…): then the call as a whole
// failed rather than each resource.
func allShardsFailed(shards []kgo.ResponseShard) error {
	for _, sh := range shards {
		if sh.Err == nil {
			return nil
		}
	}
	if len(shards) == 0 {
		return nil
	}
	return shards[0].Err
}

// ConfigOp is an incremental change operation (IncrementalAlterConfigs).
type ConfigOp int8

// Operations of IncrementalAlterConfigs (KIP-339).
const (
	OpSet      ConfigOp = 0 // set the value
	OpDelete   ConfigOp = 1 // remove the override (back to the inherited value)
	OpAppend   ConfigOp = 2 // add elements to a LIST config
	OpSubtract ConfigOp = 3 // remove elements from a LIST config
)

var opNames = []string{"SET", "DELETE", "APPEND", "SUBTRACT"}

// String is Kafka's name of the operation.
func (o ConfigOp) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "UNKNOWN"
}

// MarshalText writes String.
func (o ConfigOp) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads a name String writes.
func (o *ConfigOp) UnmarshalText(b []byte) error {
	i := slices.Index(opNames, strings.ToUpper(string(b)))
	if i < 0 {
		return fmt.Errorf("unknown config operation %q", b)
	}
	*o = ConfigOp(i)
	return nil
}

// ConfigChange is one change to one config.
type ConfigChange struct {
	Op    ConfigOp `json:"op"`
	Name  string   `json:"name"`
	Value string   `json:"value,omitempty"` // ignored by OpDelete
}

// Set returns a change setting name to value.
func Set(name, value string) ConfigChange { return ConfigChange{OpSet, name, value} }

// Delete returns a change removing the override of name.
func Delete(name string) ConfigChange { return ConfigChange{Op: OpDelete, Name: name} }

// Append returns a change adding the comma-separated elements of value to
// the LIST config name.
func Append(name, value string) ConfigChange { return ConfigChange{OpAppend, name, value} }

// Subtract returns a change removing the comma-separated elements of value
// from the LIST config name.
func Subtract(name, value string) ConfigChange { return ConfigChange{OpSubtract, name, value} }

// AlterOptions tune AlterConfigs.
type AlterOptions struct {
	// ValidateOnly runs every check the broker would and changes nothing.
	ValidateOnly bool
	// Incremental applies each change on its own (IncrementalAlterConfigs,
	// KIP-339): what is not mentioned stays as it is. Without it the call is
	// KIP-133's alterConfigs: the Set changes become the resource's
	// complete set of overrides, and every other override is removed (other
	// operations are refused before sending).
	Incremental bool
}

// AlterConfigsResult is the outcome for one resource.
type AlterConfigsResult struct {
	Resource ConfigResource
	// Err is this resource's error (an *Error), nil on success.
	Err error
}

// AlterConfigsResults holds one result per resource, sorted by type and name.
type AlterConfigsResults []AlterConfigsResult

// All joins the errors of every resource that failed; nil when all succeeded.
func (rs AlterConfigsResults) All() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return joinErrs(errs)
}

// On finds the result for one resource.
func (rs AlterConfigsResults) On(res ConfigResource) (AlterConfigsResult, bool) {
	i := slices.IndexFunc(rs, func(r AlterConfigsResult) bool { return r.Resource == res })
	if i < 0 {
		return AlterConfigsResult{}, false
	}
	return rs[i], true
}

// AlterConfigs changes the configs of resources. Each resource succeeds or
// fails as a whole; resources are independent of each other (the request is
// not transactional).
func (c *Client) AlterConfigs(ctx context.Context, changes map[ConfigResource][]ConfigChange, opts AlterOptions) (AlterConfigsResults, error) {
	var results AlterConfigsResults
	for res := range changes {
		results = append(results, AlterConfigsResult{Resource: res})
	}
	slices.SortFunc(results, func(a, b AlterConfigsResult) int {
		if a.Resource.Type != b.Resource.Type {
			return int(a.Resource.Type) - int(b.Resource.Type)
		}
		return strings.Compare(a.Resource.Name, b.Resource.Name)
	})
	var req kmsg.Request
	if opts.Incremental {
		req = incrementalRequest(results, changes, opts.ValidateOnly)
	} else {
		req = replaceRequest(results, changes, opts.ValidateOnly)
	}
	if !hasResources(req) {
		return results, nil
	}
	shards := c.cl.RequestSharded(ctx, req)
	if err := allShardsFailed(shards); err != nil {
		return nil, err
	}
	set := func(t kmsg.ConfigResourceType, name string, err error) {
		i := slices.IndexFunc(results, func(r AlterConfigsResult) bool {
			return r.Resource == ConfigResource{ConfigResourceType(t), name}
		})
		if i >= 0 {
			if e, ok := err.(*Error); ok {
				e.Resource = results[i].Resource.String()
			}
			results[i].Err = err
		}
	}
	for _, sh := range shards {
		switch r := sh.Req.(type) {
		case *kmsg.IncrementalAlterConfigsRequest:
			if sh.Err != nil {
				for _, rr := range r.Resources {
					set(rr.ResourceType, rr.ResourceName, &Error{Err: sh.Err})
				}
				continue
			}
			for _, rr := range sh.Resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				set(rr.ResourceType, rr.ResourceName, codeError("", rr.ErrorCode, rr.ErrorMessage))
			}
		case *kmsg.AlterConfigsRequest:
			if sh.Err != nil {
				for _, rr := range r.Resources {
					set(rr.ResourceType, rr.ResourceName, &Error{Err: sh.Err})
				}
				continue
			}
			for _, rr := range sh.Resp.(*kmsg.AlterConfigsResponse).Resources {
				set(rr.ResourceType, rr.ResourceName, codeError("", rr.ErrorCode, rr.ErrorMessage))
			}
		}
	}
	return results, nil
}

func hasResources(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		return len(r.Resources) > 0
	case *kmsg.AlterConfigsRequest:
		return len(r.Resources) > 0
	}
	return false
}

func incrementalRequest(results AlterConfigsResults, changes map[ConfigResource][]ConfigChange, validate bool) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validate
	for _, r := range results {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(r.Resource.Type), r.Resource.Name
		for _, ch := range changes[r.Resource] {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op = ch.Name, kmsg.IncrementalAlterConfigOp(ch.Op)
			if ch.Op != OpDelete {
				cfg.Value = kmsg.StringPtr(ch.Value)
			}
			rr.Configs = append(rr.Configs, cfg)
		}
		req.Resources = append(req.Resources, rr)
	}
	return req
}

// replaceRequest builds the legacy full-replacement request; resources with
// changes other than Set get a client-side error and are not sent.
func replaceRequest(results AlterConfigsResults, changes map[ConfigResource][]ConfigChange, validate bool) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validate
	for i, r := range results {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceType(r.Resource.Type), r.Resource.Name
		for _, ch := range changes[r.Resource] {
			if ch.Op != OpSet {
				results[i].Err = clientError(r.Resource.String(),
					"%s of %s needs AlterOptions.Incremental: AlterConfigs replaces the whole config", ch.Op, ch.Name)
				break
			}
			cfg := kmsg.NewAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Value = ch.Name, kmsg.StringPtr(ch.Value)
			rr.Configs = append(rr.Configs, cfg)
		}
		if results[i].Err == nil {
			req.Resources = append(req.Resources, rr)
		}
	}
	return req
}

// ListConfigResources names the config resources of the given types that
// a DescribeConfigs can ask about (ListConfigResources v1, KIP-1142, Kafka
// 4.1): every topic, every live broker (BROKER and BROKER_LOGGER), every
// group that has configs, every client-metrics subscription. No types
// means all of them. A broker before Kafka 4.1 fails with
// UNSUPPORTED_VERSION.
func (c *Client) ListConfigResources(ctx context.Context, types ...ConfigResourceType) ([]ConfigResource, error) {
	req := kmsg.NewPtrListConfigResourcesRequest()
	for _, t := range types {
		req.ResourceTypes = append(req.ResourceTypes, int8(t))
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	if err := codeError("", resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	out := make([]ConfigResource, 0, len(resp.ConfigResources))
	for _, r := range resp.ConfigResources {
		out = append(out, ConfigResource{ConfigResourceType(r.Type), r.Name})
	}
	return out, nil
}
