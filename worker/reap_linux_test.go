package worker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/worker"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// When the worker is PID 1 (a container without an init) or a subreaper,
// a command's orphans become its children: those of its process group are
// reaped, not left as zombies. The test makes its process a subreaper, as
// PID 1 is.
//
// Not parallel: being a subreaper is a property of the whole test process,
// so this test runs while no other test does.
func TestCommandOrphansReaped(t *testing.T) {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		skipnote.Skip(t, "a Linux that lets a process be a subreaper", "cannot become a subreaper: %v", e)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, "m0")
	cmd, dir := script(t, `cat > /dev/null; sleep 0.2 >/dev/null 2>&1 3>&- & echo $! > "$STATE/bg"; exit 0`)
	w.start(worker.Config{QueueURL: url, Target: &worker.CommandTarget{Command: cmd}})
	w.drivePrompt(time.Minute, step, w.empty(url))
	b, err := os.ReadFile(filepath.Join(dir, "bg"))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	checkFor(t, func() error {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return nil // reaped
		}
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		return errors.New("process " + pid + " is still there, state " + f[0] + ", parent " + f[1])
	})
}
