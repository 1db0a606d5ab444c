package storage

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"

	"kbroker/internal/record"
)

// Zero-copy reads. A fetch on a plaintext listener sends record batches
// from the segment file to the socket with sendfile, so the read returns
// where the batches are (a FileRange) instead of reading them. The range
// holds nothing until the response is written: Pin then gives the sender a
// descriptor of its own (a dup of the segment's), which keeps the file's
// data reachable even if retention deletes the segment, the cleaner
// replaces it or the file cache closes its descriptor meanwhile; Linux
// frees an unlinked file's blocks only once its last descriptor closes.
// Pinning does not hold the segment's fmu beyond the dup: a send to a slow
// consumer takes as long as the consumer does, and a reader lock held that
// long would stall retention and, behind its waiting close, every other
// reader and the appender.
//
// Descriptors pinned for sends are outside the open-file budget
// (files.go): they are bounded by the partitions being sent at once, and
// each lives for one send.

// FileRangeMin is the smallest read returned as a file range: below it,
// dup, sendfile and close (three system calls, and a TCP segment of its
// own for the framing before it) cost more than copying the bytes.
const FileRangeMin = 16 << 10

// maxHeaderWalk bounds how many batch headers a file read reads to find
// where its whole batches end; past it (tiny batches and an unloaded
// index) reading the bytes is cheaper, and the read does that instead.
const maxHeaderWalk = 64

// FileRange is whole record batches left in a segment file: n bytes at
// pos of seg's .log.
type FileRange struct {
	seg *segment
	pos int64
	n   int64
}

// Len is the number of bytes in the range (0: none).
func (r FileRange) Len() int { return int(r.n) }

// Pin returns a descriptor of the range's file of its own and the range's
// offset in it, for sending the range; the caller closes the file. It
// fails if the segment was closed (deleted by retention, replaced by the
// cleaner, its log closed) since the read.
func (r FileRange) Pin() (*os.File, int64, error) {
	if r.seg == nil {
		return nil, 0, errors.New("empty file range")
	}
	f, err := r.seg.acquire()
	if err != nil {
		return nil, 0, err
	}
	defer r.seg.release()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var nfd uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		nfd, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, 0, err
	}
	if errno != 0 {
		return nil, 0, fmt.Errorf("%w: pinning %s.log: %v", ErrStorage, r.seg.path, errno)
	}
	return os.NewFile(nfd, r.seg.path+".log"), r.pos, nil
}

// wholeBatchEnd finds where the whole batches of [pos, end) end, first
// being the (whole) batch at pos, without reading them: it skips ahead
// with the offset index, to the second-to-last entry at or before end (the
// batch there ends by the last entry's position, so it is whole), and
// reads headers from there. last is the last offset of the last whole
// batch. ok is false when reading the bytes is the better way: too many
// headers to walk, or an index that points somewhere no batch starts.
func (s *segment) wholeBatchEnd(pos, end, lim int64, first record.BatchHeader) (wend, last int64, ok bool, err error) {
	p, last := pos+first.Size, first.LastOffset
	check := int64(-1) // the last offset the index says the batch at p has
	s.imu.RLock()
	j := sort.Search(len(s.off), func(i int) bool { return int64(s.off[i].pos) > end })
	if j >= 2 && int64(s.off[j-2].pos) > p {
		p, check = int64(s.off[j-2].pos), s.base+int64(s.off[j-2].rel)
	}
	s.imu.RUnlock()
	for steps := 0; end-p >= record.BatchHeaderSize; steps++ {
		if steps == maxHeaderWalk {
			return 0, 0, false, nil
		}
		h, err := s.readHeader(p, lim)
		if errors.Is(err, errSegmentGone) {
			return 0, 0, false, err
		}
		if err != nil || (check >= 0 && h.LastOffset != check) {
			return 0, 0, false, nil // a stale index
		}
		check = -1
		if p+h.Size > end {
			break
		}
		p, last = p+h.Size, h.LastOffset
	}
	return p, last, true, nil
}
