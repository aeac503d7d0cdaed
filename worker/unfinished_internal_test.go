package worker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/consumer"
)

// A shutdown whose deadline cut a phase short (Report.Err: releases,
// deletes or outcomes still under way when it came) cannot say it handed
// back all it held: it is unfinished, as one with a handler still running
// is. Receives it cancelled alone do not make it so.
func TestDeadlineCutShutdownIsUnfinished(t *testing.T) {
	err := unfinished(consumer.Report{Err: context.DeadlineExceeded})
	if !errors.Is(err, ErrUnfinishedShutdown) || !strings.Contains(err.Error(), "the deadline came first") {
		t.Errorf("unfinished(Err: deadline) = %v, want ErrUnfinishedShutdown saying the deadline came first", err)
	}
	if err := unfinished(consumer.Report{ReceivesCancelled: 2, ReleaseDelay: 1}); err != nil {
		t.Errorf("unfinished(receives cancelled) = %v, want nil", err)
	}
	if err := unfinished(consumer.Report{Released: 3, DeletesFlushed: 2, Cancelled: 1}); err != nil {
		t.Errorf("unfinished(all handed back) = %v, want nil", err)
	}
}
