//go:build linux

package worker

import (
	"errors"
	"syscall"
	"time"
)

// reapWindow bounds how long reapGroup waits for a group's last processes
// to die after SIGKILL.
const reapWindow = time.Second

// reapGroup reaps the processes of process group pgid, an exited command's,
// that have become the worker's children: when the worker is PID 1 (a
// container without an init) or a subreaper, a command's orphans are
// reparented to it and nobody else would wait for them. Elsewhere they are
// init's, and the first wait finds none (ECHILD). It is called once the
// command has been reaped and its group sent SIGKILL, and polls for at most
// reapWindow.
//
// It never takes a process cmd.Wait waits for: every command runs in a
// group of its own, whose id is its pid, and the kernel does not give a
// new process the id of a group that still has members. Should the number
// be reused once the group is gone, the new process is a running command,
// registered in w.procs under procsMu with its start: each wait is made
// under that lock and skipped for such a pid.
func (w *Worker) reapGroup(pgid int) {
	for deadline := time.Now().Add(reapWindow); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for {
			pid, err := w.reapOne(pgid)
			if errors.Is(err, syscall.EINTR) || err == nil && pid > 0 {
				continue // reaped one, or interrupted: look again
			}
			if err != nil {
				return // ECHILD: none of the group is the worker's child
			}
			break // some left, none exited yet
		}
	}
}

// reapOne reaps one exited child of group pgid, unless pgid is a running
// command's pid; it returns the pid reaped, or 0 if none had exited.
func (w *Worker) reapOne(pgid int) (int, error) {
	w.procsMu.Lock()
	defer w.procsMu.Unlock()
	if _, running := w.procs[pgid]; running {
		return 0, syscall.ECHILD
	}
	var ws syscall.WaitStatus
	return syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
}
