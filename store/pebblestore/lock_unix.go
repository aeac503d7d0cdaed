//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package pebblestore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// lockDir takes an exclusive lock on path, a file in the data directory, for
// as long as the returned closer stays open. The kernel drops the lock when
// the process dies, however it dies.
func lockDir(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return dirLock{f}, nil
}

// dirLock is a held lock file.
type dirLock struct{ f *os.File }

// Close releases the lock, then closes the file. Closing alone would not
// do: the lock belongs to the open file, which a child process this one
// is starting shares from its fork until its exec, so the directory would
// stay locked, to this process too, for as long as that takes.
func (l dirLock) Close() error {
	return errors.Join(syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN), l.f.Close())
}

// sameFile reports whether a and b describe the same file (device and
// inode); true when either cannot say (a file system of its own).
func sameFile(a, b vfs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// lockHeld reports whether err is a lock held by another open file.
func lockHeld(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }
