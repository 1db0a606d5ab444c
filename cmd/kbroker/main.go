// Command kbroker runs a Kafka-protocol broker ("kbroker serve") and, as the
// admin commands land, administers one over the protocol.
package main

import (
	"fmt"
	"os"
)

const usage = `kbroker — a Kafka-wire-protocol broker

Usage:
  kbroker serve [--config server.properties] [--override key=value ...]

Commands:
  serve     run a broker (defaults: PLAINTEXT://127.0.0.1:9092, data in ./data)

Run "kbroker <command> --help" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "kbroker: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kbroker %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
