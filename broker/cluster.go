package broker

// Choosing the metadata store (a bbolt file, or etcd when
// metadata.etcd.endpoints is set) and joining the cluster.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"kbroker/internal/cluster"
	"kbroker/internal/config"
	"kbroker/internal/meta"
	"kbroker/internal/storage"
)

// membership is the broker's place in its cluster: etcd-backed, or the
// single broker of a bbolt store.
type membership interface {
	Join(ctx context.Context, reg meta.Broker) error
	Controller() int32
	Close() error
}

// openStore opens the metadata store the configuration names, and the
// membership that goes with it.
func (b *Broker) openStore() (*meta.Store, membership, error) {
	static := config.Layers{Static: b.cfg.Props}
	endpoints := config.SplitList(config.BrokerValue("metadata.etcd.endpoints", static))
	if len(endpoints) == 0 {
		backend, err := meta.OpenBolt(filepath.Join(b.cfg.LogDirs[0], MetadataFile))
		if err != nil {
			return nil, nil, err
		}
		store, err := meta.Open(backend, b.loggers.Logger("kbroker.meta"))
		if err != nil {
			backend.Close()
			return nil, nil, err
		}
		return store, cluster.NewLocal(store, b.cfg.NodeID), nil
	}
	num := func(name string) int {
		n, _ := strconv.Atoi(config.BrokerValue(name, static)) // the catalog checked it
		return n
	}
	ms := func(name string) time.Duration { return time.Duration(num(name)) * time.Millisecond }
	opts := meta.EtcdOptions{
		Endpoints:       endpoints,
		Prefix:          config.BrokerValue("metadata.etcd.prefix", static),
		Username:        b.cfg.Props["metadata.etcd.username"],
		Password:        b.cfg.Props["metadata.etcd.password"],
		RequestTimeout:  ms("metadata.etcd.request.timeout.ms"),
		MaxTxnOps:       num("metadata.etcd.max.txn.ops"),
		MaxRequestBytes: num("metadata.etcd.max.request.bytes"),
	}
	var err error
	if opts.TLS, err = etcdTLS(b.cfg.Props); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(opts.RequestTimeout, 5*time.Second))
	defer cancel()
	backend, err := meta.OpenEtcd(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	store, err := meta.Open(backend, b.loggers.Logger("kbroker.meta"))
	if err != nil {
		backend.Close()
		return nil, nil, err
	}
	member := cluster.NewMember(backend.Client(), store, cluster.MemberOptions{
		Prefix:  backend.Prefix(),
		TTL:     ms("metadata.etcd.session.timeout.ms"),
		Timeout: opts.RequestTimeout,
		Logger:  b.loggers.Logger("kbroker.cluster"),
	})
	return store, member, nil
}

// etcdTLS builds the etcd client's TLS config from the metadata.etcd.ssl.*
// PEM files; nil (plain connections) when none is set.
func etcdTLS(props config.Properties) (*tls.Config, error) {
	ca, cert, key := props["metadata.etcd.ssl.ca.location"], props["metadata.etcd.ssl.certificate.location"], props["metadata.etcd.ssl.key.location"]
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(strings.TrimSpace(ca))
		if err != nil {
			return nil, fmt.Errorf("metadata.etcd.ssl.ca.location: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("metadata.etcd.ssl.ca.location: no PEM certificate in %s", ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("metadata.etcd.ssl.certificate.location and metadata.etcd.ssl.key.location go together")
		}
		pair, err := tls.LoadX509KeyPair(strings.TrimSpace(cert), strings.TrimSpace(key))
		if err != nil {
			return nil, fmt.Errorf("metadata.etcd.ssl: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// takeCleanShutdown reads, and removes, the clean-shutdown marker of the
// previous run, before anything is written to the logs.
func (b *Broker) takeCleanShutdown() error {
	clean, err := storage.TakeBrokerCleanShutdown(b.cfg.LogDirs[0])
	b.uncleanStart = !clean
	return err
}

// registration is what this broker registers: its endpoints and configs,
// and whether its previous run shut down uncleanly, which makes the
// controller take it out of every ISR and ELR (KIP-966).
func (b *Broker) registration() meta.Broker {
	reg := cluster.Registration(b.cfg)
	reg.UncleanShutdown = b.uncleanStart
	return reg
}

// uncleanShutdownSettled reports whether a clean Close may write the
// clean-shutdown marker: the previous run shut down cleanly, or the
// controller has acted on its unclean shutdown (a single broker needs no
// controller for that). Otherwise the next run must register as unclean
// again, or the crash would be forgotten.
func (b *Broker) uncleanShutdownSettled() bool {
	if !b.uncleanStart {
		return true
	}
	switch m := b.member.(type) {
	case *cluster.Member:
		return !m.UncleanShutdownPending()
	case *cluster.Local:
		return true
	}
	return false
}
