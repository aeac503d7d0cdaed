package pebblestore

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openGiveUp is how long opening the log may meet failing background
// writes before the store gives up. Pebble replays its write-ahead log into
// tables before it returns from opening, and tries a failed flush again for
// ever: on a full disk it would never return.
const openGiveUp = 5 * time.Second

// openWatched opens the log in dir as openLog does, on the file system of
// watchDisk, with h told of Pebble's events. It gives up, with an error
// that says what is wrong and what to do, if background writes fail for
// openGiveUp or ctx ends first. The closer is the disk-health checks', to
// be closed after the log.
func openWatched(ctx context.Context, dir string, opts Options, h *health) (*pebble.DB, io.Closer, error) {
	o := logOptions(opts)
	base := o.FS
	if base == nil {
		base = vfs.Default
	}
	var checks io.Closer
	o.FS, checks = watchDisk(base, h)
	h.fs, h.dir = base, dir
	l := pebble.TeeEventListener(*o.EventListener, h.listener())
	o.EventListener = &l
	var sched *pacer
	if !opts.pebbleScheduler {
		sched = newPacer(h)
		o.Experimental.CompactionScheduler = sched
	}

	type opened struct {
		db  *pebble.DB
		err error
	}
	done := make(chan opened, 1)
	go func() {
		db, err := openWith(dir, o, opts)
		if err != nil && sched != nil {
			// Pebble unregisters from the scheduler only as it closes:
			// an opening that failed once registered left the pacer
			// granting, for good, on the half-opened log.
			sched.Unregister()
		}
		done <- opened{db: db, err: err}
	}()
	// abandon leaves Pebble's opening to finish, or not, on its own; it
	// closes what it opened, if it ever does.
	abandon := func() {
		go func() {
			if r := <-done; r.db != nil {
				r.db.Close()
			}
			checks.Close()
		}()
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				checks.Close()
				return nil, nil, r.err
			}
			return r.db, checks, nil
		case <-ctx.Done():
			abandon()
			return nil, nil, fmt.Errorf("open the log: %w", ctx.Err())
		case <-tick.C:
			if err := h.openFailed(); err != nil {
				abandon()
				return nil, nil, err
			}
			if d, err := h.failingFor(); d >= openGiveUp {
				abandon()
				return nil, nil, fmt.Errorf("cannot open the log: replaying it must write a table, and writing failed for %v (%s; %s): %w",
					d.Round(time.Second), diskProblem(err), remedy(base, dir, err), err)
			}
		}
	}
}

// openFailed is, once a write of the log failed while it opens (and
// never returns: diskFS.logFailed), the error the opening ends with;
// else nil.
func (h *health) openFailed() error {
	err := h.wal.refusal()
	if err == nil {
		return nil
	}
	return fmt.Errorf("cannot open the log: a write of it failed (%s; %s): %w", diskProblem(err), remedy(h.fs, h.dir, err), err)
}

// remedy says what the operator can do about err, a failed write in dir.
func remedy(fs vfs.FS, dir string, err error) string {
	switch diskProblem(err) {
	case "disk full":
		free := ""
		if u, uerr := fs.GetDiskUsage(dir); uerr == nil {
			free = fmt.Sprintf(" (%d bytes free of %d)", u.AvailBytes, u.TotalBytes)
		}
		return "free space on the file system of " + dir + free + " and start again"
	case "out of file descriptors":
		return "raise the limit of open files (ulimit -n, LimitNOFILE=) and start again"
	}
	return "check the disk and its kernel log, then start again"
}
