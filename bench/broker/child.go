package broker

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is a process we started and must not outlive.
type Child struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

var (
	liveMu sync.Mutex
	live   = map[*Child]struct{}{}
)

// StartChild runs name with args in its own process group. stdout is
// returned for the caller to read (a readiness line, a result); stderr goes
// to the given writer, which may be nil.
//
// The child gets its own process group so that a Ctrl-C on the terminal
// reaches only kbench, which then stops children in order rather than all of
// them racing to die. Pdeathsig is a backstop for when kbench itself is
// killed with SIGKILL and cannot clean up.
func StartChild(name string, args []string, env []string, stderr io.Writer) (*Child, io.ReadCloser, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Our own pipe rather than cmd.StdoutPipe: Wait closes a StdoutPipe as
	// soon as the process exits, which can drop the last line (the worker's
	// RESULT) before it is read. With our own pipe the reader sees every
	// byte and then EOF.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close() // the child holds its own copy
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &Child{Name: name, cmd: cmd, done: make(chan struct{})}
	liveMu.Lock()
	live[c] = struct{}{}
	liveMu.Unlock()
	go func() {
		c.err = cmd.Wait()
		liveMu.Lock()
		delete(live, c)
		liveMu.Unlock()
		close(c.done)
	}()
	return c, stdout, nil
}

// Pid is the child's process id, for /proc reads.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is the child's exit error; only valid after Done is closed.
func (c *Child) Err() error { return c.err }

// Wait waits for the child to exit on its own, up to ctx.
func (c *Child) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop asks the child's process group to terminate and kills it if it has
// not exited within grace. It returns once the child is gone, so a following
// run never shares the CPU with a broker that is still shutting down.
func (c *Child) Stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	pgid := -c.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	// SIGKILL cannot be refused; the bound only guards against a zombie
	// reaper that never returns, which would otherwise hang the job.
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
}

// KillAll kills every child still running. kbench calls it on every exit
// path (error, signal, normal end) so no broker is left listening.
func KillAll() {
	liveMu.Lock()
	cs := make([]*Child, 0, len(live))
	for c := range live {
		cs = append(cs, c)
	}
	liveMu.Unlock()
	for _, c := range cs {
		c.Stop(2 * time.Second)
	}
}
