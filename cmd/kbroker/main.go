// Command kbroker runs a Kafka-protocol broker ("kbroker serve") and
// administers any Kafka-compatible cluster over the protocol ("kbroker
// configs|topics|acls|users", shaped like Apache Kafka's kafka-configs.sh,
// kafka-topics.sh and kafka-acls.sh).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"kbroker/internal/buildinfo"
)

const usage = `kbroker — a Kafka-wire-protocol broker and its admin tools

Usage:
  kbroker --version
  kbroker serve [--config server.properties] [--override key=value ...]
  kbroker configs --bootstrap-server host:port (--describe | --alter) ...
  kbroker topics  --bootstrap-server host:port (--create | --describe | --list | --alter | --delete) ...
  kbroker acls    --bootstrap-server host:port (--add | --remove | --list) ...
  kbroker users   --bootstrap-server host:port (--describe | --upsert | --delete) ...
  kbroker groups  --bootstrap-server host:port (--list | --describe | --reset-offsets | --delete | --delete-offsets) ...
  kbroker transactions --bootstrap-server host:port (list | describe | describe-producers | find-hanging | abort) ...
  kbroker policies --check FILE [--request JSON | --requests FILE]
  kbroker reassign --bootstrap-server host:port (--generate | --execute | --verify | --cancel) ...
  kbroker leader-election --bootstrap-server host:port --election-type PREFERRED|UNCLEAN (--topic t --partition p | --all-topic-partitions) ...

Commands:
  serve         run a broker (defaults: PLAINTEXT://127.0.0.1:9092, data in ./data)
  configs       describe and alter configs and quotas (as kafka-configs.sh)
  topics        create, list, describe, alter and delete topics (as kafka-topics.sh)
  acls          add, remove and list ACLs (as kafka-acls.sh)
  users         manage SCRAM credentials
  groups        list, describe, reset and delete consumer groups (as kafka-consumer-groups.sh)
  transactions  list, describe and abort transactions (as kafka-transactions.sh)
  policies      compile CEL policy rules, try them on sample requests, store them in the cluster
  reassign      move partition replicas between brokers (as kafka-reassign-partitions.sh)
  leader-election  elect preferred or unclean partition leaders (as kafka-leader-election.sh)

The admin commands work against any Kafka-compatible cluster; they exit 0 on
success, 1 when anything failed (each failure is printed with the broker's
message) and 2 on a usage error.

Run "kbroker <command> --help" for a command's flags and examples.
`

// command runs one subcommand; it returns errors and never exits.
type command func(args []string, out, errOut io.Writer) error

var commands = map[string]command{
	"serve": func(args []string, out, _ io.Writer) error {
		if asksVersion(args) {
			return printVersion(out)
		}
		return serve(args)
	},
	"configs":      runConfigs,
	"topics":       runTopics,
	"acls":         runACLs,
	"users":        runUsers,
	"groups":       runGroups,
	"transactions": runTransactions,
	"policies":     runPolicies,

	"reassign":        runReassign,
	"leader-election": runLeaderElection,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the CLI edge: it dispatches and turns errors into exit codes.
func run(args []string, out, errOut io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(errOut, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(out, usage)
		return 0
	case "-version", "--version", "version":
		printVersion(out)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "kbroker: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(args[1:], out, errOut)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(errOut, "%s%v\nRun \"kbroker %s --help\" for usage.\n", errorPrefix(args[0]), err, args[0])
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(errOut, "%s%v\n", errorPrefix(args[0]), err)
		return 1
	}
}

// asksVersion reports whether a --version flag is among args (before a "--"
// that ends the flags). It is looked for before the other flags are parsed,
// so that "kbroker serve --config server.properties --version" prints the
// version instead of starting a broker, whatever else is on the line.
func asksVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-version", "--version":
			return true
		}
	}
	return false
}

// printVersion prints the version and commit the binary was built from.
func printVersion(out io.Writer) error {
	_, err := fmt.Fprintln(out, buildinfo.Get())
	return err
}
