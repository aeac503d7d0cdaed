package server

import (
	"net/http"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// POST /admin/api/backup  {} → {"path", "seconds"}
//
// writes a point-in-time copy of the store while the server serves, into
// a new directory under the place the operator named when starting the
// server (`baton serve --backup-dir`), and answers its path once every file
// of it is synced. The copy holds everything acknowledged before the
// request arrived; a server started on it (--data-dir PATH) serves exactly
// that. The caller names no path: any key may call the admin API, and a
// backup holds every account's messages. One backup runs at a time; a
// second request waits for the first. A request cancelled (its client
// gone) gives its backup up: the copy is removed, and the failure logged.

// BackupJSON is the answer of the backup action.
type BackupJSON struct {
	// Path is the backup's directory, on the server's machine.
	Path string `json:"path"`
	// Seconds is how long the backup took.
	Seconds float64 `json:"seconds"`
}

func (s *Server) actionBackup(w http.ResponseWriter, r *http.Request) error {
	var in struct{}
	if err := decodeAction(r, &in); err != nil {
		return err
	}
	if s.backup == nil {
		return baton.Errorf(baton.ErrUnsupportedOperation,
			"This server takes no backups: start it with --backup-dir (the embedded store only; back a PostgreSQL store up with the database's own tools).")
	}
	s.backupMu.Lock()
	defer s.backupMu.Unlock()
	start := clock.System{}.Now()
	path, err := s.backup(r.Context())
	took := clock.System{}.Now().Sub(start)
	if err != nil {
		s.log.Error("backup failed", "err", err, "took", took.Round(time.Millisecond).String())
		return baton.Errorf(baton.ErrServiceUnavailable, "The backup failed: %v", err)
	}
	s.log.Info("backup written", "path", path, "took", took.Round(time.Millisecond).String())
	writeJSON(w, BackupJSON{Path: path, Seconds: took.Seconds()})
	return nil
}
