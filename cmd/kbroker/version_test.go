package main

import (
	"regexp"
	"runtime"
	"testing"
)

func TestVersionFlagPrintsVersionAndCommit(t *testing.T) {
	line := regexp.MustCompile(`^kbroker \S+ commit \S+.* ` + regexp.QuoteMeta(runtime.Version()) + "\n$")
	for _, args := range [][]string{
		{"--version"},
		{"serve", "--version"},
		// Answered before anything else: no config is read, no broker starts.
		{"serve", "--config", "/nonexistent/server.properties", "--version"},
	} {
		r := kb(t, args...)
		if r.code != 0 || !line.MatchString(r.stdout) || r.stderr != "" {
			t.Errorf("kbroker %q: exit %d, stdout %q, stderr %q; want exit 0 and one version line", args, r.code, r.stdout, r.stderr)
		}
	}
}
