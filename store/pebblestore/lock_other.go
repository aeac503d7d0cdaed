//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package pebblestore

import (
	"io"
	"os"
)

// lockDir opens the lock file without locking it: this platform has no
// flock, so nothing stops a second process here.
func lockDir(path string) (io.Closer, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
