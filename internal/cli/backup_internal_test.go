package cli

import (
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
