package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// The broker's clean-shutdown marker. Kafka's broker writes
// .kafka_cleanshutdown into its log directories once its logs are flushed
// and closed, and its next registration tells the controller whether it
// found it (BrokerRegistration's previousBrokerEpoch): a broker that did
// not may have lost records it had not flushed, so it must not stay in
// an ISR or ELR on the strength of what it held before (KIP-966). kbroker
// keeps one such marker in the first log directory (beside the partition
// logs' own markers, which spare log recovery); the registration carries
// what it said as meta.Broker.UncleanShutdown.
const cleanShutdownFile = ".kbroker_broker_cleanshutdown"

// TakeCleanShutdown reports whether the broker's previous run over dir
// ended with a clean shutdown, and removes the marker, durably, so that
// whatever happens to this run from here on is not mistaken for clean. A
// broker starting on a new directory has no marker: nothing of it is in
// any ISR, so the controller has nothing to take away.
func TakeCleanShutdown(dir string) (bool, error) {
	p := filepath.Join(dir, cleanShutdownFile)
	if _, err := os.Stat(p); err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading the clean-shutdown marker: %w", err)
	}
	if err := os.Remove(p); err != nil {
		return false, fmt.Errorf("removing the clean-shutdown marker: %w", err)
	}
	return true, syncDir(dir)
}

// MarkCleanShutdown writes the marker into dir, durably: call it once the
// logs are closed (flushed) and nothing more will be written to them.
func MarkCleanShutdown(dir string) error {
	p := filepath.Join(dir, cleanShutdownFile)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing the clean-shutdown marker: %w", err)
	}
	_, err = f.WriteString("version: 1\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the clean-shutdown marker: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
