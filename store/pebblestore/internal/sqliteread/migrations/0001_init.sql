-- Queues. Ids are the engine's uint64 ids stored as int64; times are Unix
-- nanoseconds with 0 for the zero time; attributes and tags are JSON.
CREATE TABLE queues (
	id          INTEGER PRIMARY KEY,
	account     TEXT NOT NULL,
	name        TEXT NOT NULL,
	attributes  TEXT NOT NULL,
	tags        TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	modified_at INTEGER NOT NULL,
	purged_at   INTEGER NOT NULL,
	dedup_scope TEXT NOT NULL,
	-- The SequenceNumber last given to a message of the queue.
	last_seq    TEXT NOT NULL DEFAULT ''
);

-- When each queue name was last deleted, for the 60-second rule.
CREATE TABLE deleted_queues (
	account    TEXT NOT NULL,
	name       TEXT NOT NULL,
	deleted_at INTEGER NOT NULL,
	PRIMARY KEY (account, name)
) WITHOUT ROWID;

-- Messages. pos orders each queue (send or move order) and is the row's
-- key: the store keeps each message's pos in memory, so no index on the
-- random ids slows inserts down. state is the message's metadata and lease
-- state in the store's binary encoding (see codec.go), one column so that
-- rebuilding the index at start-up reads few; the payload, read only on
-- receive, comes last.
CREATE TABLE messages (
	pos          INTEGER PRIMARY KEY,
	queue_id     INTEGER NOT NULL,
	id           TEXT NOT NULL,
	state        BLOB NOT NULL,
	trace_header TEXT NOT NULL,
	attributes   BLOB,
	body         TEXT NOT NULL
);
CREATE INDEX messages_queue ON messages (queue_id);

-- FIFO deduplication keys, each accepted at a message's send time.
CREATE TABLE dedup (
	queue_id   INTEGER NOT NULL,
	key        TEXT NOT NULL,
	message_id TEXT NOT NULL,
	seq        TEXT NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (queue_id, key)
) WITHOUT ROWID;
CREATE INDEX dedup_at ON dedup (queue_id, at);
