package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// partialSuffix names the directory a backup is written into before it is
// renamed to its destination.
const partialSuffix = ".partial"

// Backup writes into dest, a directory that must not exist, a copy of the
// data directory as it stands during the call, which Open opens as any
// data directory: the log with every change committed before Backup was
// called (and perhaps some committed while it ran), and the directory's
// other files, the receipt key among them. The store serves meanwhile. The
// log's tables are hard links to the store's where the file system allows
// (tables never change once written), else copies. Every file of the copy
// is synced, and dest appears, by a rename, only once complete; a failed
// backup leaves dest+".partial", which the next backup to dest refuses
// until it is removed. Once a write of the log failed (walwatch.go) it
// refuses: the copy begins by flushing the log, which would wait for good
// behind the failed write.
func (s *Store) Backup(ctx context.Context, dest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.health.wal.refusal(); err != nil {
		return fmt.Errorf("pebblestore: backup to %s: %w", dest, err)
	}
	if err := s.backup(filepath.Clean(dest)); err != nil {
		return fmt.Errorf("pebblestore: backup to %s: %w", dest, err)
	}
	return nil
}

func (s *Store) backup(dest string) error {
	tmp := dest + partialSuffix
	for _, p := range []string{dest, tmp} {
		switch _, err := s.fs.Stat(p); {
		case err == nil:
			return fmt.Errorf("%s exists", p)
		case !errors.Is(err, iofs.ErrNotExist):
			return err
		}
	}
	if err := makeDir(s.fs, tmp); err != nil {
		return err
	}
	if err := s.checkpoint(filepath.Join(tmp, LogDir)); err != nil {
		return err
	}
	if err := s.copyOtherFiles(tmp); err != nil {
		return err
	}
	// A relaxed log's files skip fsync: sync the copy's through the file
	// system itself.
	if err := syncFiles(s.fs, filepath.Join(tmp, LogDir)); err != nil {
		return err
	}
	if err := syncDir(s.fs, tmp); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, dest); err != nil {
		return err
	}
	return syncDir(s.fs, filepath.Dir(dest))
}

// checkpoint writes into dir a copy of the log, flushed and synced first:
// it holds every commit made so far, whatever the durability. Pebble
// panics when the disk fails a sync of the copy's directory, made as it
// writes the marker naming the copy's MANIFEST or format (it holds none
// of its locks then): that is the backup's failure, returned as its
// error, not the server's. Any other panic goes on.
func (s *Store) checkpoint(dir string) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var perr *iofs.PathError
		if rerr, ok := r.(error); ok && errors.As(rerr, &perr) && filepath.Clean(perr.Path) == dir {
			err = fmt.Errorf("write the copy of the log: %w", rerr)
			return
		}
		panic(r)
	}()
	return s.db.Checkpoint(dir, pebble.WithFlushedWAL())
}

// copyOtherFiles copies into dir, synced, the regular files of the data
// directory but the lock: the receipt key, which the server keeps there.
func (s *Store) copyOtherFiles(dir string) error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == LockFile || name == LogDir {
			continue
		}
		path := filepath.Join(s.dir, name)
		st, err := s.fs.Stat(path)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if err := copyFile(s.fs, path, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst, a new file, and syncs it.
func copyFile(fs vfs.FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncFiles syncs every file in dir.
func syncFiles(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		f, err := fs.OpenReadWrite(filepath.Join(dir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", name, err)
		}
	}
	return nil
}
