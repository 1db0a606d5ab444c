package main

import "testing"

// TestConfigsHelpExampleWorks: the example of kbroker configs --help
// (log.cleaner.threads=2 at the brokers' default) succeeds, as it does
// against Apache Kafka, though kbroker does not need the key.
func TestConfigsHelpExampleWorks(t *testing.T) {
	bs := startBroker(t, nil)
	wantOutput(t, ok(t, args(bs, "configs", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.cleaner.threads=2")...),
		"Completed updating default config for brokers in the cluster.\n")
}
