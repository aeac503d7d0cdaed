-- FIFO topics' publish records, kept for deduplication
-- (TopicStore.TopicDedupPut): what a publish was answered, under its
-- deduplication key. A topic's records go with it; expired ones are
-- deleted by the next record of their topic.
CREATE TABLE baton_topic_publishes (
    region          text        COLLATE "C" NOT NULL,
    account         text        COLLATE "C" NOT NULL,
    topic           text        COLLATE "C" NOT NULL,
    key             text        COLLATE "C" NOT NULL,
    message_id      text        NOT NULL,
    sequence_number text        NOT NULL,
    at              timestamptz NOT NULL,
    PRIMARY KEY (region, account, topic, key),
    FOREIGN KEY (region, account, topic) REFERENCES baton_topics ON DELETE CASCADE
);

CREATE INDEX baton_topic_publishes_at ON baton_topic_publishes (region, account, topic, at);
