package config

import (
	"fmt"
	"os"
	"sort"

	"github.com/magiconair/properties"
)

// Properties is a server.properties file as read: every key with its raw
// string value, in the syntax of java.util.Properties (comments, line
// continuations, escapes, "key value" and "key:value" forms).
type Properties map[string]string

// LoadProperties reads a Java-properties file. Kafka does not expand ${...}
// references in server.properties, so neither do we.
func LoadProperties(path string) (Properties, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseProperties(buf)
}

// ParseProperties parses Java-properties text.
func ParseProperties(text []byte) (Properties, error) {
	p := properties.NewProperties()
	p.DisableExpansion = true
	if err := p.Load(text, properties.UTF8); err != nil {
		return nil, fmt.Errorf("parsing properties: %w", err)
	}
	out := make(Properties, p.Len())
	for _, k := range p.Keys() {
		v, _ := p.Get(k)
		out[k] = v
	}
	return out, nil
}

// Keys returns the keys in sorted order, for stable logs and output.
func (p Properties) Keys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
