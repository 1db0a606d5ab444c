package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"kbroker/bench/stats"
)

// Loopback measures the physical floors on 127.0.0.1 in the same job as the
// brokers: single-stream TCP throughput with 1 MiB writes (what a fetch can
// at best approach) and the 64 B ping-pong round trip (what a produce round
// trip can at best approach). Spec.Duration is split between the two.
func Loopback(ctx context.Context, spec Spec, mark Mark) (Result, error) {
	mark(MarkStart)
	defer mark(MarkEnd)
	half := spec.Duration / 2
	bps, err := tcpStream(ctx, half)
	if err != nil {
		return Result{}, fmt.Errorf("tcp stream: %w", err)
	}
	rtt, n, err := tcpPingPong(ctx, half)
	if err != nil {
		return Result{}, fmt.Errorf("tcp ping-pong: %w", err)
	}
	return Result{StreamBytesPerSec: bps, RTTp50us: rtt, Records: int64(n), Seconds: spec.Duration.Seconds()}, nil
}

// pair returns both ends of a fresh loopback TCP connection.
func pair(ctx context.Context) (client, server net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var d net.Dialer
	client, err = d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	server = <-accepted
	if server == nil {
		client.Close()
		return nil, nil, errors.New("accept failed")
	}
	return client, server, nil
}

// tcpStream writes 1 MiB buffers for d and returns bytes per second as seen
// by the reader, from its first read to EOF.
func tcpStream(ctx context.Context, d time.Duration) (float64, error) {
	w, r, err := pair(ctx)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	type got struct {
		n   int64
		dur time.Duration
		err error
	}
	res := make(chan got, 1)
	go func() {
		buf := make([]byte, 1<<20)
		var n int64
		var start time.Time
		for {
			k, err := r.Read(buf)
			if n == 0 && k > 0 {
				start = time.Now()
			}
			n += int64(k)
			if err == io.EOF {
				res <- got{n, time.Since(start), nil}
				return
			}
			if err != nil {
				res <- got{err: err}
				return
			}
		}
	}()
	buf := make([]byte, 1<<20)
	for stop := time.Now().Add(d); time.Now().Before(stop) && ctx.Err() == nil; {
		if _, err := w.Write(buf); err != nil {
			w.Close()
			return 0, err
		}
	}
	w.Close()
	g := <-res
	if g.err != nil {
		return 0, g.err
	}
	return float64(g.n) / g.dur.Seconds(), nil
}

// tcpPingPong bounces 64 B back and forth for d and returns the median
// round trip in microseconds and the number of round trips.
func tcpPingPong(ctx context.Context, d time.Duration) (float64, int, error) {
	c, s, err := pair(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	go func() {
		defer s.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			if _, err := s.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64)
	samples := make([]float64, 0, 1<<18)
	for stop := time.Now().Add(d); ctx.Err() == nil; {
		t := time.Now()
		if !t.Before(stop) {
			break
		}
		if _, err := c.Write(buf); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, 0, err
		}
		samples = append(samples, float64(time.Since(t).Nanoseconds())/1e3)
	}
	return stats.Percentile(samples, 0.5), len(samples), nil
}
