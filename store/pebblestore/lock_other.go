//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package pebblestore

import (
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// lockDir opens the lock file without locking it: this platform has no
// flock, so nothing stops a second process here.
func lockDir(path string) (io.Closer, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// sameFile reports whether a and b describe the same file: this platform
// cannot say, so it reports true and only a file's absence is seen.
func sameFile(a, b vfs.FileInfo) bool { return true }

// lockHeld reports whether err is a lock held by another open file: this
// platform takes no locks.
func lockHeld(err error) bool { return false }
