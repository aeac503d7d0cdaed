package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// The lease report says which period its findings were judged on, so that
// baton doctor and the dashboard show that period's figures beside them:
// since the server started while the 15-minute window saw no lease, the
// window once it has.
func TestLeaseReportPeriod(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	u := srv.MustCreateQueue(t, "period", nil)
	period := func() string {
		t.Helper()
		code, _, body := fetch(t, "GET", srv.URL+"/admin/api/queues/period/leases", nil, "")
		var rep server.LeaseReportJSON
		if err := json.Unmarshal([]byte(body), &rep); code != http.StatusOK || err != nil {
			t.Fatalf("lease report: %d %v %.300s", code, err, body)
		}
		return rep.Period
	}
	if got := period(); got != "since_start" {
		t.Errorf("no lease yet: period %q, want since_start", got)
	}
	mustSend(t, srv.Client, u, "x")
	receiveOne(t, srv.Client, u, nil)
	if got := period(); got != "window" {
		t.Errorf("a lease begun: period %q, want window", got)
	}
}
