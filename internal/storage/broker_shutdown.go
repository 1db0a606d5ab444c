package storage

import (
	"fmt"
	"os"
	"path/filepath"
)

// The broker's clean-shutdown marker. Kafka's broker writes
// .kafka_cleanshutdown into its log directories once its logs are flushed
// and closed, and its next registration tells the controller whether it
// found it (BrokerRegistration's previousBrokerEpoch): a broker that did
// not may have lost records it had not flushed, so it must not stay in an
// ISR or ELR on the strength of what it held before (KIP-966). kbroker
// keeps one such marker in the first log directory, beside the partition
// logs' own markers (cleanShutdownFile), which spare log recovery; the
// registration carries what it said as meta.Broker.UncleanShutdown.
const brokerCleanShutdownFile = ".kbroker_broker_cleanshutdown"

// TakeBrokerCleanShutdown reports whether the broker's previous run over
// dir ended with a clean shutdown, and removes the marker, durably, so
// that whatever happens to this run from here on is not mistaken for
// clean. A broker starting on a new directory has no marker: nothing of it
// is in any ISR, so the controller has nothing to take away.
func TakeBrokerCleanShutdown(dir string) (bool, error) {
	p := filepath.Join(dir, brokerCleanShutdownFile)
	if _, err := os.Stat(p); err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading the clean-shutdown marker: %w", err)
	}
	if err := os.Remove(p); err != nil {
		return false, fmt.Errorf("removing the clean-shutdown marker: %w", err)
	}
	return true, syncDirErr(dir)
}

// MarkBrokerCleanShutdown writes the marker into dir, durably: call it
// once the logs are closed (flushed) and nothing more will be written to
// them.
func MarkBrokerCleanShutdown(dir string) error {
	if err := createFile(filepath.Join(dir, brokerCleanShutdownFile), []byte("version: 1\n"), true); err != nil {
		return fmt.Errorf("writing the clean-shutdown marker: %w", err)
	}
	return syncDirErr(dir)
}
