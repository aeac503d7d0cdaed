-- Queues, their messages, FIFO deduplication keys, the names of deleted
-- queues, and settings every server shares. Names and ids are compared
-- byte-wise (COLLATE "C"), as the other stores compare them. Times are
-- always the engine's, passed in: nothing here reads the database's clock.

CREATE TABLE baton_queues (
    id          bigint PRIMARY KEY,  -- the engine's uint64, bit for bit
    account     text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    attributes  jsonb NOT NULL,
    tags        jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    modified_at timestamptz NOT NULL,
    purged_at   timestamptz,
    dedup_scope text NOT NULL,
    fifo        boolean NOT NULL,
    -- last_seq is the last FIFO sequence number given; a FIFO send holds
    -- this row's lock while it numbers and deduplicates.
    last_seq    bigint NOT NULL DEFAULT 0,
    UNIQUE (account, name)
);
CREATE INDEX baton_queues_by_name ON baton_queues (name, account);

CREATE TABLE baton_deleted_queues (
    account    text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    deleted_at timestamptz NOT NULL,
    PRIMARY KEY (account, name)
);

CREATE TABLE baton_messages (
    queue_id               bigint NOT NULL REFERENCES baton_queues (id) ON DELETE CASCADE,
    id                     text COLLATE "C" NOT NULL,
    -- pos orders messages as they arrived; within a FIFO queue it is also
    -- commit order, since FIFO sends and moves hold the queue row's lock. A
    -- move gives a message a new pos. Statements that act on rows they
    -- selected find them by pos, the only index that starts with it, so
    -- that no misestimate of a queue's size can turn the lookup into a scan
    -- of the queue.
    pos                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_id               text COLLATE "C" NOT NULL,
    body                   text NOT NULL,
    attributes             jsonb,
    trace_header           text NOT NULL,
    dedup_id               text NOT NULL,
    sequence_number        text NOT NULL,
    sender_id              text NOT NULL,
    sent_at                timestamptz NOT NULL,
    dead_letter_source_arn text NOT NULL,
    visible_at             timestamptz NOT NULL,
    leased                 boolean NOT NULL DEFAULT false,
    receive_count          integer NOT NULL DEFAULT 0,
    first_received_at      timestamptz,
    epoch                  bigint NOT NULL DEFAULT 0,
    leased_at              timestamptz,
    UNIQUE (queue_id, id)
);
-- Every receive and delete leaves a dead row version behind, and scans of a
-- queue wade through them until vacuum: vacuum this table after every few
-- thousand, unthrottled, rather than after a fifth of it changed.
ALTER TABLE baton_messages SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 5000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 0);
CREATE INDEX baton_messages_by_visible ON baton_messages (queue_id, visible_at, pos);
CREATE INDEX baton_messages_by_group ON baton_messages (queue_id, group_id, pos);
CREATE INDEX baton_messages_by_sent ON baton_messages (queue_id, sent_at);

CREATE TABLE baton_dedup (
    queue_id        bigint NOT NULL REFERENCES baton_queues (id) ON DELETE CASCADE,
    dedup_key       text COLLATE "C" NOT NULL,
    message_id      text NOT NULL,
    sequence_number text NOT NULL,
    accepted_at     timestamptz NOT NULL,
    PRIMARY KEY (queue_id, dedup_key)
);
CREATE INDEX baton_dedup_by_accepted ON baton_dedup (queue_id, accepted_at);

CREATE TABLE baton_settings (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);
