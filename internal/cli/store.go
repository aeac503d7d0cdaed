package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/pgstore"
)

// receiptKeyFile holds, in the data directory, the key that authenticates
// receipt handles, so that handles issued before a restart still work.
const receiptKeyFile = "receipt.key"

// receiptKeySize is the length of the receipt key in bytes.
const receiptKeySize = 32

// Names of the embedded store (package store/pebblestore) for --store:
// "sqlite" is its name from the releases when it kept its data in SQLite,
// and still opens it, converting such a data directory.
const (
	storeEmbedded       = "embedded"
	storeEmbeddedFormer = "sqlite"
)

// isEmbedded reports whether --store names the embedded store.
func isEmbedded(store string) bool {
	return store == storeEmbedded || store == storeEmbeddedFormer || store == ""
}

// openStore opens the store --store names and returns it with the receipt
// key the engine should use. "embedded" (the default) is the durable store
// in --data-dir, with --durability, and a key kept in the same directory;
// "memory" keeps nothing and leaves the engine a random key; a postgres://
// URL is a database several servers share, with the key kept in it. log
// gets the store's own messages.
func openStore(ctx context.Context, cfg ServeConfig, log *slog.Logger) (baton.Store, []byte, error) {
	switch {
	case cfg.Store == "memory":
		return memstore.New(), nil, nil
	case isEmbedded(cfg.Store):
		d, err := pebblestore.ParseDurability(cfg.Durability)
		if err != nil {
			return nil, nil, fmt.Errorf("--durability: %w", err)
		}
		// A data directory that held a log before this start holds its
		// receipt key too, unless it was lost.
		_, markErr := os.Stat(filepath.Join(cfg.DataDir, pebblestore.MarkFile))
		s, err := pebblestore.Open(ctx, cfg.DataDir, pebblestore.Options{Durability: d, DefaultRegion: cfg.Region, Logger: log})
		if errors.Is(err, pebblestore.ErrLocked) {
			return nil, nil, fmt.Errorf("%w: stop it, or give this one another --data-dir (or --store memory)", err)
		}
		if err != nil {
			return nil, nil, dataDirError(err) // names the directory and what is wrong with it
		}
		path := filepath.Join(cfg.DataDir, receiptKeyFile)
		key, made, err := receiptKey(path)
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		if made && markErr == nil {
			log.Warn("the receipt key was missing from a data directory that holds a log: made a new one; "+
				"receipt handles issued before no longer work (ReceiptHandleIsInvalid), and their messages are received again once their leases end",
				"path", path)
		}
		return s, key, nil
	}
	if isPostgresURL(cfg.Store) {
		// Every server on the database shares its receipt key.
		s, err := pgstore.Open(ctx, cfg.Store, pgstore.Options{Logger: log, DefaultRegion: cfg.Region})
		if err != nil {
			return nil, nil, err
		}
		key, err := s.ReceiptKey(ctx)
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return s, key, nil
	}
	return nil, nil, fmt.Errorf("--store %q: the stores are embedded, memory and postgres://…", storeName(cfg.Store))
}

// warnIgnoredStoreFlags logs a warning for each of the embedded store's
// settings given to a server of another store, which does nothing with
// them: an operator who set --backup-dir or --durability would otherwise
// believe the server backs up or commits as they asked.
func warnIgnoredStoreFlags(cfg ServeConfig, log *slog.Logger) {
	if isEmbedded(cfg.Store) {
		return
	}
	if cfg.BackupDir != "" {
		log.Warn("--backup-dir is ignored: only the embedded store takes backups (back a PostgreSQL store up with the database's own tools)",
			"store", storeName(cfg.Store), "backup_dir", cfg.BackupDir)
	}
	if cfg.Durability != "" && cfg.Durability != "full" {
		log.Warn("--durability is ignored: it sets the embedded store's commits only",
			"store", storeName(cfg.Store), "durability", cfg.Durability)
	}
}

// dataDirError is err, from opening the embedded store, with what to do
// when the data directory cannot be written: its owner or mode (the server
// runs as a user who may not write there), or a read-only file system.
func dataDirError(err error) error {
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: give --data-dir (BATON_DATA_DIR) a directory on a writable file system, or --store memory", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: baton serve runs as uid %d, which may not write there: make the data directory its own (chown, chmod), or give --data-dir (BATON_DATA_DIR) another", err, os.Getuid())
	}
	return err
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// storeName is --store as logs may show it: a PostgreSQL URL without its
// password, in the user part or in the query (password=, which pgx reads
// too).
func storeName(store string) string {
	u, err := url.Parse(store)
	if err != nil || !isPostgresURL(store) {
		return store
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", redactedPassword)
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// redactedPassword is what url.URL.Redacted writes for a password.
const redactedPassword = "xxxxx"

// maskedStore reports whether a PostgreSQL URL carries the password mask
// storeName writes instead of a password.
func maskedStore(store string) bool {
	u, err := url.Parse(store)
	if err != nil || !isPostgresURL(store) {
		return false
	}
	pw, set := u.User.Password()
	return set && pw == redactedPassword || u.Query().Get("password") == redactedPassword
}

// receiptKey reads the receipt key at path, or makes one and writes it
// there (readable by its owner only) on the first start, or when it was
// deleted; made says it did. The store's directory lock is held, so no
// other process races to create it. The file holds the key and a CRC-32C of it, so that
// a key damaged in place (the same length, other bytes) is refused, as a
// cut one is: a server that took it would serve on, and every receipt
// handle issued before would fail ReceiptHandleIsInvalid, their messages
// received again, with nothing in its log to say why. A key of an earlier
// release, without its checksum, is taken and written again with one.
func receiptKey(path string) (key []byte, made bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) == receiptKeySize:
		return b, false, writeReceiptKey(path, b)
	case err == nil && len(b) == receiptKeySize+receiptSumSize:
		key = b[:receiptKeySize]
		if binary.BigEndian.Uint32(b[receiptKeySize:]) != crc32.Checksum(key, castagnoli) {
			return nil, false, fmt.Errorf("receipt key %s is damaged (its checksum does not match): put it back from a backup "+
				"of this data directory, or delete it to make a new one (outstanding receipt handles then stop working)", path)
		}
		return key, false, nil
	case err == nil:
		return nil, false, fmt.Errorf("receipt key %s: %d bytes, want %d (delete it to make a new one; outstanding receipt handles then stop working)",
			path, len(b), receiptKeySize+receiptSumSize)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("receipt key: %w", err)
	}
	key = make([]byte, receiptKeySize)
	rand.Read(key)
	return key, true, writeReceiptKey(path, key)
}

// receiptSumSize is the length of the receipt key file's checksum.
const receiptSumSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeReceiptKey writes key and its checksum to path, atomically and
// durably: a new file, fsynced, renamed over the old, the directory
// fsynced.
func writeReceiptKey(path string, key []byte) error {
	b := binary.BigEndian.AppendUint32(slices.Clone(key), crc32.Checksum(key, castagnoli))
	tmp := path + ".tmp"
	if err := writeSynced(tmp, b); err != nil {
		return fmt.Errorf("receipt key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("receipt key: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// writeSynced writes b to a new file at path, mode 0600, and fsyncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory, so that a rename in it survives a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("receipt key: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("receipt key: sync %s: %w", dir, err)
	}
	return nil
}
