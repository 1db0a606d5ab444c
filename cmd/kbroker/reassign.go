package main

// kbroker reassign: kafka-reassign-partitions.sh over the admin package
// (Metadata, AlterPartitionReassignments, ListPartitionReassignments), with
// its JSON files and its output.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"kbroker/admin"
)

const reassignSynopsis = `kbroker reassign --bootstrap-server host:port [--command-config file]
         (--generate --topics-to-move-json-file f --broker-list 1,2,3
          | --execute --reassignment-json-file f [--throttle bytes/s]
          | --verify --reassignment-json-file f [--preserve-throttles] | --cancel --reassignment-json-file f)`

const reassignExamples = `  echo '{"version":1,"topics":[{"topic":"orders"}]}' > move.json
  kbroker reassign --bootstrap-server localhost:9092 --generate --topics-to-move-json-file move.json --broker-list 2,3,4
  kbroker reassign --bootstrap-server localhost:9092 --execute --reassignment-json-file plan.json --throttle 50000000
  kbroker reassign --bootstrap-server localhost:9092 --verify --reassignment-json-file plan.json
  kbroker reassign --bootstrap-server localhost:9092 --cancel --reassignment-json-file plan.json
`

type reassignCmd struct {
	conn                             connFlags
	generate, execute, verify, abort bool
	topicsFile, planFile, brokerList string
	// throttle is --throttle, bytes per second (-1: none), and
	// preserveThrottles --preserve-throttles.
	throttle          int64
	preserveThrottles bool
	out               io.Writer
}

func runReassign(args []string, out, _ io.Writer) error {
	c := &reassignCmd{out: out}
	fs := newFlagSet("reassign", reassignSynopsis, reassignExamples, out)
	c.conn.register(fs)
	fs.BoolVar(&c.generate, "generate", false, "propose an assignment of the topics of --topics-to-move-json-file on --broker-list (nothing is changed)")
	fs.BoolVar(&c.execute, "execute", false, "start the reassignment of --reassignment-json-file")
	fs.BoolVar(&c.verify, "verify", false, "tell whether the reassignment of --reassignment-json-file is complete")
	fs.BoolVar(&c.abort, "cancel", false, "cancel the reassignments in progress of the partitions of --reassignment-json-file")
	fs.StringVar(&c.topicsFile, "topics-to-move-json-file", "", `JSON `+"`file`"+` {"version":1,"topics":[{"topic":"t"}]} for --generate`)
	fs.StringVar(&c.planFile, "reassignment-json-file", "", `JSON `+"`file`"+` {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`)
	fs.StringVar(&c.brokerList, "broker-list", "", "broker `ids` 1,2,3 to place the replicas on, for --generate")
	fs.Int64Var(&c.throttle, "throttle", -1, "with --execute, throttle the replication of the moving partitions to this many `bytes/s` on each broker involved (--verify removes the throttle once the reassignment is complete)")
	fs.BoolVar(&c.preserveThrottles, "preserve-throttles", false, "with --verify, leave the replication throttles in place when the reassignment is complete")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	action, err := exactlyOne(map[string]bool{"generate": c.generate, "execute": c.execute, "verify": c.verify, "cancel": c.abort})
	if err != nil {
		return err
	}
	var plan admin.ReassignmentPlan
	var brokers []int32
	if c.throttle >= 0 && action != "execute" {
		return usageError("--throttle is only for --execute")
	}
	if c.preserveThrottles && action != "verify" {
		return usageError("--preserve-throttles is only for --verify")
	}
	if action == "generate" {
		if c.topicsFile == "" || c.brokerList == "" {
			return usageError("--generate needs --topics-to-move-json-file and --broker-list")
		}
		if brokers, err = parseBrokerList(c.brokerList); err != nil {
			return err
		}
	} else {
		if c.planFile == "" {
			return usagef("--%s needs --reassignment-json-file", action)
		}
		if plan, err = readPlan(c.planFile); err != nil {
			return err
		}
	}
	cl, ctx, done, err := c.conn.connect()
	if err != nil {
		return err
	}
	defer done()
	switch action {
	case "generate":
		return c.runGenerate(ctx, cl, brokers)
	case "execute":
		return c.runExecute(ctx, cl, plan)
	case "verify":
		return c.runVerify(ctx, cl, plan)
	default:
		return c.runCancel(ctx, cl, plan)
	}
}

func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, usagef("--broker-list %q: %q is not a broker id", s, f)
		}
		if slices.Contains(out, int32(n)) {
			return nil, usagef("Duplicate broker IDs in broker list: %s", s)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// readPlan reads a reassignment JSON file, refusing what
// kafka-reassign-partitions.sh refuses before sending anything.
func readPlan(path string) (admin.ReassignmentPlan, error) {
	var plan admin.ReassignmentPlan
	raw, err := os.ReadFile(path)
	if err != nil {
		return plan, err
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		return plan, fmt.Errorf("%s: %v", path, err)
	}
	if len(plan.Partitions) == 0 {
		return plan, fmt.Errorf("Partition reassignment list cannot be empty")
	}
	seen := map[string]bool{}
	for _, p := range plan.Partitions {
		if seen[p.Name()] {
			return plan, fmt.Errorf("Reassignment JSON file contains duplicate partitions: %s", p.Name())
		}
		seen[p.Name()] = true
		if len(p.Replicas) == 0 {
			return plan, fmt.Errorf("Partition replica list cannot be empty: %s", p.Name())
		}
		for i, id := range p.Replicas {
			if slices.Contains(p.Replicas[:i], id) {
				return plan, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s contains %v", p.Name(), p.Replicas)
			}
		}
	}
	return plan, nil
}

func printPlan(w io.Writer, partitions []admin.PartitionReplicas) {
	b, _ := json.Marshal(admin.ReassignmentPlan{Version: 1, Partitions: partitions})
	fmt.Fprintf(w, "%s\n", b)
}

func (c *reassignCmd) runGenerate(ctx context.Context, cl *admin.Client, ids []int32) error {
	raw, err := os.ReadFile(c.topicsFile)
	if err != nil {
		return err
	}
	var move struct {
		Topics []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(raw, &move); err != nil {
		return fmt.Errorf("%s: %v", c.topicsFile, err)
	}
	var topics []string
	for _, t := range move.Topics {
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return fmt.Errorf("%s names no topic", c.topicsFile)
	}
	all, err := cl.ListBrokers(ctx)
	if err != nil {
		return err
	}
	var pool []admin.BrokerInfo
	for _, id := range ids {
		i := slices.IndexFunc(all, func(b admin.BrokerInfo) bool { return b.NodeID == id })
		if i < 0 {
			return fmt.Errorf("The given broker list contains broker %d, which is not registered in the cluster", id)
		}
		pool = append(pool, all[i])
	}
	current, err := cl.CurrentAssignment(ctx, topics...)
	if err != nil {
		return err
	}
	proposed, err := admin.GenerateReassignment(current, pool)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.out, "Current partition replica assignment")
	printPlan(c.out, current)
	fmt.Fprintln(c.out, "\nProposed partition reassignment configuration")
	printPlan(c.out, proposed)
	return nil
}

func (c *reassignCmd) runExecute(ctx context.Context, cl *admin.Client, plan admin.ReassignmentPlan) error {
	var topics []string
	for _, p := range plan.Partitions {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	current, err := cl.CurrentAssignment(ctx, topics...)
	if err != nil {
		return err
	}
	var rollback []admin.PartitionReplicas
	for _, p := range current {
		if slices.ContainsFunc(plan.Partitions, func(q admin.PartitionReplicas) bool { return q.Name() == p.Name() }) {
			rollback = append(rollback, p)
		}
	}
	fmt.Fprintln(c.out, "Current partition replica assignment")
	fmt.Fprintln(c.out)
	printPlan(c.out, rollback)
	fmt.Fprintln(c.out, "\nSave this to use as the --reassignment-json-file option during rollback")
	if c.throttle >= 0 {
		if err := setReassignmentThrottles(ctx, cl, rollback, plan.Partitions, c.throttle); err != nil {
			return err
		}
		fmt.Fprintln(c.out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		fmt.Fprintf(c.out, "The inter-broker throttle limit was set to %d B/s\n", c.throttle)
	}
	res, err := cl.AlterPartitionReassignments(ctx, plan.Partitions)
	if err != nil {
		return err
	}
	started, failed := splitResults(res)
	if len(started) > 0 {
		fmt.Fprintf(c.out, "Successfully started partition reassignments for %s\n", strings.Join(started, ","))
	}
	if len(failed) > 0 {
		return errors.New("Error reassigning partition(s):\n" + strings.Join(failed, "\n"))
	}
	return nil
}

// splitResults names the partitions of res that succeeded (topic-p) and
// those that failed (topic-p: message), in res's order.
func splitResults(res []admin.ReplicaResult) (ok, failed []string) {
	for _, r := range res {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Err != nil {
			failed = append(failed, name+": "+errMessage(r.Err))
			continue
		}
		ok = append(ok, name)
	}
	return ok, failed
}

// errMessage is an admin error without its resource prefix, which the
// lines above already name.
func errMessage(err error) string {
	var ae *admin.Error
	if errors.As(err, &ae) {
		cp := *ae
		cp.Resource = ""
		return cp.Error()
	}
	return err.Error()
}

func (c *reassignCmd) runVerify(ctx context.Context, cl *admin.Client, plan admin.ReassignmentPlan) error {
	active, err := cl.ListPartitionReassignments(ctx, plan.Partitions)
	if err != nil {
		return err
	}
	var topics []string
	for _, p := range plan.Partitions {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	current, err := cl.CurrentAssignment(ctx, topics...)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.out, "Status of partition reassignment:")
	unfinished := false
	for _, p := range plan.Partitions {
		switch {
		case slices.ContainsFunc(active, func(r admin.Reassignment) bool { return r.Topic == p.Topic && r.Partition == p.Partition }):
			unfinished = true
			fmt.Fprintf(c.out, "Reassignment of partition %s is still in progress.\n", p.Name())
		default:
			i := slices.IndexFunc(current, func(q admin.PartitionReplicas) bool { return q.Name() == p.Name() })
			switch {
			case i < 0:
				unfinished = true
				fmt.Fprintf(c.out, "There is no active reassignment of partition %s, and the partition does not exist.\n", p.Name())
			case slices.Equal(current[i].Replicas, p.Replicas):
				fmt.Fprintf(c.out, "Reassignment of partition %s is completed.\n", p.Name())
			default:
				unfinished = true
				fmt.Fprintf(c.out, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n", p.Name(), joinIDs(current[i].Replicas), joinIDs(p.Replicas))
			}
		}
	}
	if unfinished {
		return errReported
	}
	if c.preserveThrottles {
		return nil
	}
	return c.clearThrottles(ctx, cl, topics)
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func (c *reassignCmd) runCancel(ctx context.Context, cl *admin.Client, plan admin.ReassignmentPlan) error {
	targets := make([]admin.PartitionReplicas, 0, len(plan.Partitions))
	for _, p := range plan.Partitions {
		targets = append(targets, admin.PartitionReplicas{Topic: p.Topic, Partition: p.Partition}) // nil replicas: cancel
	}
	res, err := cl.AlterPartitionReassignments(ctx, targets)
	if err != nil {
		return err
	}
	cancelled, failed := splitResults(res)
	if len(cancelled) > 0 {
		fmt.Fprintf(c.out, "Successfully cancelled partition reassignments for: %s\n", strings.Join(cancelled, ","))
	}
	if len(failed) > 0 {
		return errors.New("Error cancelling partition reassignment(s):\n" + strings.Join(failed, "\n"))
	}
	return nil
}

// The replication throttles of a reassignment, as
// kafka-reassign-partitions.sh sets them: on each moving partition's
// topic, leader.replication.throttled.replicas names its current replicas
// (those that send) and follower.replication.throttled.replicas the ones
// the reassignment adds (those that copy); every broker of either set gets
// leader.replication.throttled.rate and follower.replication.throttled.rate.
const (
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
)

// setReassignmentThrottles throttles the partitions moving from current to
// target replicas at rate bytes per second.
func setReassignmentThrottles(ctx context.Context, cl *admin.Client, current, target []admin.PartitionReplicas, rate int64) error {
	leaders, followers := map[string][]string{}, map[string][]string{}
	var brokers []int32
	for _, t := range target {
		i := slices.IndexFunc(current, func(c admin.PartitionReplicas) bool { return c.Name() == t.Name() })
		if i < 0 || slices.Equal(current[i].Replicas, t.Replicas) {
			continue // unknown (refused below) or not moving
		}
		for _, id := range current[i].Replicas {
			leaders[t.Topic] = append(leaders[t.Topic], fmt.Sprintf("%d:%d", t.Partition, id))
		}
		for _, id := range t.Replicas {
			if !slices.Contains(current[i].Replicas, id) {
				followers[t.Topic] = append(followers[t.Topic], fmt.Sprintf("%d:%d", t.Partition, id))
			}
		}
		for _, id := range slices.Concat(current[i].Replicas, t.Replicas) {
			if !slices.Contains(brokers, id) {
				brokers = append(brokers, id)
			}
		}
	}
	changes := map[admin.ConfigResource][]admin.ConfigChange{}
	for topic, l := range leaders {
		changes[admin.TopicResource(topic)] = []admin.ConfigChange{
			admin.Set(leaderThrottledReplicas, strings.Join(l, ",")),
			admin.Set(followerThrottledReplicas, strings.Join(followers[topic], ",")),
		}
	}
	r := strconv.FormatInt(rate, 10)
	for _, id := range brokers {
		changes[admin.BrokerResource(id)] = []admin.ConfigChange{admin.Set(leaderThrottledRate, r), admin.Set(followerThrottledRate, r)}
	}
	if len(changes) == 0 {
		return nil
	}
	res, err := cl.AlterConfigs(ctx, changes, admin.AlterOptions{Incremental: true})
	if err != nil {
		return err
	}
	return res.All()
}

// clearThrottles removes what --throttle set, from every broker and the
// plan's topics, once the reassignment is complete (as Kafka's tool does
// on --verify, whether or not --execute set a throttle).
func (c *reassignCmd) clearThrottles(ctx context.Context, cl *admin.Client, topics []string) error {
	all, err := cl.ListBrokers(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b admin.BrokerInfo) int { return int(a.NodeID - b.NodeID) })
	changes := map[admin.ConfigResource][]admin.ConfigChange{}
	ids := make([]string, 0, len(all))
	for _, b := range all {
		changes[admin.BrokerResource(b.NodeID)] = []admin.ConfigChange{admin.Delete(leaderThrottledRate), admin.Delete(followerThrottledRate)}
		ids = append(ids, strconv.Itoa(int(b.NodeID)))
	}
	for _, t := range topics {
		changes[admin.TopicResource(t)] = []admin.ConfigChange{admin.Delete(leaderThrottledReplicas), admin.Delete(followerThrottledReplicas)}
	}
	fmt.Fprintf(c.out, "\nClearing broker-level throttles on brokers %s\n", strings.Join(ids, ","))
	fmt.Fprintf(c.out, "Clearing topic-level throttles on topics %s\n", strings.Join(topics, ","))
	res, err := cl.AlterConfigs(ctx, changes, admin.AlterOptions{Incremental: true})
	if err != nil {
		return err
	}
	return res.All()
}
