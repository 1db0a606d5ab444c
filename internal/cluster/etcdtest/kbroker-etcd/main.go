// Command kbroker-etcd runs a single-member etcd for trying a kbroker
// cluster where no etcd binary is installed:
//
//	go run ./internal/cluster/etcdtest/kbroker-etcd -data-dir /tmp/kbroker-etcd -listen 127.0.0.1:2379
//
// It is a test convenience (one member, no TLS, no authentication); run a
// real etcd cluster for anything that matters.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"kbroker/internal/cluster/etcdtest"
)

func main() {
	dir := flag.String("data-dir", "kbroker-etcd.data", "directory of the etcd data")
	listen := flag.String("listen", "127.0.0.1:2379", "host:port clients connect to")
	flag.Parse()
	e, err := etcdtest.New(*dir, *listen)
	if err == nil {
		err = e.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbroker-etcd:", err)
		os.Exit(1)
	}
	fmt.Println("etcd serving on", e.Endpoint())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	e.Stop()
}
