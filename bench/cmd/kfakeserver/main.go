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
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port on 127.0.0.1 to listen on (0 picks a free one)")
	configs := map[string]string{}
	flag.Func("config", "a kfake broker config, key=value (repeatable; kfake.BrokerConfigs)", func(kv string) error {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want key=value", kv)
		}
		configs[k] = v
		return nil
	})
	flag.Parse()

	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		// kbench creates its topics explicitly; auto-creation only
		// mirrors kbroker's auto.create.topics.enable=true.
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
		kfake.BrokerConfigs(configs),
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
