package storage

import (
	"os"
	"testing"
)

func TestRecoveryCountsWhatOpenDidAfterACrash(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, testBatch{n: 2, valueSize: 100}.build(t))
	}
	crash(t, l)
	torn := []byte("half of a batch header")
	f, err := os.OpenFile(lastSegment(t, dir), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()

	l2, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	r := l2.Recovery()
	if !r.Unclean || r.SegmentsScanned < 1 || r.BytesTruncated != int64(len(torn)) || r.Took <= 0 {
		t.Fatalf("recovery after a crash = %+v, want unclean, at least one segment scanned, %d bytes truncated, a time", r, len(torn))
	}
	l2.Close()

	l3, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	if r := l3.Recovery(); r.Unclean || r.BytesTruncated != 0 {
		t.Fatalf("recovery after a clean close = %+v, want nothing to recover", r)
	}
}

func TestManagerSumsOnlyTheLogsACrashLeft(t *testing.T) {
	dirs := []string{t.TempDir()}
	m, err := OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	for _, topic := range []string{"crashed", "clean"} {
		l, err := m.Log(topic, 0, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch{n: 2, valueSize: 100}.build(t))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(dirs[0] + "/crashed-0/" + cleanShutdownFile)

	m, err = OpenManager(dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, topic := range []string{"crashed", "clean"} {
		if _, err := m.Log(topic, 0, id, smallConfig()); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Recovered(); got.Partitions != 1 || got.SegmentsScanned != 1 || got.BytesTruncated != 0 {
		t.Fatalf("Recovered() = %+v, want the one crashed partition, its one segment scanned, nothing truncated", got)
	}
}
