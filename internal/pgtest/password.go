package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RequirePasswords creates role (LOGIN, with password) and makes the
// server ask every role but postgres for its password (scram-sha-256), as
// a production server does, so that a test can meet the refusal of a wrong
// one. It returns once the server refuses a wrong password. It rewrites
// the server's pg_hba.conf: use it on a cluster of the test's own
// (MustStart), never the shared one.
func (c *Cluster) RequirePasswords(ctx context.Context, role, password string) error {
	quoted := strings.ReplaceAll(password, "'", "''")
	if err := c.admin(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgx.Identifier{role}.Sanitize(), quoted)); err != nil {
		return err
	}
	hba := "local all postgres trust\nlocal all all scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(c.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := c.admin(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	// The server reads the file once it has taken the reload signal.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wrong := url.URL{Scheme: "postgres", User: url.UserPassword(role, "not-"+password), Path: "/postgres",
		RawQuery: url.Values{"host": {c.sockDir}, "port": {fmt.Sprint(port)}, "sslmode": {"disable"}}.Encode()}
	for {
		conn, err := pgx.Connect(ctx, wrong.String())
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "28P01" {
			return nil
		}
		if conn != nil {
			conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: the server still takes a wrong password after its reload: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
