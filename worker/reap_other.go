//go:build !linux

package worker

// reapGroup does nothing here: a command's orphans are reaped by the worker
// on Linux only (see reap_linux.go), where containers run it as PID 1. Run
// it under an init elsewhere.
func (w *Worker) reapGroup(int) {}
