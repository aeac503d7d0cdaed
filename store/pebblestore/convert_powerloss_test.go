package pebblestore_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton/store/pebblestore"
)

// sqliteOnDisk is the file system of a data directory being converted
// with its power cut: the log's side, which Baton writes, in a crashable
// file system in memory; the SQLite files, which SQLite itself reads and
// writes through the operating system, on the disk, where they are found
// (Stat) and removed. A cut keeps every SQLite file as it is on the disk
// at that moment, a removal included: the hardest case for the
// conversion, which must never remove the database before the log that
// replaces it is durable.
type sqliteOnDisk struct{ *vfs.MemFS }

func isSQLiteFile(name string) bool { return strings.HasPrefix(filepath.Base(name), "baton.db") }

func (fs sqliteOnDisk) Stat(name string) (vfs.FileInfo, error) {
	if isSQLiteFile(name) {
		return vfs.Default.Stat(name)
	}
	return fs.MemFS.Stat(name)
}

func (fs sqliteOnDisk) Remove(name string) error {
	if isSQLiteFile(name) {
		return vfs.Default.Remove(name)
	}
	return fs.MemFS.Remove(name)
}

// TestConvertPowerCutAtEachStep cuts the power after each step of the
// conversion of an SQLite data directory, keeping none or a random part
// of what was not synced; the store opened on what the cut left holds
// everything the SQLite store held, and nothing of it is left behind.
func TestConvertPowerCutAtEachStep(t *testing.T) {
	for _, at := range conversionSteps {
		for _, keep := range []int{0, 50, 100} {
			t.Run(strings.ReplaceAll(at, " ", "_")+"/keep"+strconv.Itoa(keep), func(t *testing.T) {
				dir := copyFixture(t)
				mem := vfs.NewCrashableMem()
				var crashed *vfs.MemFS
				cut := errors.New("power cut after " + at)
				restore := pebblestore.OnConversionStep(func(step string) error {
					if step != at || crashed != nil {
						return nil
					}
					crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(1, 2))})
					return cut
				})
				_, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{FS: sqliteOnDisk{mem}, Logger: textLogger(io.Discard)})
				restore()
				if !errors.Is(err, cut) {
					t.Fatalf("open cut after %s: got %v, want the cut", at, err)
				}
				s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{FS: sqliteOnDisk{crashed}, Logger: textLogger(io.Discard)})
				if err != nil {
					t.Fatalf("open after a power cut after %s: %v", at, err)
				}
				defer s.Close()
				checkFixture(t, s)
				for _, name := range []string{"baton.db", "baton.db-wal", "baton.db-shm"} {
					if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s after the conversion: %v, want it gone", name, err)
					}
				}
				if _, err := crashed.Stat(filepath.Join(dir, pebblestore.LogDir+".converting")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the converting log after the conversion: %v, want it gone", err)
				}
			})
		}
	}
}
