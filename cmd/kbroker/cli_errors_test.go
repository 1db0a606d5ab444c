package main

import (
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kbroker/internal/testbin"
)

// fakeServer listens on loopback and answers every connection with
// answer (after reading what the client sent first); it counts the
// connections it accepted.
type fakeServer struct {
	addr     string
	accepted atomic.Int32
}

func startFakeServer(t *testing.T, answer func(net.Conn)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &fakeServer{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(time.Minute))
				buf := make([]byte, 4096)
				if _, err := conn.Read(buf); err != nil {
					return
				}
				answer(conn)
			}()
		}
	}()
	return s
}

func reply(b string) func(net.Conn) { return func(c net.Conn) { c.Write([]byte(b)) } }

func TestTopicsRefuseCountsBelowOneAsKafkasTool(t *testing.T) {
	bs := startBroker(t, nil)
	for _, c := range []struct {
		flags   []string
		message string
	}{
		{[]string{"--partitions", "0"}, "The partitions must be greater than 0"},
		{[]string{"--partitions", "-1"}, "The partitions must be greater than 0"},
		{[]string{"--replication-factor", "0"}, "The replication factor must be between 1 and 32767 inclusive"},
		{[]string{"--replication-factor", "32768"}, "The replication factor must be between 1 and 32767 inclusive"},
	} {
		r := kb(t, args(bs, append([]string{"topics", "--create", "--topic", "t"}, c.flags...)...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "kbroker topics: "+c.message+"\n") {
			t.Fatalf("%v: exit %d, stderr %q; want exit 2 and %q", c.flags, r.code, r.stderr, c.message)
		}
	}
	r := kb(t, args(bs, "topics", "--alter", "--topic", "t", "--partitions", "0")...)
	if r.code != 2 || !strings.Contains(r.stderr, "The partitions must be greater than 0") {
		t.Fatalf("--alter --partitions 0: %+v", r)
	}
	wantOutput(t, ok(t, args(bs, "topics", "--list")...), "")
	// Left out, both still mean the broker's defaults.
	ok(t, args(bs, "topics", "--create", "--topic", "t")...)
}

func TestACLPrincipalWithoutTypeIsRefusedBeforeConnecting(t *testing.T) {
	srv := startFakeServer(t, func(net.Conn) {})
	for _, flag := range []string{"--allow-principal", "--deny-principal"} {
		r := kb(t, "acls", "--bootstrap-server", srv.addr, "--add", flag, "alice", "--operation", "Read", "--topic", "t")
		want := "kbroker acls: " + flag + ": expected a string in format principalType:principalName but got alice\n"
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Fatalf("%s alice: exit %d, stderr %q; want exit 2 and %q", flag, r.code, r.stderr, want)
		}
	}
	r := kb(t, "acls", "--bootstrap-server", srv.addr, "--list", "--principal", "alice")
	if r.code != 2 || !strings.Contains(r.stderr, "--principal: expected a string in format principalType:principalName but got alice") {
		t.Fatalf("--list --principal alice: %+v", r)
	}
	if n := srv.accepted.Load(); n != 0 {
		t.Fatalf("the refused commands opened %d connections", n)
	}
}

// oneDash is a flag listed as Go's flag package lists it, -name.
var oneDash = regexp.MustCompile(`(?m)^  -[a-z]`)

func TestFlagErrorsNameFlagsWithTwoDashes(t *testing.T) {
	names := slices.Sorted(maps.Keys(commands)) // every subcommand, those added later too
	for _, cmd := range names {
		r := kb(t, cmd, "--no-such-flag")
		if r.code != 2 || r.stderr != "kbroker "+cmd+": flag provided but not defined: --no-such-flag\nRun \"kbroker "+cmd+" --help\" for usage.\n" {
			t.Fatalf("%s --no-such-flag: %+v", cmd, r)
		}
		if r := kb(t, cmd, "--help"); r.code != 0 || oneDash.MatchString(r.stdout) || !strings.Contains(r.stdout, "\n  --") {
			t.Fatalf("%s --help lists flags with one dash: %+v", cmd, r)
		}
	}
	for _, c := range []struct {
		args    []string
		message string
	}{
		{[]string{"topics", "--partitions", "many"}, `invalid value "many" for flag --partitions: parse error`},
		{[]string{"topics", "--list", "--bootstrap-server"}, "flag needs an argument: --bootstrap-server"},
		{[]string{"acls", "--add=maybe"}, `invalid boolean value "maybe" for --add: parse error`},
		{[]string{"serve", "--config"}, "flag needs an argument: --config"},
	} {
		if r := kb(t, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.message) {
			t.Fatalf("%v: %+v, want exit 2 and %q", c.args, r, c.message)
		}
	}
}

// Failures printed among results start as returned errors do.
func TestEveryErrorLineStartsWithTheCommand(t *testing.T) {
	bs := startBroker(t, nil)
	for _, c := range []struct {
		args    []string
		message string
	}{
		{args(bs, "configs", "--describe", "--topic", "nope"), "kbroker configs: TOPIC nope: UNKNOWN_TOPIC_OR_PARTITION"},
		{args(bs, "users", "--describe", "--user", "nobody"), "kbroker users: "},
		{args(bs, "topics", "--delete", "--topic", "nope"), "kbroker topics: Topic 'nope' does not exist as expected"},
	} {
		r := kb(t, c.args...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, c.message) {
			t.Fatalf("%v: exit %d, stderr %q; want exit 1 and a line starting %q", c.args, r.code, r.stderr, c.message)
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
			if !strings.HasPrefix(line, "kbroker "+c.args[0]+": ") {
				t.Fatalf("%v: stderr line %q lacks the command's prefix", c.args, line)
			}
		}
	}
}

func TestServerThatIsNotKafkaFailsFast(t *testing.T) {
	if _, err := testbin.Kbroker(); err != nil { // built before the clock starts
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		answer func(net.Conn)
		reason string
	}{
		{"http", reply("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"), "it answered as an HTTP server"},
		{"framed garbage", reply("\x00\x00\x00\x08garbage!"), "its reply carries correlation ID"},
		{"unframed garbage", reply("hello\r\n"), "its reply starts with a size of"},
		{"tls alert", reply("\x15\x03\x03\x00\x02\x02\x46"), "it answered with a TLS alert"},
		{"closes", func(net.Conn) {}, "it closed the connection without answering"},
		{"closes mid-header", reply("\x00\x00"), "it closed the connection after 2 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startFakeServer(t, c.answer)
			start := time.Now()
			r := kb(t, "topics", "--bootstrap-server", srv.addr, "--list", "--timeout", "30s")
			took := time.Since(start)
			want := "kbroker topics: " + srv.addr + " does not speak the Kafka protocol: " + c.reason
			if r.code != 1 || !strings.HasPrefix(r.stderr, want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
			}
			if took > 10*time.Second {
				t.Fatalf("took %v to give up on a server that is not Kafka", took)
			}
		})
	}
}
