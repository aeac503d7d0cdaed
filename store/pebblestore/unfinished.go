package pebblestore

import (
	"errors"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// UnfinishedBackupFile names, in the directory a backup is written into
// (dest+".partial"), the file that says which data directory's backup it
// is (its absolute path, and a newline), removed as the copy is complete. An unfinished copy is known by it:
// one of this store's that no backup of it is writing was left by a
// process that stopped in the middle of it, which held the data
// directory's lock, as this one now does.
const UnfinishedBackupFile = "BATON-UNFINISHED-BACKUP"

// owner is what UnfinishedBackupFile holds for this store's backups: its data
// directory, made absolute.
func (s *Store) owner() string {
	if abs, err := filepath.Abs(s.dir); err == nil {
		return abs
	}
	return s.dir
}

// writeOwner writes, synced, the file that marks tmp as an unfinished copy
// of this store's, and syncs tmp.
func (s *Store) writeOwner(tmp string) error {
	f, err := s.fs.Create(filepath.Join(tmp, UnfinishedBackupFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s.owner()+"\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(s.fs, tmp)
}

// readOwner returns the data directory whose unfinished copy dir is.
func readOwner(fs vfs.FS, dir string) (string, error) {
	f, err := fs.Open(filepath.Join(dir, UnfinishedBackupFile))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// RemoveUnfinishedBackups removes from dir the unfinished copies of this
// store's backups (DEST.partial) that no backup running writes: a process
// stopped in the middle of a backup (killed, crashed, or stopped before
// it ended) left them, and their hard links keep on the disk, for good,
// the tables the store compacted away. Each removal is logged. A
// directory named DEST.partial not marked as an unfinished copy of this
// data directory is left alone, and logged. Backup calls it for its
// destination's directory; the server, at its start, for --backup-dir.
func (s *Store) RemoveUnfinishedBackups(dir string) {
	s.removeUnfinished(filepath.Clean(dir), nil)
}

// removeUnfinished is RemoveUnfinishedBackups, run by the backup self (or
// nil), whose own copy is not yet begun.
func (s *Store) removeUnfinished(dir string, self *backupRun) {
	names, err := s.fs.List(dir)
	if err != nil {
		if !errors.Is(err, iofs.ErrNotExist) {
			s.logger.Error("pebblestore: cannot look for the unfinished copies of backups", "dir", dir, "err", err)
		}
		return
	}
	owner, removed := s.owner(), false
	for _, name := range names {
		path := filepath.Join(dir, name)
		if !strings.HasSuffix(name, partialSuffix) || s.backups.writing(path, self) != nil {
			continue
		}
		if st, err := s.fs.Stat(path); err != nil || !st.IsDir() {
			continue
		}
		of, err := readOwner(s.fs, path)
		switch {
		case err != nil:
			s.logger.Warn("pebblestore: left alone a directory named like an unfinished backup: it is not marked as one",
				"path", path, "why", err)
		case of != owner:
			s.logger.Warn("pebblestore: left alone the unfinished copy of another data directory's backup",
				"path", path, "of", of)
		default:
			if err := s.fs.RemoveAll(path); err != nil {
				s.logger.Error("pebblestore: cannot remove the unfinished copy of a backup a stopped process left; remove it by hand: its links keep on the disk tables the store no longer needs",
					"path", path, "err", err)
				continue
			}
			removed = true
			s.logger.Warn("pebblestore: removed the unfinished copy of a backup a stopped process left", "path", path)
		}
	}
	if !removed {
		return
	}
	if err := syncDir(s.fs, dir); err != nil {
		s.logger.Error("pebblestore: sync the directory of backups after removing unfinished copies", "dir", dir, "err", err)
	}
}
