package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
)

// `baton store check` on an intact data directory exits 0; on a damaged
// one, 1 with the damage; `baton store salvage` copies the intact one with
// its receipt key.
func TestCLIStoreCheckAndSalvage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "receipt.key"), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "no damage found") {
		t.Errorf("check of an intact directory: %+v", r)
	}
	to := filepath.Join(t.TempDir(), "copy")
	r = runCLI(t, cliEnv(t), nil, "store", "salvage", "--data-dir", dir, "--to", to)
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged into "+to+": 0 queues, 0 messages; 0 messages lost") {
		t.Errorf("salvage: %+v", r)
	}
	if key, err := os.ReadFile(filepath.Join(to, "receipt.key")); err != nil || len(key) != 32 {
		t.Errorf("salvaged receipt key: %q, %v", key, err)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "salvage", "--data-dir", dir, "--to", to)
	if r.code != 1 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("salvage into a used directory: %+v", r)
	}

	if err := os.WriteFile(filepath.Join(dir, pebblestore.MarkFile), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, cliEnv(t), nil, "store", "check", "--data-dir", dir)
	if r.code != 1 || !strings.Contains(r.stdout, "damaged: ") || !strings.Contains(r.stderr, "the data directory is damaged") {
		t.Errorf("check of a damaged directory: %+v", r)
	}
}
