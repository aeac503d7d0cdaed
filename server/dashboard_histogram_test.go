package server_test

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// overTimeout counts the histogram's leases past the visibility timeout, as
// the dashboard colours and captions them.
func overTimeout(h server.HistogramJSON) uint64 {
	var n uint64
	for _, b := range h.Buckets {
		if b.GreaterThan >= float64(h.VisibilityTimeoutSeconds) {
			n += b.Count
		}
	}
	return n
}

// The visibility timeout is a bucket edge of the lease histogram, so a
// lease is drawn past it exactly when it lasted longer than the timeout: a
// lease that ended just in time is not drawn as an overrun, and one that
// came a little late is not drawn as in time.
func TestDashboardHistogramTimeoutEdge(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	for _, tt := range []struct {
		name     string
		vt       string
		lasted   time.Duration
		wantOver uint64
	}{
		{"in-time-5", "5", 4950 * time.Millisecond, 0},
		{"in-time-5b", "5", 4995 * time.Millisecond, 0},
		{"in-time-10", "10", 9990 * time.Millisecond, 0},
		{"late-30", "30", 30200 * time.Millisecond, 1},
		{"late-2", "2", 2005 * time.Millisecond, 1},
	} {
		url := srv.MustCreateQueue(t, tt.name, map[string]string{"VisibilityTimeout": tt.vt})
		mustSend(t, c, url, "x")
		m := receiveOne(t, c, url, nil)
		srv.Clock.Advance(tt.lasted)
		del(t, c, url, m)
		var h server.HistogramJSON
		getJSON(t, srv.URL+"/admin/api/queues/"+tt.name+"/histogram", &h)
		if got := overTimeout(h); got != tt.wantOver {
			t.Errorf("%s: a %v lease against a %s s timeout: %d leases drawn past the timeout, want %d (buckets %+v)",
				tt.name, tt.lasted, tt.vt, got, tt.wantOver, h.Buckets)
		}
		var late server.LateCompletionsJSON
		getJSON(t, srv.URL+"/admin/api/queues/"+tt.name+"/late-completions", &late)
		if uint64(len(late.LateCompletions)) != tt.wantOver {
			t.Errorf("%s: %d late completions, want %d", tt.name, len(late.LateCompletions), tt.wantOver)
		}
	}
}
