package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file in each log directory a running broker holds an
// exclusive lock on, as Kafka holds ".lock": two brokers writing the same
// segments would corrupt them, so the second must refuse to start.
const LockFile = ".lock"

// DirLocks are the locks a broker holds on its log directories.
type DirLocks struct{ files []*os.File }

// LockDirs takes the lock of every directory in dirs, creating them, or
// fails at once, without waiting, if another process holds one. The locks
// are advisory (flock) and go with the process, so a crashed broker leaves
// none behind; they are held until Unlock.
func LockDirs(dirs []string) (*DirLocks, error) {
	l := &DirLocks{}
	for _, dir := range dirs {
		f, err := lockDir(dir)
		if err != nil {
			l.Unlock()
			return nil, err
		}
		l.files = append(l.files, f)
	}
	return l, nil
}

func lockDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log.dirs: creating log directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log.dirs: log directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("log.dirs: log directory %s is in use by another process (%s is locked): another broker runs on it", dir, path)
		}
		return nil, fmt.Errorf("log.dirs: locking %s: %w", path, err)
	}
	return f, nil
}

// Unlock releases every lock. It is safe on nil and more than once.
func (l *DirLocks) Unlock() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close()) // closing the file releases its flock
	}
	l.files = nil
	return errors.Join(errs...)
}
