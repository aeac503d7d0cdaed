package sqliteread

import (
	"context"
	"database/sql"
	"embed"

	"github.com/baton-sqs/baton/internal/migrate"
)

// migrations are the schema's versions: NNNN_name.sql, applied in order by
// internal/migrate, each in its own transaction, and recorded in
// schema_migrations.
//
//go:embed migrations/*.sql
var migrations embed.FS

// regionVersion is the migration that gives queues a region; rows written
// before it get defaultRegion in its transaction.
const regionVersion = 5

// migrateSchema brings the database to the latest schema. It refuses a database
// whose schema is newer than this binary knows. defaultRegion is the region
// of the queues of a database written before queues had one.
func migrateSchema(ctx context.Context, db *sql.DB, defaultRegion string) error {
	all, err := migrate.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	return migrate.Run(ctx, migrate.SQL(db), migrate.Dialect{
		Setup:   `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`,
		Current: `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`,
		Record: func(m migrate.Migration) (string, []any) {
			return `INSERT INTO schema_migrations (version) VALUES (?)`, []any{m.Version}
		},
		After: func(ctx context.Context, tx migrate.Tx, m migrate.Migration) error {
			if m.Version != regionVersion {
				return nil
			}
			for _, table := range []string{"queues", "deleted_queues"} {
				if err := tx.Exec(ctx, `UPDATE `+table+` SET region = ? WHERE region = ''`, defaultRegion); err != nil {
					return err
				}
			}
			return nil
		},
	}, all)
}
