package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machine describes the box, because the numbers mean nothing without it
// and ratios can move with core count and kernel.
type machine struct {
	NumCPU   int
	CPUModel string
	Kernel   string
	MemTotal string
	Go       string
	Tree     string // commit of the measured tree, so a result can be traced to code
	// GuestPages says whether a VM guest's freed pages stayed backed during
	// the job (guestpages.go); empty when the suite does not touch it.
	GuestPages string `json:",omitempty"`
}

func describeMachine() machine {
	m := machine{NumCPU: runtime.NumCPU(), Go: runtime.Version()}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	// The brokers are built by the go on PATH, which may differ from the
	// toolchain that built kbench.
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	return m
}

// treeState returns the short HEAD commit of the repository at root, marked
// when the working tree has uncommitted changes (the broker is built from
// the working tree, not from HEAD).
func treeState(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain").Output(); err == nil && len(st) > 0 {
		s += " + uncommitted changes"
	}
	return s
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
