package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports; reading it would need cgo
// (sysconf), which the harness avoids.
const clockTicks = 100

// CPUSeconds returns the user+system CPU time the process has used so far,
// over all its threads, with 10 ms resolution.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may contain spaces,
	// so count fields from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After ')' the fields start at field 3 (state); utime is field 14 and
	// stime field 15, i.e. indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return float64(ut+st) / clockTicks, nil
}

// PeakRSSBytes returns VmHWM, the process's peak resident set size. Because
// each run gets a fresh broker process, this is the run's peak.
func PeakRSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmHWM:") }

// RSSBytes returns VmRSS, the process's resident set size now.
func RSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmRSS:") }

// statusBytes reads one "<field> <n> kB" line of /proc/<pid>/status.
func statusBytes(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, field) {
			continue
		}
		fields := strings.Fields(line[len(field):])
		if len(fields) < 1 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
