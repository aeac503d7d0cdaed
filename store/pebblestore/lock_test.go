package pebblestore_test

import (
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-sqs/baton/store/pebblestore"
)

// TestReopenWhileStartingProcesses: a store closed and opened again at
// once, while the process starts child processes (as a Go test, or a
// program embedding Baton, does), is not refused as locked. A child holds
// its parent's files from its fork to its exec, the lock file among them.
func TestReopenWhileStartingProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				// The test binary itself, running no test: a program
				// every platform that runs this test has.
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "GOFLAGS=")
				_ = cmd.Run()
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	for i := range 20 {
		s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{})
		if err != nil {
			t.Fatalf("open %d of a store just closed, children starting meanwhile: %v", i+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("close %d: %v", i+1, err)
		}
	}
}
