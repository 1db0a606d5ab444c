package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"kbroker/bench/workload"
)

// The load runs in a fresh child process per run ("kbench worker"), not in
// the orchestrating process: each run then starts with a cold client heap
// and no leftover goroutines or buffer pools from the previous side, so the
// second side of a pair gets no warmer client than the first. It also lets
// us read the load's CPU time from /proc exactly like the broker's.
//
// Protocol on stdout, one line each:
//
//	MARK start | MARK end   the measured window opens / closes
//	RESULT <json>           workload.Result, then exit 0
//	ERROR <text>            then exit 1
const (
	lineMark   = "MARK "
	lineResult = "RESULT "
	lineError  = "ERROR "
)

type workerArgs struct {
	Spec    workload.Spec
	Timeout time.Duration
}

func runWorker(arg string) int {
	var wa workerArgs
	if err := json.Unmarshal([]byte(arg), &wa); err != nil {
		fmt.Println(lineError + "bad worker spec: " + err.Error())
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), wa.Timeout)
	defer cancel()
	// os.Stdout is unbuffered, so each line reaches the orchestrator as it
	// is printed and the CPU snapshot is taken within the pipe latency.
	mark := func(ev string) { fmt.Println(lineMark + ev) }
	res, err := workload.Run(ctx, wa.Spec, mark)
	if err != nil {
		fmt.Println(lineError + oneLine(err.Error()))
		return 1
	}
	b, _ := json.Marshal(res)
	fmt.Println(lineResult + string(b))
	return 0
}

func oneLine(s string) string {
	out := []rune(s)
	for i, r := range out {
		if r == '\n' {
			out[i] = ' '
		}
	}
	return string(out)
}
