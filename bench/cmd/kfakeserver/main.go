// Command kfakeserver runs franz-go's kfake as a standalone single-broker
// cluster on 127.0.0.1, so kbench can measure it as a separate process just
// like kbroker. It prints its listen address as the first line of stdout and
// runs until SIGTERM or SIGINT.
//
// kfake keeps everything in memory and is run with its defaults: in
// particular not BlackholeProduce, because kbroker stores what it is sent
// and the comparison must do the same work.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 to listen on (0 picks a free one)")
	flag.Parse()

	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		// kbench creates its topics explicitly; auto-creation only
		// mirrors kbroker's auto.create.topics.enable=true.
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfakeserver:", err)
		os.Exit(1)
	}
	fmt.Println(c.ListenAddrs()[0])

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs
	c.Close()
}
