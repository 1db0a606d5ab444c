package config

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listener is one NAME://host:port entry of listeners or advertised.listeners.
type Listener struct {
	Name             string // listener name, e.g. PLAINTEXT or INTERNAL
	Host             string // empty means every interface
	Port             int
	SecurityProtocol string // from listener.security.protocol.map
}

// Addr is host:port for net.Listen and for clients.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// Broker is the static configuration of one broker: server.properties
// resolved against the catalog's defaults.
type Broker struct {
	NodeID                   int32
	Rack                     *string
	Listeners                []Listener
	AdvertisedListeners      []Listener
	LogDirs                  []string
	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopics         bool
	SocketRequestMaxBytes    int32
	RetentionCheckIntervalMs int64
	ConnectionsMaxIdleMs     int64
	QueuedMaxRequestBytes    int64
	MetricsListener          string

	// Props is every key of server.properties, known or not: later parts
	// (and DescribeConfigs' STATIC_BROKER_CONFIG source) read them here.
	Props Properties
	// Unknown lists keys no catalog defines; the broker logs them once.
	Unknown []string
}

// NewBroker validates props against the broker and topic catalogs and
// returns the typed configuration. A known key with a bad value is an error,
// as it stops Kafka from starting.
func NewBroker(props Properties) (*Broker, error) {
	if props == nil {
		props = Properties{}
	}
	b := &Broker{Props: props}
	for _, k := range props.Keys() {
		d := Brokers.Lookup(k)
		if d == nil {
			b.Unknown = append(b.Unknown, k)
			continue
		}
		if err := d.Validate(props[k]); err != nil {
			return nil, err
		}
	}
	get := func(name string) string {
		if v, ok := props[name]; ok {
			return strings.TrimSpace(v)
		}
		return Brokers.Lookup(name).Default
	}
	atoi := func(name string) int64 { n, _ := strconv.ParseInt(get(name), 10, 64); return n }

	b.NodeID = int32(atoi("node.id"))
	if _, ok := props["node.id"]; !ok {
		if _, ok := props["broker.id"]; ok {
			b.NodeID = int32(atoi("broker.id"))
		}
	}
	if r, ok := props["broker.rack"]; ok {
		b.Rack = &r
	}
	protocols, err := parseProtocolMap(get("listener.security.protocol.map"))
	if err != nil {
		return nil, err
	}
	if b.Listeners, err = parseListeners("listeners", get("listeners"), protocols); err != nil {
		return nil, err
	}
	if len(b.Listeners) == 0 {
		return nil, fmt.Errorf("listeners must name at least one listener")
	}
	b.AdvertisedListeners = append([]Listener(nil), b.Listeners...)
	if v, ok := props["advertised.listeners"]; ok {
		if b.AdvertisedListeners, err = parseListeners("advertised.listeners", v, protocols); err != nil {
			return nil, err
		}
	}
	// A listener bound to every interface is advertised under the host's
	// name, as Kafka does; clients cannot connect to an empty host.
	for i, l := range b.AdvertisedListeners {
		if l.Host == "" {
			if h, err := os.Hostname(); err == nil {
				b.AdvertisedListeners[i].Host = h
			}
		}
	}
	dirs := get("log.dir")
	if v, ok := props["log.dirs"]; ok {
		dirs = v
	}
	b.LogDirs = SplitList(dirs)
	if len(b.LogDirs) == 0 {
		return nil, fmt.Errorf("log.dirs must name at least one directory")
	}
	b.NumPartitions = int32(atoi("num.partitions"))
	b.DefaultReplicationFactor = int16(atoi("default.replication.factor"))
	b.AutoCreateTopics = strings.EqualFold(get("auto.create.topics.enable"), "true")
	b.SocketRequestMaxBytes = int32(atoi("socket.request.max.bytes"))
	b.RetentionCheckIntervalMs = atoi("log.retention.check.interval.ms")
	b.ConnectionsMaxIdleMs = atoi("connections.max.idle.ms")
	b.QueuedMaxRequestBytes = atoi("queued.max.request.bytes")
	b.MetricsListener = get("metrics.listener")
	return b, nil
}

func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, entry := range SplitList(v) {
		name, proto, ok := strings.Cut(entry, ":")
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("Invalid value %s for configuration listener.security.protocol.map: entries must be NAME:PROTOCOL", v)
		}
		m[strings.ToUpper(strings.TrimSpace(name))] = strings.ToUpper(strings.TrimSpace(proto))
	}
	return m, nil
}

func parseListeners(key, v string, protocols map[string]string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, entry := range SplitList(v) {
		name, hostport, ok := strings.Cut(entry, "://")
		if !ok {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: listener %q must look like NAME://host:port", v, key, entry)
		}
		host, portStr, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: %v", v, key, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: bad port %q", v, key, portStr)
		}
		name = strings.ToUpper(name)
		proto, ok := protocols[name]
		if !ok {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: listener %s has no entry in listener.security.protocol.map", v, key, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: listener name %s appears twice", v, key, name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: port, SecurityProtocol: proto})
	}
	return out, nil
}

// BrokerValue is the effective value of broker config name ("" when it has
// none), taking dynamic values into account.
func BrokerValue(name string, l Layers) string {
	d := Brokers.Lookup(name)
	if d == nil {
		return ""
	}
	if e := ResolveBroker(d, l); e.Value != nil {
		return *e.Value
	}
	return ""
}

// ParseIPOverrides reads max.connections.per.ip.overrides ("ip:n,ip:n").
func ParseIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, entry := range SplitList(v) {
		i := strings.LastIndex(entry, ":")
		if i <= 0 {
			return nil, fmt.Errorf("entry %q must be host:count", entry)
		}
		n, err := strconv.Atoi(entry[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("entry %q must end in a non-negative count", entry)
		}
		out[strings.TrimSpace(entry[:i])] = n
	}
	return out, nil
}

func checkIPOverrides(v string) error {
	_, err := ParseIPOverrides(v)
	return err
}
