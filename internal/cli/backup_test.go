package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `baton backup` prints the directory of the copy, a data directory with
// the log and the receipt key; a server without --backup-dir, or with the
// memory store, says how to have backups, and the command fails.
func TestBackupCommand(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	data, backups := t.TempDir(), t.TempDir()
	p := startServe(t, env, "--data-dir", data, "--backup-dir", backups)
	r := runCLI(t, env, nil, "backup", "--endpoint", p.URL)
	if r.code != 0 {
		t.Fatalf("baton backup: %s", r)
	}
	dir := strings.TrimSpace(r.stdout)
	if filepath.Dir(dir) != backups || !strings.Contains(r.stderr, "--data-dir "+dir) {
		t.Errorf("baton backup: %s; want a directory in %s, and how to start on it", r, backups)
	}
	// 32 bytes of key and 4 of its checksum.
	key, err := os.ReadFile(filepath.Join(dir, "receipt.key"))
	want, _ := os.ReadFile(filepath.Join(data, "receipt.key"))
	if err != nil || len(key) != 36 || string(key) != string(want) {
		t.Errorf("the backup's receipt key: %d bytes, %v; want the server's", len(key), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pebble")); err != nil {
		t.Errorf("the backup's log: %v", err)
	}

	// With credentials, the request is signed, its body included.
	signed := t.TempDir()
	p = startServe(t, cliEnv(t, "BATON_SECRET_ACCESS_KEY=backup-secret"), "--data-dir", t.TempDir(), "--backup-dir", signed,
		"--access-key-id", "AKIDBACKUP")
	r = runCLI(t, cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDBACKUP", "AWS_SECRET_ACCESS_KEY=wrong"), nil, "backup", "--endpoint", p.URL)
	if entries, _ := os.ReadDir(signed); r.code != 1 || !strings.Contains(r.stderr, "SignatureDoesNotMatch") || len(entries) != 0 {
		t.Errorf("baton backup with a wrong secret: %s; %d backups written, want none", r, len(entries))
	}
	r = runCLI(t, cliEnv(t, "AWS_ACCESS_KEY_ID=AKIDBACKUP", "AWS_SECRET_ACCESS_KEY=backup-secret"), nil, "backup", "--endpoint", p.URL)
	if r.code != 0 || filepath.Dir(strings.TrimSpace(r.stdout)) != signed {
		t.Errorf("baton backup with the key: %s", r)
	}

	for _, args := range [][]string{{"--data-dir", t.TempDir()}, {"--store", "memory", "--backup-dir", t.TempDir()}} {
		p := startServe(t, env, args...)
		r := runCLI(t, env, nil, "backup", "--endpoint", p.URL)
		if r.code == 0 || !strings.Contains(r.stderr, "takes no backups") {
			t.Errorf("baton backup, server %v: %s; want a failure saying it takes no backups", args, r)
		}
	}
}
