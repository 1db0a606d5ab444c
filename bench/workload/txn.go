package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"kbroker/bench/stats"
)

// The transactional workloads (issue 16): T1 transactional produce, T2
// read_committed fetch of a log with aborted transactions, T3 EndTxn
// commit latency. Every transaction is kgo's: BeginTransaction, records
// with the manual partitioner, EndTransaction, which flushes first.

// concurrentCounter counts kgo's backoffs on CONCURRENT_TRANSACTIONS: the
// coordinator still completing the previous transaction (writing its
// markers) when the next one adds a partition. kgo then waits 20 ms, so
// these explain a slow T1/T3 that EndTxn's own latency does not. kgo
// reports them only as a debug log line.
type concurrentCounter struct{ n atomic.Int64 }

func (c *concurrentCounter) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (c *concurrentCounter) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "CONCURRENT_TRANSACTIONS") {
		c.n.Add(1)
	}
}

// txnClient is a transactional producer of the benchmark's shape: linger
// 0, no compression, acks=all and idempotence (both required for
// transactions), records placed on the partition they name.
func txnClient(spec Spec, id string, backoffs *concurrentCounter) (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.WithLogger(backoffs),
		kgo.SeedBrokers(spec.Addr),
		kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(spec.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(bufferedRecords(spec.RecordBytes)),
	)
}

// runTxn is one transaction of n records of value, spread round-robin over
// partitions, ended with commit or abort. It returns when EndTxn has been
// answered, and how long EndTransaction took once the records were
// acknowledged (flush is not part of it).
func runTxn(ctx context.Context, cl *kgo.Client, value []byte, n int, partitions int32, commit bool) (endTxn time.Duration, err error) {
	if err := cl.BeginTransaction(); err != nil {
		return 0, err
	}
	var (
		mu       sync.Mutex
		firstErr error
	)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: value, Partition: int32(i) % partitions}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if firstErr != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return 0, firstErr
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	t := time.Now()
	if err := cl.EndTransaction(ctx, end); err != nil {
		return 0, err
	}
	return time.Since(t), nil
}

// warmTxnClient is T1's and T3's producer (transactional id id), after
// spec.Warmup of committed transactions of the case's shape, so that
// InitProducerId, the coordinator's first load and metadata fall outside
// the window; with the record value and partition count those
// transactions use.
func warmTxnClient(ctx context.Context, spec Spec, id string, backoffs *concurrentCounter) (cl *kgo.Client, value []byte, parts int32, err error) {
	if cl, err = txnClient(spec, id, backoffs); err != nil {
		return nil, nil, 0, err
	}
	value, parts = payload(spec.RecordBytes), max(spec.Partitions, 1)
	for warm := time.Now().Add(spec.Warmup); time.Now().Before(warm); {
		if _, err := runTxn(ctx, cl, value, spec.TxnRecords, parts, true); err != nil {
			closeBounded(cl)
			return nil, nil, 0, fmt.Errorf("warm-up transaction: %w", err)
		}
	}
	return cl, value, parts, nil
}

// TxnProduce is T1: one transactional producer commits transactions of
// TxnRecords records (round-robin over the topic's Partitions) back to
// back; records of committed transactions per second. The window closes at
// the first commit answered after Duration.
func TxnProduce(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	var backoffs concurrentCounter
	cl, value, parts, err := warmTxnClient(ctx, spec, "kbench-t1", &backoffs)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)
	var res Result
	before := backoffs.n.Load()
	start := time.Now()
	mark(MarkStart)
	for time.Since(start) < spec.Duration {
		if _, err := runTxn(ctx, cl, value, spec.TxnRecords, parts, true); err != nil {
			return Result{}, fmt.Errorf("transaction %d of the window: %w", res.Records/int64(spec.TxnRecords)+1, err)
		}
		res.Records += int64(spec.TxnRecords)
		res.Bytes += int64(spec.TxnRecords * spec.RecordBytes)
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	res.Txns = res.Records / int64(spec.TxnRecords)
	res.ConcurrentBackoffs = backoffs.n.Load() - before
	return res, nil
}

// TxnCommitLatency is T3: transactions of TxnRecords records (round-robin
// over Partitions) back to back on one producer; each sample is one
// EndTransaction(commit) after its records were acknowledged: the EndTxn
// round trip, which on both brokers answers once the commit is decided.
func TxnCommitLatency(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	var backoffs concurrentCounter
	cl, value, parts, err := warmTxnClient(ctx, spec, "kbench-t3", &backoffs)
	if err != nil {
		return Result{}, err
	}
	defer closeBounded(cl)
	var res Result
	samples := make([]float64, 0, int(spec.Duration.Seconds()*5000))
	before := backoffs.n.Load()
	start := time.Now()
	mark(MarkStart)
	for time.Since(start) < spec.Duration {
		lat, err := runTxn(ctx, cl, value, spec.TxnRecords, parts, true)
		if err != nil {
			return Result{}, fmt.Errorf("commit %d of the window: %w", res.Records+1, err)
		}
		samples = append(samples, float64(lat.Nanoseconds())/1e3)
		res.Records++
		res.Bytes += int64(spec.TxnRecords * spec.RecordBytes)
	}
	res.Seconds = time.Since(start).Seconds()
	mark(MarkEnd)
	res.Txns = res.Records
	res.ConcurrentBackoffs = backoffs.n.Load() - before
	p := stats.Percentiles(samples, 0.5, 0.99, 0.999)
	res.P50us, res.P99us, res.P999us = p[0], p[1], p[2]
	return res, nil
}

// txnPreloaders is how many transactional producers T2's preload runs at
// once, each its own transactional id: transactions interleave in the log,
// as those of several producers do, and the preload is not bound by one
// producer's commit round trips.
const txnPreloaders = 4

// preloadTxns writes PreloadBytes of records to partition 0 in
// transactions of TxnRecords records, every AbortEvery-th transaction of
// each producer aborted. It returns the records written and the committed
// ones.
func preloadTxns(ctx context.Context, spec Spec) (total, committed int64, took time.Duration, err error) {
	perTxn := int64(spec.TxnRecords)
	txns := spec.PreloadBytes / int64(spec.RecordBytes) / perTxn
	value := payload(spec.RecordBytes)
	var next atomic.Int64
	var totalN, committedN atomic.Int64
	errs := make(chan error, txnPreloaders)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range txnPreloaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := txnClient(spec, fmt.Sprintf("kbench-t2-%d", p), &concurrentCounter{})
			if err != nil {
				errs <- err
				return
			}
			defer closeBounded(cl)
			for {
				i := next.Add(1) - 1
				if i >= txns || ctx.Err() != nil {
					return
				}
				commit := spec.AbortEvery <= 0 || (i+1)%int64(spec.AbortEvery) != 0
				if _, err := runTxn(ctx, cl, value, spec.TxnRecords, 1, commit); err != nil {
					errs <- fmt.Errorf("transaction %d: %w", i, err)
					return
				}
				totalN.Add(perTxn)
				if commit {
					committedN.Add(perTxn)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, 0, err
	}
	return totalN.Load(), committedN.Load(), time.Since(start), nil
}

// readLog reads partition 0 from offset 0 with a fresh consumer at one
// isolation level until want records have arrived; the seconds it took.
func readLog(ctx context.Context, spec Spec, iso kgo.IsolationLevel, want int64) (float64, error) {
	maxBytes := spec.FetchMaxBytes
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(spec.Addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxBytes),
		kgo.BrokerMaxReadBytes(2*maxBytes),
	)
	if err != nil {
		return 0, err
	}
	defer closeBounded(cl)
	var got int64
	start := time.Now()
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("fetched %d of %d records: %w", got, want, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		got += int64(fs.NumRecords())
	}
	if got != want {
		return 0, fmt.Errorf("fetched %d records, %d expected", got, want)
	}
	return time.Since(start).Seconds(), nil
}

// TxnFetch is T2: preload (not measured) a log whose every AbortEvery-th
// transaction is aborted, read it whole once unmeasured, then with
// read_committed (only the committed records) and with read_uncommitted
// (every record, aborted ones included) — each pass with a fresh
// consumer; the read_committed pass is the measured window (broker CPU is
// read over it). Both rates are of the
// whole log's value bytes: each pass reads the same log to its end, and
// read_committed's work is to find and drop the aborted records.
func TxnFetch(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	total, committed, preload, err := preloadTxns(ctx, spec)
	if err != nil {
		return Result{}, fmt.Errorf("preload: %w", err)
	}
	if committed == 0 {
		return Result{}, errors.New("preload: no transaction committed")
	}
	var res Result
	res.PreloadSeconds = preload.Seconds()
	// An unmeasured first pass: the first reader of a fresh log pays for
	// what either broker does once (in a quick run, ~7× slower than the
	// passes after it), which would otherwise fall on whichever pass came
	// first.
	if _, err := readLog(ctx, spec, kgo.ReadUncommitted(), total); err != nil {
		return Result{}, fmt.Errorf("warm-up read: %w", err)
	}
	runtime.GC()
	mark(MarkStart)
	if res.Seconds, err = readLog(ctx, spec, kgo.ReadCommitted(), committed); err != nil {
		return Result{}, fmt.Errorf("read_committed: %w", err)
	}
	mark(MarkEnd)
	runtime.GC()
	if res.UncommittedSeconds, err = readLog(ctx, spec, kgo.ReadUncommitted(), total); err != nil {
		return Result{}, fmt.Errorf("read_uncommitted: %w", err)
	}
	res.Records = committed
	res.Bytes = total * int64(spec.RecordBytes)
	return res, nil
}
