package api

// Listener-scoped broker configs (listener.name.<listener>.<key>, e.g.
// listener.name.sasl_ssl.ssl.keystore.location or
// listener.name.sasl_plaintext.plain.sasl.jaas.config) are described for
// the broker when server.properties or a dynamic change sets them, typed as
// their base key (so the PASSWORD ones are sensitive with null values).

import (
	"maps"
	"slices"

	"kbroker/internal/config"
)

func listenerEntries(layers config.Layers) []configEntry {
	keys := map[string]bool{}
	for k := range layers.Static {
		keys[k] = true
	}
	for k := range layers.Broker {
		keys[k] = true
	}
	var out []configEntry
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		d := config.ListenerDef(k)
		if d == nil {
			continue
		}
		out = append(out, configEntry{Entry: config.ResolveBroker(d, layers), def: d, sensitive: d.Sensitive()})
	}
	return out
}
