package main

// kbroker leader-election: kafka-leader-election.sh over the admin package
// (ElectLeaders).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"kbroker/admin"
)

const leaderElectionSynopsis = `kbroker leader-election --bootstrap-server host:port [--command-config file] --election-type PREFERRED|UNCLEAN
         (--topic t --partition p | --all-topic-partitions | --path-to-json-file f)`

const leaderElectionExamples = `  kbroker leader-election --bootstrap-server localhost:9092 --election-type PREFERRED --all-topic-partitions
  kbroker leader-election --bootstrap-server localhost:9092 --election-type UNCLEAN --topic orders --partition 3
`

func runLeaderElection(args []string, out, errOut io.Writer) error {
	var conn connFlags
	fs := newFlagSet("leader-election", leaderElectionSynopsis, leaderElectionExamples, out)
	conn.register(fs)
	electionType := fs.String("election-type", "", "REQUIRED: `type` of election: PREFERRED or UNCLEAN")
	topic := fs.String("topic", "", "`name` of the topic whose partition to elect, with --partition")
	partition := fs.Int("partition", -1, "partition `number` of --topic")
	all := fs.Bool("all-topic-partitions", false, "elect every partition that needs it")
	jsonFile := fs.String("path-to-json-file", "", `JSON `+"`file`"+` {"partitions":[{"topic":"t","partition":0}]}`)
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	var unclean bool
	switch strings.ToUpper(*electionType) {
	case "PREFERRED":
	case "UNCLEAN":
		unclean = true
	case "":
		return usageError("Missing required option(s) [election-type]")
	default:
		return usagef("--election-type %q: want PREFERRED or UNCLEAN", *electionType)
	}
	sources := 0
	for _, on := range []bool{*topic != "", *all, *jsonFile != ""} {
		if on {
			sources++
		}
	}
	if sources != 1 {
		return usageError("One and only one of the following options is required: all-topic-partitions, topic, path-to-json-file")
	}
	if (*topic != "") != (*partition >= 0) {
		return usageError("--topic and --partition go together")
	}
	var partitions []admin.PartitionReplicas
	switch {
	case *topic != "":
		partitions = []admin.PartitionReplicas{{Topic: *topic, Partition: int32(*partition)}}
	case *jsonFile != "":
		raw, err := os.ReadFile(*jsonFile)
		if err != nil {
			return err
		}
		var doc struct {
			Partitions []admin.PartitionReplicas `json:"partitions"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %v", *jsonFile, err)
		}
		if len(doc.Partitions) == 0 {
			return fmt.Errorf("%s names no partition", *jsonFile)
		}
		partitions = doc.Partitions
	}
	cl, ctx, done, err := conn.connect()
	if err != nil {
		return err
	}
	defer done()
	return electLeaders(ctx, cl, unclean, partitions, out, errOut)
}

// electLeaders prints kafka-leader-election.sh's lines: the partitions
// elected, those whose leader was already the one asked for, and each
// failure.
func electLeaders(ctx context.Context, cl *admin.Client, unclean bool, partitions []admin.PartitionReplicas, out, errOut io.Writer) error {
	how := "PREFERRED"
	if unclean {
		how = "UNCLEAN"
	}
	res, err := cl.ElectLeaders(ctx, unclean, partitions)
	if err != nil {
		return err
	}
	var elected, notNeeded, failed []string
	for _, r := range res {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		switch {
		case r.Err == nil:
			elected = append(elected, name)
		case errors.Is(r.Err, kerr.ElectionNotNeeded):
			notNeeded = append(notNeeded, name)
		default:
			failed = append(failed, fmt.Sprintf("Error completing leader election (%s) for partition: %s: %s", how, name, errMessage(r.Err)))
		}
	}
	if len(elected) > 0 {
		fmt.Fprintf(out, "Successfully completed leader election (%s) for partitions %s\n", how, strings.Join(elected, ", "))
	}
	if len(notNeeded) > 0 {
		fmt.Fprintf(out, "Valid replica already elected for partitions %s\n", strings.Join(notNeeded, ", "))
	}
	if len(elected) == 0 && len(notNeeded) == 0 && len(failed) == 0 {
		fmt.Fprintf(out, "No partition needed a leader election (%s)\n", how)
	}
	if len(failed) > 0 {
		for _, f := range failed {
			fmt.Fprintln(errOut, errorPrefix("leader-election")+f)
		}
		return fmt.Errorf("%d replica(s) could not be elected", len(failed))
	}
	return nil
}
