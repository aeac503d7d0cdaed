package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
)

// quietLog takes the stores' messages in the tests.
var quietLog = slog.New(slog.DiscardHandler)

func TestOpenStoreKeepsReceiptKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := ServeConfig{Store: "embedded", DataDir: dir}
	s, key, err := openStore(t.Context(), cfg, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != receiptKeySize {
		t.Errorf("receipt key: %d bytes, want %d", len(key), receiptKeySize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, receiptKeyFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("receipt key file mode %v, want 0600", fi.Mode().Perm())
	}

	s, again, err := openStore(t.Context(), cfg, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !bytes.Equal(again, key) {
		t.Errorf("receipt key after a restart differs: handles issued before it would stop working")
	}

	// A damaged key is refused, not silently replaced.
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStore(t.Context(), cfg, quietLog); err == nil || !strings.Contains(err.Error(), "receipt key") {
		t.Errorf("open with a 5-byte receipt key: got %v, want an error about the key", err)
	}
}

// A receipt key deleted from a data directory that holds a log (the way
// to make a new one, or a file lost) is made anew, and the start says so:
// every receipt handle issued before stops working. Before, it said
// nothing. A new data directory's first key is no news.
func TestOpenStoreSaysReceiptKeyMadeAnew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := ServeConfig{Store: "embedded", DataDir: dir}
	const says = "the receipt key was missing from a data directory that holds a log"
	for _, round := range []string{"first start", "key deleted"} {
		var logs bytes.Buffer
		s, _, err := openStore(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := strings.Contains(logs.String(), says); got != (round == "key deleted") {
			t.Errorf("%s: said %q: %t, want %t; logs:\n%s", round, says, got, !got, logs.String())
		}
		if err := os.Remove(filepath.Join(dir, receiptKeyFile)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenStoreChoices(t *testing.T) {
	t.Parallel()
	s, key, err := openStore(t.Context(), ServeConfig{Store: "memory", DataDir: filepath.Join(t.TempDir(), "unused")}, quietLog)
	if err != nil || key != nil {
		t.Fatalf("memory store: got key %x, error %v; want no key and no error", key, err)
	}
	s.Close()
	if _, _, err := openStore(t.Context(), ServeConfig{Store: "tape", DataDir: t.TempDir()}, quietLog); err == nil {
		t.Errorf("--store tape: got no error")
	}
	if _, _, err := openStore(t.Context(), ServeConfig{Store: "embedded", Durability: "fast", DataDir: t.TempDir()}, quietLog); err == nil ||
		!strings.Contains(err.Error(), "--durability") {
		t.Errorf("--durability fast: got %v, want an error naming --durability", err)
	}
	dir := t.TempDir()
	s, _, err = openStore(t.Context(), ServeConfig{Store: "sqlite", Durability: "relaxed", DataDir: dir}, quietLog)
	if err != nil {
		t.Fatalf("--durability relaxed: %v", err)
	}
	defer s.Close()
	// A second server on the same directory is refused, saying why; also
	// under the store's former name.
	if _, _, err := openStore(t.Context(), ServeConfig{Store: "sqlite", DataDir: dir}, quietLog); !errors.Is(err, pebblestore.ErrLocked) ||
		!strings.Contains(err.Error(), "in use by another baton process: stop it, or give this one another --data-dir (or --store memory)") {
		t.Errorf("open a data directory in use: got %v, want ErrLocked", err)
	}
}

// TestReceiptKeyDamagedInPlaceRefused: a receipt key of the right length
// whose bytes changed (zeroed in the middle by a bad disk) was taken as it
// was: the server served on and every receipt handle issued before failed
// ReceiptHandleIsInvalid, with no line to say why. The key now carries a
// checksum and such a key is refused, saying what to do; a key of an
// earlier release, without one, is taken and written again with it.
func TestReceiptKeyDamagedInPlaceRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, receiptKeyFile)
	old := []byte("0123456789abcdef0123456789abcdef")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	key, made, err := receiptKey(path)
	if err != nil || made || !bytes.Equal(key, old) {
		t.Fatalf("an earlier release's key: %q, made %v, %v; want it taken as it is", key, made, err)
	}
	again, _, err := receiptKey(path)
	if err != nil || !bytes.Equal(again, old) {
		t.Fatalf("the key written again with its checksum: %q, %v; want the same key", again, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 12; i < 20; i++ {
		b[i] = 0
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = receiptKey(path)
	if err == nil || !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), "backup") {
		t.Errorf("a key zeroed in the middle: %v; want it refused as damaged, naming the backup", err)
	}
}
