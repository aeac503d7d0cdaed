package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// POST /admin/api/backup runs the server's backup and answers where it
// went; a server without backups says how to have them, and a failed
// backup is a 503 naming the failure, logged.
func TestAdminBackup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		backup func(context.Context) (string, error)
		status int
		want   string
		log    string
	}{
		{"none", nil, 400, "start it with --backup-dir", ""},
		{"written", func(context.Context) (string, error) { return "/backups/b1", nil }, 200, `"path": "/backups/b1"`, "backup written"},
		{"failed", func(context.Context) (string, error) { return "", errors.New("no space left on device") }, 503,
			"The backup failed: no space left on device", "backup failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := engine.New(engine.Config{Store: memstore.New(), Clock: clock.NewFake(testutil.Epoch)})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			var logs strings.Builder
			srv := httptest.NewServer(server.New(server.Config{Engine: eng, Backup: tc.backup,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
			defer srv.Close()
			code, _, body := fetch(t, "POST", srv.URL+"/admin/api/backup", jsonHeader, "{}")
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("POST /admin/api/backup: %d %s; want %d with %q", code, body, tc.status, tc.want)
			}
			if code == 200 {
				var out server.BackupJSON
				if err := json.Unmarshal([]byte(body), &out); err != nil || out.Path != "/backups/b1" {
					t.Errorf("answer %s: %+v, %v", body, out, err)
				}
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q, want %q", logs.String(), tc.log)
			}
		})
	}
}

// A backup request whose client goes away (its request cancelled) has
// the backup's context end: the store gives the backup up, and the
// failure is logged.
func TestAdminBackupClientGone(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New(), Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	started, ended := make(chan struct{}), make(chan error, 1)
	backup := func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
			return "", ctx.Err()
		case <-time.After(time.Minute):
			ended <- nil
			return "/backups/b1", nil
		}
	}
	var logs logbuf.Buffer
	srv := httptest.NewServer(server.New(server.Config{Engine: eng, Backup: backup,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/admin/api/backup", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the backup did not begin")
	}
	cancel()
	if err := <-answered; !errors.Is(err, context.Canceled) {
		t.Errorf("the request cancelled: %v", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the backup whose client went away: its context ended with %v, want context.Canceled", err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !strings.Contains(logs.String(), "backup failed"); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "backup failed") || !strings.Contains(logs.String(), "context canceled") {
		t.Errorf("log %q, want the backup failed, its context cancelled", logs.String())
	}
}
