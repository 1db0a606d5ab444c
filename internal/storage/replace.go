package storage

import (
	"os"
	"path/filepath"
)

// replaceFile makes data the content of path so that a crash at any point leaves
// either the old file or the new one, never a mix: the data is written to
// path+".tmp" and synced, renamed over path, and the directory synced so that a
// power loss cannot undo the rename (POSIX makes a rename durable only once its
// directory is synced). The temporary file is removed on failure. Callers wrap
// the error with ErrStorage and what they were writing.
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := createFile(tmp, data, true); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDirErr(filepath.Dir(path))
}

// createFile creates (or truncates) path with data, synced if sync.
func createFile(path string, data []byte, sync bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDirErr syncs a directory, making the renames and creations in it durable.
func syncDirErr(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir is syncDirErr for the cleaner's swap steps, which have already
// committed by renaming: a failed directory sync there changes nothing they
// could undo, so it is ignored.
func syncDir(dir string) { _ = syncDirErr(dir) }
