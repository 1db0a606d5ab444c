package main

// kbroker transactions: kafka-transactions.sh over the admin package
// (ListTransactions, DescribeTransactions, DescribeProducers, and
// WriteTxnMarkers for abort). As Kafka's tool it takes a subcommand
// after the connection flags; the subcommand's own flags follow it.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"kbroker/admin"
)

const transactionsSynopsis = `kbroker transactions --bootstrap-server host:port [--command-config file] [--format text|json] COMMAND
  list [--duration-filter ms] [--state s,…] [--producer-id id,…] [--transactional-id-pattern regex]
  describe --transactional-id id
  describe-producers --topic t --partition p [--broker-id id]
  find-hanging (--broker-id id | --topic t [--partition p]) [--max-transaction-timeout minutes]
  abort --topic t --partition p (--start-offset o | --producer-id id --producer-epoch e --coordinator-epoch c)`

const transactionsExamples = `  # Every transactional id, then those with a transaction open for over a minute
  kbroker transactions --bootstrap-server localhost:9092 list
  kbroker transactions --bootstrap-server localhost:9092 list --duration-filter 60000 --state Ongoing

  # One id's transaction, and the producers writing to a partition
  kbroker transactions --bootstrap-server localhost:9092 describe --transactional-id orders-etl
  kbroker transactions --bootstrap-server localhost:9092 describe-producers --topic orders --partition 0

  # Transactions no coordinator will end (they hold read_committed consumers back), then abort one
  kbroker transactions --bootstrap-server localhost:9092 find-hanging --broker-id 1
  kbroker transactions --bootstrap-server localhost:9092 abort --topic orders --partition 0 --start-offset 1234
`

// transactionsCommands are the subcommands with the flags each takes
// (beyond the connection flags and --format).
var transactionsCommands = map[string][]string{
	"list":               {"duration-filter", "state", "producer-id", "transactional-id-pattern"},
	"describe":           {"transactional-id"},
	"describe-producers": {"topic", "partition", "broker-id"},
	"find-hanging":       {"broker-id", "topic", "partition", "max-transaction-timeout"},
	"abort":              {"topic", "partition", "start-offset", "producer-id", "producer-epoch", "coordinator-epoch"},
}

type transactionsCmd struct {
	conn                                          connFlags
	format                                        *formatFlag
	durationFilter                                int64
	states, producerIDs, pattern, transactionalID string
	topic                                         string
	partition, brokerID                           int
	maxTimeoutMinutes                             int
	startOffset                                   int64
	producerEpoch, coordinatorEpoch               int
	fs                                            *flag.FlagSet
	out, errOut                                   io.Writer
	now                                           func() time.Time
}

func runTransactions(args []string, out, errOut io.Writer) error {
	c := &transactionsCmd{out: out, errOut: errOut, now: time.Now}
	fs := newFlagSet("transactions", transactionsSynopsis, transactionsExamples, out)
	c.fs = fs
	c.conn.register(fs)
	c.format = registerFormat(fs)
	fs.Int64Var(&c.durationFilter, "duration-filter", -1, "list: only transactions open longer than this many `ms` (< 0: all)")
	fs.StringVar(&c.states, "state", "", "list: only ids in these `states` (Empty,Ongoing,PrepareCommit,…; kbroker's addition, ListTransactions' filter)")
	fs.StringVar(&c.producerIDs, "producer-id", "", "list: only these producer `ids` (comma list); abort: the producer id of the transaction")
	fs.StringVar(&c.pattern, "transactional-id-pattern", "", "list: only ids matching this `regex` (ListTransactions v2)")
	fs.StringVar(&c.transactionalID, "transactional-id", "", "describe: the transactional `id`")
	fs.StringVar(&c.topic, "topic", "", "`topic` name")
	fs.IntVar(&c.partition, "partition", -1, "partition `number`")
	fs.IntVar(&c.brokerID, "broker-id", -1, "describe-producers: the replica on this `broker` (default: the leader); find-hanging: the broker to search")
	fs.IntVar(&c.maxTimeoutMinutes, "max-transaction-timeout", 15, "find-hanging: the largest transaction timeout in `minutes`, to limit the scope of the search")
	fs.Int64Var(&c.startOffset, "start-offset", -1, "abort: start `offset` of the transaction to abort")
	fs.IntVar(&c.producerEpoch, "producer-epoch", -1, "abort: producer `epoch` (with --producer-id)")
	fs.IntVar(&c.coordinatorEpoch, "coordinator-epoch", -1, "abort: coordinator `epoch` (with --producer-id)")
	if err := parseFlagsAndArgs(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("a command is required: list, describe, describe-producers, find-hanging or abort")
	}
	sub := fs.Arg(0)
	allowed, ok := transactionsCommands[sub]
	if !ok {
		return usagef("unknown command %q: want list, describe, describe-producers, find-hanging or abort", sub)
	}
	// The subcommand's flags follow it, as in kafka-transactions.sh.
	if err := parseFlags(fs, fs.Args()[1:], out); err != nil {
		return err
	}
	if err := c.check(sub, allowed); err != nil {
		return err
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch sub {
	case "list":
		return c.runList(ctx, cl)
	case "describe":
		return c.runDescribe(ctx, cl)
	case "describe-producers":
		return c.runDescribeProducers(ctx, cl)
	case "find-hanging":
		return c.runFindHanging(ctx, cl)
	default:
		return c.runAbort(ctx, cl)
	}
}

// check refuses flags of another subcommand and applies
// kafka-transactions.sh's rules for the subcommand's own.
func (c *transactionsCmd) check(sub string, allowed []string) error {
	var err error
	c.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "bootstrap-server", "command-config", "timeout", "format":
			return
		}
		if err == nil && !slices.Contains(allowed, f.Name) {
			err = usagef("--%s does not go with %s", f.Name, sub)
		}
	})
	if err != nil {
		return err
	}
	given := func(name string) bool { return flagGiven(c.fs, name) }
	switch sub {
	case "describe":
		if c.transactionalID == "" {
			return usageError("describe needs --transactional-id")
		}
	case "describe-producers":
		if c.topic == "" || !given("partition") {
			return usageError("describe-producers needs --topic and --partition")
		}
	case "find-hanging":
		if c.topic == "" && !given("broker-id") {
			return usageError("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
		}
		if given("partition") && c.topic == "" {
			return usageError("The --partition argument requires --topic to be provided")
		}
	case "abort":
		if c.topic == "" || !given("partition") {
			return usageError("abort needs --topic and --partition")
		}
		if !given("start-offset") && !given("producer-id") {
			return usageError("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
		}
		if given("start-offset") && given("producer-id") {
			return usageError("--start-offset and --producer-id do not go together")
		}
		if given("producer-id") && !given("producer-epoch") {
			return usageError("Missing required argument --producer-epoch")
		}
		if given("producer-id") && !given("coordinator-epoch") {
			return usageError("Missing required argument --coordinator-epoch")
		}
	}
	return nil
}

func (c *transactionsCmd) runList(ctx context.Context, cl *admin.Client) error {
	f := admin.ListTransactionsFilter{Pattern: c.pattern}
	if c.durationFilter >= 0 {
		// Kafka's filterOnDuration: longer than the filter, 0 included
		// (every open transaction).
		f.MinDuration = max(time.Duration(c.durationFilter)*time.Millisecond, time.Nanosecond)
	}
	if c.states != "" {
		f.States = strings.Split(c.states, ",")
	}
	if c.producerIDs != "" {
		for _, s := range strings.Split(c.producerIDs, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return usagef("--producer-id: %q is not a producer id", s)
			}
			f.ProducerIDs = append(f.ProducerIDs, id)
		}
	}
	ls, err := cl.ListTransactions(ctx, f)
	if err != nil {
		return fmt.Errorf("Failed to list transactions: %w", err)
	}
	if *c.format == "json" {
		return writeJSON(c.out, ls)
	}
	rows := make([][]string, 0, len(ls))
	for _, l := range ls {
		rows = append(rows, []string{l.TransactionalID, strconv.Itoa(int(l.Coordinator)), strconv.FormatInt(l.ProducerID, 10), l.State})
	}
	printTable(c.out, []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}, rows)
	return nil
}

// describedTransaction is describe's JSON: the description with the
// duration kafka-transactions.sh computes.
type describedTransaction struct {
	admin.TransactionDescription
	DurationMillis *int64 `json:"transaction_duration_ms"`
}

func (c *transactionsCmd) runDescribe(ctx context.Context, cl *admin.Client) error {
	ds, err := cl.DescribeTransactions(ctx, c.transactionalID)
	if err == nil {
		err = ds.All()
	}
	if err != nil {
		return fmt.Errorf("Failed to describe transaction state of transactional-id `%s`: %w", c.transactionalID, err)
	}
	d := describedTransaction{TransactionDescription: ds[0]}
	start, duration := "None", "None"
	if d.StartMillis >= 0 {
		ms := c.now().UnixMilli() - d.StartMillis
		d.DurationMillis = &ms
		start, duration = strconv.FormatInt(d.StartMillis, 10), strconv.FormatInt(ms, 10)
	}
	if *c.format == "json" {
		return writeJSON(c.out, d)
	}
	parts := make([]string, len(d.Partitions))
	for i, tp := range d.Partitions {
		parts[i] = tp.String()
	}
	printTable(c.out, []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
		"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"},
		[][]string{{strconv.Itoa(int(d.Coordinator)), d.TransactionalID, strconv.FormatInt(d.ProducerID, 10),
			strconv.Itoa(int(d.ProducerEpoch)), d.State, strconv.Itoa(int(d.TimeoutMillis)), start, duration, strings.Join(parts, ",")}})
	return nil
}

func (c *transactionsCmd) runDescribeProducers(ctx context.Context, cl *admin.Client) error {
	tp := admin.TopicPartition{Topic: c.topic, Partition: int32(c.partition)}
	ps, err := cl.DescribeProducers(ctx, int32(c.brokerID), tp)
	if err == nil {
		err = ps.All()
	}
	if err != nil {
		on := "leader"
		if c.brokerID >= 0 {
			on = "broker " + strconv.Itoa(c.brokerID)
		}
		return fmt.Errorf("Failed to describe producers for partition %s on %s: %w", tp, on, err)
	}
	if *c.format == "json" {
		return writeJSON(c.out, ps[0])
	}
	rows := make([][]string, 0, len(ps[0].Producers))
	for _, p := range ps[0].Producers {
		start := "None"
		if p.CurrentTxnStartOffset >= 0 {
			start = strconv.FormatInt(p.CurrentTxnStartOffset, 10)
		}
		rows = append(rows, []string{strconv.FormatInt(p.ProducerID, 10), strconv.Itoa(int(p.ProducerEpoch)),
			strconv.Itoa(int(p.CoordinatorEpoch)), strconv.Itoa(int(p.LastSequence)), strconv.FormatInt(p.LastTimestamp, 10), start})
	}
	printTable(c.out, []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}, rows)
	return nil
}

func (c *transactionsCmd) runFindHanging(ctx context.Context, cl *admin.Client) error {
	now := c.now()
	hs, err := cl.FindHangingTransactions(ctx, admin.HangingFilter{Broker: int32(c.brokerID), Topic: c.topic,
		Partition: int32(c.partition), MaxTransactionTimeout: time.Duration(c.maxTimeoutMinutes) * time.Minute}, now)
	if err != nil {
		return fmt.Errorf("Failed to find hanging transactions: %w", err)
	}
	if *c.format == "json" {
		return writeJSON(c.out, hs)
	}
	rows := make([][]string, 0, len(hs))
	for _, h := range hs {
		minutes := (now.UnixMilli() - h.LastTimestamp) / time.Minute.Milliseconds()
		rows = append(rows, []string{h.Topic, strconv.Itoa(int(h.Partition)), strconv.FormatInt(h.ProducerID, 10),
			strconv.Itoa(int(h.ProducerEpoch)), strconv.Itoa(int(h.CoordinatorEpoch)), strconv.FormatInt(h.CurrentTxnStartOffset, 10),
			strconv.FormatInt(h.LastTimestamp, 10), strconv.FormatInt(minutes, 10)})
	}
	printTable(c.out, []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"}, rows)
	return nil
}

func (c *transactionsCmd) runAbort(ctx context.Context, cl *admin.Client) error {
	tp := admin.TopicPartition{Topic: c.topic, Partition: int32(c.partition)}
	var spec admin.AbortSpec
	if flagGiven(c.fs, "start-offset") {
		var err error
		if spec, err = cl.AbortSpecAt(ctx, tp, c.startOffset); err != nil {
			return err
		}
	} else {
		pid, err := strconv.ParseInt(c.producerIDs, 10, 64)
		if err != nil {
			return usagef("--producer-id: %q is not a producer id", c.producerIDs)
		}
		// A producer whose partition has seen no marker yet shows
		// coordinator epoch -1; 0 is at or below any real one (Kafka's tool).
		spec = admin.AbortSpec{TopicPartition: tp, ProducerID: pid, ProducerEpoch: int16(c.producerEpoch),
			CoordinatorEpoch: int32(max(c.coordinatorEpoch, 0))}
	}
	if err := cl.AbortTransaction(ctx, spec); err != nil {
		return fmt.Errorf("Failed to abort transaction %s: %w", spec, err)
	}
	if *c.format == "json" {
		return writeJSON(c.out, spec)
	}
	return nil
}

// printTable prints as Kafka's ToolsUtils.prettyPrintTable: each cell
// padded to its column's widest, followed by a tab.
func printTable(w io.Writer, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i, v := range r {
			widths[i] = max(widths[i], len(v))
		}
	}
	for _, r := range append([][]string{headers}, rows...) {
		var b strings.Builder
		for i, v := range r {
			fmt.Fprintf(&b, "%-*s\t", widths[i], v)
		}
		fmt.Fprintln(w, b.String())
	}
}
