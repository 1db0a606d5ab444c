// Package testbin builds the kbroker binary once per test process, for
// tests that run the broker or the CLI as a separate process (kill -9,
// SIGTERM, exit codes), and removes it when the tests end. Broker runs
// "kbroker serve" over a directory that restarts reuse.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var dir string

// Run is a package's TestMain body: it makes the directory the binary is
// built into, runs the tests, removes the directory and returns the exit
// code for os.Exit.
func Run(m *testing.M) int {
	d, err := os.MkdirTemp("", "kbroker-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir = d
	defer os.RemoveAll(d)
	return m.Run()
}

// Kbroker builds ./cmd/kbroker on first use and returns its path. The
// package's TestMain must call Run.
var Kbroker = sync.OnceValues(func() (string, error) {
	if dir == "" {
		return "", fmt.Errorf("testbin.Kbroker: TestMain must call testbin.Run")
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "kbroker")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kbroker")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kbroker: %v\n%s", err, out)
	}
	return bin, nil
})
