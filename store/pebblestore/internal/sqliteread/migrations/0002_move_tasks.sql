-- Message move tasks, by handle. Times are Unix nanoseconds, as elsewhere.
CREATE TABLE move_tasks (
	handle          TEXT PRIMARY KEY,
	source_arn      TEXT NOT NULL,
	destination_arn TEXT NOT NULL,
	max_per_second  INTEGER NOT NULL,
	status          TEXT NOT NULL,
	moved           INTEGER NOT NULL,
	to_move         INTEGER NOT NULL,
	failure_reason  TEXT NOT NULL,
	started_at      INTEGER NOT NULL
) WITHOUT ROWID;
