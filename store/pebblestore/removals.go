package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A file Pebble no longer needs (a table compacted away, an old
// write-ahead log, MANIFEST or OPTIONS file) that the disk fails to remove
// stays on the disk: Pebble does not try again, and only the next start
// would remove it. It tells its listener of each failure but an OPTIONS
// file's, whose error it drops: diskFS.Remove tells of those. The store logs the first failure of a run,
// names the files in Ping while they stay, and tries again to remove
// them once none has failed for staleAfter (retryRemovals).

// failedRemoval is a file the disk failed to remove: when last, and why.
type failedRemoval struct {
	at  time.Time
	err error
}

// removalListener is the part of Pebble's event listener that tells h of
// the files it failed to remove.
func (h *health) removalListener(l *pebble.EventListener) {
	l.TableDeleted = func(info pebble.TableDeleteInfo) { h.removeFailed(info.Path, info.Err) }
	l.WALDeleted = func(info pebble.WALDeleteInfo) { h.removeFailed(info.Path, info.Err) }
	l.ManifestDeleted = func(info pebble.ManifestDeleteInfo) { h.removeFailed(info.Path, info.Err) }
	l.BlobFileDeleted = func(info pebble.BlobFileDeleteInfo) { h.removeFailed(info.Path, info.Err) }
}

// Remove removes a file; an obsolete OPTIONS file of the log that the
// disk fails to remove is told to health (removeFailed), as Pebble's
// listener tells of the other files.
func (fs diskFS) Remove(name string) error {
	err := fs.FS.Remove(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) && fs.optionsFile(name) {
		fs.h.removeFailed(name, err)
	}
	return err
}

// optionsFile reports whether name is one of the OPTIONS files of the log
// (OPTIONS-000012: Pebble writes one at each start, and removes the
// older ones).
func (fs diskFS) optionsFile(name string) bool {
	return strings.HasPrefix(filepath.Base(name), "OPTIONS-") && filepath.Dir(filepath.Clean(name)) == filepath.Clean(fs.h.dir)
}

// removeFailed is told of each removal of a file Pebble no longer needs,
// path, that failed with err (nil: it worked).
func (h *health) removeFailed(path string, err error) {
	if err == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.removals) == 0 {
		h.log.Error("pebblestore: the disk failed to remove a file of the log that is no longer needed; it stays on the disk, "+
			"and is removed again later", "file", path, "problem", diskProblem(err), "err", err.Error())
	}
	if h.removals == nil {
		h.removals = make(map[string]failedRemoval)
	}
	h.removals[path] = failedRemoval{at: h.clock.Now(), err: err}
}

// retryRemovals removes again the files whose removal failed, once none
// has failed for staleAfter.
func (h *health) retryRemovals() { h.retryRemovalsOlder(staleAfter) }

// retryRemovalsOlder removes again the files whose removal failed, if the
// last failure is at least age old.
func (h *health) retryRemovalsOlder(age time.Duration) {
	h.mu.Lock()
	var paths []string
	for path, r := range h.removals {
		if h.clock.Now().Sub(r.at) < age {
			h.mu.Unlock()
			return
		}
		paths = append(paths, path)
	}
	h.mu.Unlock()
	if len(paths) == 0 || h.fs == nil {
		return
	}
	for _, path := range paths {
		err := h.fs.Remove(path)
		h.mu.Lock()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			h.removals[path] = failedRemoval{at: h.clock.Now(), err: err}
		} else {
			delete(h.removals, path)
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	left := len(h.removals)
	h.mu.Unlock()
	if left == 0 {
		h.log.Warn("pebblestore: the files of the log the disk had failed to remove are removed", "files", len(paths))
	}
}

// removalProblem names the files whose removal failed, for Ping; "" if
// none. h.mu is held.
func (h *health) removalProblem() string {
	if len(h.removals) == 0 {
		return ""
	}
	var last failedRemoval
	var lastPath string
	for path, r := range h.removals {
		if r.at.After(last.at) || lastPath == "" {
			last, lastPath = r, path
		}
	}
	return fmt.Sprintf("%s: %d files of the log no longer needed could not be removed and take space on the disk (the last, %s: %v)",
		diskProblem(last.err), len(h.removals), lastPath, last.err)
}
