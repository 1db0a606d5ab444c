package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"kbroker/bench/admin"
	"kbroker/bench/broker"
	"kbroker/internal/cluster/etcdtest"
)

// caseB6Etcd is B6 in etcd mode: one etcd (embedded in this process, as
// internal/cluster/etcdtest runs it) and three kbroker processes sharing
// their metadata through it. It measures change propagation between brokers
// against etcd's own put→watch latency in the same run, and how long a
// starting broker takes to load the metadata of many topics.
func (s *adminSuite) caseB6Etcd(ctx context.Context, sec *section) error {
	sec.title = "B6 — change propagation and metadata load (etcd, three brokers)"
	dir, err := os.MkdirTemp(s.tmp, "etcd-")
	if err != nil {
		return err
	}
	etcd, err := etcdtest.New(dir, "")
	if err != nil {
		return err
	}
	if err := etcd.Start(); err != nil {
		return err
	}
	defer etcd.Stop()
	start := func(id int) (*broker.Broker, error) {
		return s.start(ctx, "node.id="+strconv.Itoa(id), "metadata.etcd.endpoints="+etcd.Endpoint())
	}
	var brokers []*broker.Broker
	defer func() {
		for _, b := range brokers {
			b.Stop()
		}
	}()
	for id := 1; id <= 3; id++ {
		b, err := start(id)
		if err != nil {
			return err
		}
		brokers = append(brokers, b)
	}

	// etcd's floor, half before and half after the brokers' runs, so drift
	// during the run shows in both.
	n := max(2*s.o.ad.cycles, 20)
	floor, err := admin.EtcdPutWatch(ctx, etcd.Endpoint(), n/2)
	if err != nil {
		return fmt.Errorf("etcd put→watch: %w", err)
	}
	spec := admin.EtcdPropagationSpec{A: brokers[0].Addr, B: brokers[1].Addr, BID: 2, Topic: topicName("b6e"), Cycles: s.o.ad.cycles}
	res, err := admin.EtcdPropagation(ctx, spec)
	if err != nil {
		return err
	}
	more, err := admin.EtcdPutWatch(ctx, etcd.Endpoint(), n-n/2)
	if err != nil {
		return fmt.Errorf("etcd put→watch: %w", err)
	}
	floor = append(floor, more...)

	sec.printf("One single-member etcd embedded in kbench (data on the local disk), three `kbroker serve` processes with "+
		"`metadata.etcd.endpoints` set, all on loopback. `max.message.bytes` of a one-partition topic led by broker B "+
		"alternates 1000 → 1048576 (IncrementalAlterConfigs through broker A), %d changes. On half of them the time is taken "+
		"from A's answer to the first Produce response from B (2 KB record, polled back to back) that applies the new value: "+
		"produce makes no etcd round trip, so this is etcd's watch carrying the change into B's live state. On the other half a "+
		"DescribeConfigs to B is sent at once and must already show the new value (B reads etcd's revision and waits for its "+
		"watch before answering an admin request). **etcd put→watch** = a serial 256 B put timed from issue to receipt of its "+
		"watch event, in the same run (%d puts, half before and half after).\n\n", 2*spec.Cycles, len(floor))
	sec.printf(pctHeader)
	sec.printf("%s", pctRow("etcd put → watch event (ms)", floor, "%.2f"))
	sec.printf("%s", pctRow("alter ack on A → new value enforced on B (ms)", res.Enforced, "%.2f"))
	sec.printf("%s", pctRow("DescribeConfigs on B right after the ack (ms)", res.Described, "%.2f"))
	sec.printf("%s", pctRow("IncrementalAlterConfigs on A (ms)", res.Alter, "%.2f"))
	_, _, fp99, _ := pct(floor)
	_, _, p99, _ := pct(res.Enforced)
	sec.printf("\nDescribeConfigs on B showed the old value %d time(s) of %d.\n", res.Stale, len(res.Described))
	sec.printf("\nGoal propagation p99 ≤ 2 × etcd put→watch p99: %.2f ms ÷ %.2f ms = %.2f× — %s.\n", p99, fp99, p99/fp99, verdict(p99 <= 2*fp99 && res.Stale == 0))

	// Metadata load: many topics created through A, then a fourth broker
	// started cold, timed from process start to its first answer (it loads
	// every key from etcd before it listens).
	topics := s.o.ad.topics
	if err := admin.CreateTopicsWithConfigs(ctx, brokers[0].Addr, "b6load", topics, 1000); err != nil {
		return err
	}
	var loads []float64
	for range max(s.o.ad.coldStarts, 1) {
		b, err := start(4)
		if err != nil {
			return err
		}
		loads = append(loads, b.Ready.Sub(b.Started).Seconds()*1000)
		b.Stop() // leaves the cluster; the next start is a cold one again
	}
	sec.printf("\n%d topics (one partition, three config overrides each) created through A in CreateTopics requests of 1000; then a "+
		"fourth broker started %d time(s): process start → first answer on its listener.\n\n", topics, len(loads))
	sec.printf(pctHeader)
	sec.printf("%s", pctRow(fmt.Sprintf("start with %d topics in etcd (ms)", topics), loads, "%.0f"))
	_, _, _, mx := pct(loads)
	sec.printf("\nGoal < 2 s: slowest %.0f ms — %s.\n", mx, verdict(mx < 2000))
	s.json["B6etcd"] = map[string]any{"putWatch": floor, "propagation": res, "topics": topics, "loadMs": loads}
	return nil
}
