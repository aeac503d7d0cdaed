package dashboard_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The classic incident, and then B's late delete with its old receipt: A's
// had deleted the message, so B's succeeds (as on SQS) and deletes
// nothing. The message page says so, not that B deleted the message.
func TestBrowserLateDeleteAlreadyDeleted(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "slow", map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, url, 1)
	a := receive(t, srv, url, 1)[0]
	at(srv, 31)
	b := receive(t, srv, url, 1)[0]
	at(srv, 90)
	deleteMessage(t, srv, url, a)
	at(srv, 121)
	deleteMessage(t, srv, url, b)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/slow/messages/"+*a.MessageId)
	waitFor(t, ctx, "the timeline", `document.querySelectorAll('#timeline .tl-lane').length === 2`)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#events tr[data-kind="late-delete"]')].map(r => r.textContent)`)
	if len(rows) != 2 || strings.Contains(rows[0], "already deleted") || !strings.Contains(rows[1], "the message was already deleted: it deleted nothing") {
		t.Errorf("late delete rows = %q", rows)
	}
	story := eval[string](t, ctx, `document.getElementById('story').textContent`)
	if !strings.Contains(story, "Lease 2's holder tried to delete the message 60s after that lease had expired") ||
		!strings.Contains(story, "the message was already deleted: it deleted nothing.") {
		t.Errorf("story = %q", story)
	}
}
