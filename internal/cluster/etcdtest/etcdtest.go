// Package etcdtest runs a real single-member etcd inside the calling
// process (go.etcd.io/etcd/server/v3/embed): for cluster tests, and for
// trying a kbroker cluster on a machine without an etcd binary (the
// kbroker-etcd command beside this package).
package etcdtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is one embedded etcd member on fixed 127.0.0.1 ports, so that it can
// be stopped and started again on the same data directory and address.
type Etcd struct {
	dir          string
	client, peer url.URL
	tls          Options
	srv          *embed.Etcd
}

// Options make the member serve clients over TLS: CertFile and KeyFile are
// its PEM certificate and key; ClientCAFile, when set, makes it require
// client certificates signed by that CA (etcd's --client-cert-auth).
type Options struct {
	CertFile, KeyFile, ClientCAFile string
}

// New returns an etcd that keeps its data in dir and serves clients on
// clientAddr (host:port; empty picks a free port), not yet started.
func New(dir, clientAddr string) (*Etcd, error) { return NewWith(dir, clientAddr, Options{}) }

// NewWith is New with options.
func NewWith(dir, clientAddr string, o Options) (*Etcd, error) {
	var err error
	if clientAddr == "" {
		if clientAddr, err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	peerAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if o.CertFile != "" {
		scheme = "https"
	}
	return &Etcd{dir: dir, client: url.URL{Scheme: scheme, Host: clientAddr}, peer: url.URL{Scheme: "http", Host: peerAddr}, tls: o}, nil
}

// Start runs the member and waits until it serves.
func (e *Etcd) Start() error {
	cfg := embed.NewConfig()
	cfg.Name = "kbroker-etcd"
	cfg.Dir = e.dir
	cfg.ListenClientUrls = []url.URL{e.client}
	cfg.AdvertiseClientUrls = []url.URL{e.client}
	cfg.ListenPeerUrls = []url.URL{e.peer}
	cfg.AdvertisePeerUrls = []url.URL{e.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	if e.tls.CertFile != "" {
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: e.tls.CertFile, KeyFile: e.tls.KeyFile,
			TrustedCAFile: e.tls.ClientCAFile, ClientCertAuth: e.tls.ClientCAFile != ""}
	}
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-srv.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		srv.Close()
		return fmt.Errorf("etcd did not become ready within 20s")
	}
	e.srv = srv
	return nil
}

// Stop shuts the member down; Start brings it back with its data.
func (e *Etcd) Stop() {
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
}

// Endpoint is the client URL, for metadata.etcd.endpoints.
func (e *Etcd) Endpoint() string { return e.client.String() }

// Start runs an etcd for the test, stopped when it ends.
func Start(t testing.TB) *Etcd { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Etcd {
	t.Helper()
	e, err := NewWith(t.TempDir(), "", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// EnableAuth turns on etcd's authentication with a root user of password,
// connecting with clientTLS (nil for plain connections). Every client then
// needs the root user's name and password.
func (e *Etcd) EnableAuth(clientTLS *tls.Config, password string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, TLS: clientTLS,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.UserAdd(ctx, "root", password); err != nil {
		return fmt.Errorf("adding etcd's root user: %w", err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		return fmt.Errorf("granting root its role: %w", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enabling etcd authentication: %w", err)
	}
	return nil
}

// FreeAddr returns a 127.0.0.1 address with a port the kernel just handed
// out.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
