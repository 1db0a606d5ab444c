package storage

import "syscall"

// DiskSpace is the size of the volume holding dir and the bytes free to
// this process on it, as DescribeLogDirs v4+ reports them (KIP-827);
// -1, -1 when the system cannot say.
func DiskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
