-- A row per standard-queue send committed in the last few minutes, named by
-- its first message's id: a send run again after its commit's answer was
-- lost finds its token here even when its messages were received and
-- deleted in between, and knows the run before committed (send.go).
CREATE TABLE baton_send_tokens (
    token   text        COLLATE "C" PRIMARY KEY,
    sent_at timestamptz NOT NULL
);
CREATE INDEX baton_send_tokens_sent_at ON baton_send_tokens (sent_at);
