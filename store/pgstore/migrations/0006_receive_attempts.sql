-- FIFO receives made with a ReceiveRequestAttemptId, kept five minutes, so
-- that a client retrying one through any server gets the same messages.
CREATE TABLE baton_receive_attempts (
    queue_id   bigint      NOT NULL,
    attempt_id text        NOT NULL,
    leased_at  timestamptz NOT NULL,
    message_ids text[]     NOT NULL,
    epochs     bigint[]    NOT NULL,
    PRIMARY KEY (queue_id, attempt_id)
);
CREATE INDEX baton_receive_attempts_leased_at ON baton_receive_attempts (leased_at);
