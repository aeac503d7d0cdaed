package engine

import "sort"

// RunningMoveTasks returns the handles of the move tasks running on e, for
// the tests of which server runs a task.
func RunningMoveTasks(e *Engine) []string {
	e.tasks.mu.Lock()
	defer e.tasks.mu.Unlock()
	var out []string
	for h, t := range e.tasks.byID {
		if t.Status == TaskRunning || t.Status == TaskCancelling {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}
