package storage

import (
	"strings"
	"testing"
)

func TestSecondLockOfALogDirFailsAtOnceNamingTheDirectory(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	first, err := LockDirs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// flock conflicts between open files, so a second lock from this same
	// process stands for another broker's.
	_, err = LockDirs([]string{b})
	if err == nil {
		t.Fatal("a log directory already locked was locked again")
	}
	for _, want := range []string{"log.dirs", b, "is in use by another process"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDirs([]string{a, b})
	if err != nil {
		t.Fatalf("after Unlock the directories stay locked: %v", err)
	}
	again.Unlock()
}

func TestLockDirsReleasesWhatItTookWhenOneDirIsBusy(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	busy, err := LockDirs([]string{b})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Unlock()
	if _, err := LockDirs([]string{a, b}); err == nil {
		t.Fatal("locked a busy directory")
	}
	l, err := LockDirs([]string{a})
	if err != nil {
		t.Fatalf("a failed LockDirs kept the lock of %s: %v", a, err)
	}
	l.Unlock()
}
