package pebblestore

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Pebble's fatal error while salvage writes the new log (its disk failing
// a write of the write-ahead log or MANIFEST) stops the process, saying
// why on stderr; before, salvage's log was discarded, and it ended with
// exit status 1 without a word. Salvage's routine lines stay quiet.
func TestSalvageFatalSaysWhy(t *testing.T) {
	if os.Getenv("BATON_SALVAGE_FATAL") == "1" {
		l := logger{salvageLog()}
		l.Infof("routine: opened")
		l.Fatalf("MANIFEST sync failed: %v", syscall.EIO)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSalvageFatalSaysWhy$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_SALVAGE_FATAL=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the process ended with %v, want exit status 1", err)
	}
	if out := stderr.String(); !strings.Contains(out, "pebble: fatal: MANIFEST sync failed: input/output error") || strings.Contains(out, "routine") {
		t.Errorf("stderr: %q, want the fatal error and no routine line", out)
	}
}
