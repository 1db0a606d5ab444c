package config

import (
	"fmt"
	"strconv"
	"strings"
)

// The two bounds that keep a broker with tens of thousands of partitions
// within an ordinary RLIMIT_NOFILE and a fixed heap (internal/storage,
// files.go). Apache Kafka has neither: it keeps every segment's files open
// and mmaps every index, leaving both to the operating system.
const (
	// MaxOpenLogFilesKey bounds the segment .log files held open at once;
	// -1: half of RLIMIT_NOFILE, at most 65536.
	MaxOpenLogFilesKey = "kbroker.log.max.open.files"
	// IndexCacheBytesKey bounds the heap that sealed segments' offset and
	// time indexes may hold.
	IndexCacheBytesKey = "kbroker.log.index.cache.bytes"
)

// MinOpenLogFiles is the smallest useful file bound: below a few dozen,
// concurrent readers of different segments would close each other's files
// between opening and reading them (storage's minOpenFiles).
const MinOpenLogFiles = 32

func storageBoundDefs() []*Def {
	return []*Def{
		{Name: MaxOpenLogFilesKey, Type: TypeInt, Default: "-1", Check: checkMaxOpenLogFiles, Mode: ReadOnly,
			Doc: fmt.Sprintf("Most segment .log files the broker holds open at once; beyond it the least recently used are closed and reopened when next read or written. -1: half of the process's RLIMIT_NOFILE (the other half is left to connections and the metadata store), at most 65536; otherwise at least %d. Index files are never held open. Kafka keeps every segment's files open and needs a descriptor limit above the number of segments; kbroker only. The bound is soft: files in use are not closed under their reader.", MinOpenLogFiles)},
		{Name: IndexCacheBytesKey, Type: TypeLong, Default: "134217728", Check: atLeast(0), Mode: ReadOnly,
			Doc: "Bytes of heap the offset and time indexes of sealed segments may hold, for all partitions together; beyond it the least recently used are dropped and read again from their files when next looked up (some 5 MiB per full 1 GiB segment, usually from the page cache). The active segment's index is always in memory and not counted. The default holds the indexes of about 25 GiB of log. Kafka mmaps every index instead; kbroker only."},
	}
}

func checkMaxOpenLogFiles(v string) error {
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if n != -1 && n < MinOpenLogFiles {
		return fmt.Errorf("Value must be -1 or at least %d", MinOpenLogFiles)
	}
	return nil
}

// MaxOpenLogFiles is kbroker.log.max.open.files; 0 for -1 (the storage's
// own default from RLIMIT_NOFILE).
func (b *Broker) MaxOpenLogFiles() int64 {
	n := b.storageBound(MaxOpenLogFilesKey)
	if n < 0 {
		return 0
	}
	return n
}

// IndexCacheBytes is kbroker.log.index.cache.bytes.
func (b *Broker) IndexCacheBytes() int64 { return b.storageBound(IndexCacheBytesKey) }

func (b *Broker) storageBound(key string) int64 {
	v, ok := b.Props[key]
	if !ok {
		v = Brokers.Lookup(key).Default
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64) // validated by NewBroker
	return n
}
