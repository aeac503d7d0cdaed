package cli

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// A relative --backup-dir is answered as an absolute path; a store other
// than the embedded one takes no backups.
func TestBackupFuncPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	st, err := pebblestore.Open(t.Context(), "data", pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path, err := backupFunc(st, "backups")(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(dir, "backups"))
	got, _ := filepath.EvalSymlinks(filepath.Dir(path))
	if !filepath.IsAbs(path) || got != want {
		t.Errorf("backup at %q, want an absolute path in %s", path, want)
	}
	if backupFunc(memstore.New(), "backups") != nil || backupFunc(st, "") != nil {
		t.Error("backups offered by the memory store, or without a directory")
	}
}

// A server started with --backup-dir removes there, at once, the
// unfinished copy of a backup of its data directory that a server stopped
// in the middle of it left (its links keep on the disk tables the store
// no longer needs), and leaves the rest alone.
func TestBackupFuncRemovesUnfinished(t *testing.T) {
	dir := t.TempDir()
	data, backups := filepath.Join(dir, "data"), filepath.Join(dir, "backups")
	st, err := pebblestore.Open(t.Context(), data, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	left, other := filepath.Join(backups, "baton-backup-1.partial"), filepath.Join(backups, "mine.partial")
	for _, d := range []string{filepath.Join(left, "pebble"), other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(left, pebblestore.UnfinishedBackupFile), []byte(data+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if backupFunc(st, backups) == nil {
		t.Fatal("no backups")
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unfinished copy at the start: %v, want it removed", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a directory not marked as an unfinished copy: %v, want it left alone", err)
	}
}
