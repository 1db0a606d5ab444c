package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceFileLeavesNewContentAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "partition.metadata")
	for _, content := range []string{"first\n", "second, longer than the first\n", "3\n"} {
		if err := replaceFile(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("after replace: %q, %v; want %q", got, err, content)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("directory holds %d entries after replace, want only the file: %v", len(ents), ents)
		}
	}
}

func TestReplaceFileFailsWhenTheDirectoryIsMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	if err := replaceFile(filepath.Join(dir, "f"), []byte("x")); err == nil {
		t.Fatal("replace into a missing directory succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the missing directory appeared: %v", err)
	}
}

func TestReplaceFileKeepsTheOldContentWhenTheRenameFails(t *testing.T) {
	dir := t.TempDir()
	// A directory in the file's place: the temporary file is written, the
	// rename over a non-empty directory fails.
	p := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(p, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := replaceFile(p, []byte("x")); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		t.Fatalf("the old entry was disturbed: %v", err)
	}
}
