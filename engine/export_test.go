package engine

import "sort"

// SetInFlightLimit lowers e's in-flight limit, which a test could not
// otherwise reach without leasing 120,000 messages. Before any receive.
func SetInFlightLimit(e *Engine, n int) { e.inFlightLimit = n }

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

// RoomCountWaiters is how many receives of the queue wait for another's
// in-flight count to end.
func RoomCountWaiters(e *Engine, queueID uint64) int { return e.room.waiters(queueID) }

// NextVisibleWaiters is how many long polls of the queue wait for another's
// read of when its next hidden message becomes visible.
func NextVisibleWaiters(e *Engine, queueID uint64) int { return e.nextVisibleWaiters(queueID) }
