-- SNS topics and their subscriptions (baton.TopicStore). A topic's
-- subscriptions go with it; it subscribes an endpoint once. Attributes and tags are JSON objects of
-- strings, as queue tags are.
CREATE TABLE baton_topics (
    region     text        COLLATE "C" NOT NULL,
    account    text        COLLATE "C" NOT NULL,
    name       text        COLLATE "C" NOT NULL,
    attributes jsonb       NOT NULL,
    tags       jsonb       NOT NULL,
    created_at timestamptz,
    PRIMARY KEY (region, account, name)
);

CREATE TABLE baton_subscriptions (
    region     text        COLLATE "C" NOT NULL,
    account    text        COLLATE "C" NOT NULL,
    topic      text        COLLATE "C" NOT NULL,
    id         text        COLLATE "C" NOT NULL,
    protocol   text        NOT NULL,
    endpoint   text        NOT NULL,
    owner      text        NOT NULL,
    principal  text        NOT NULL,
    pending    boolean     NOT NULL,
    attributes jsonb       NOT NULL,
    created_at timestamptz,
    PRIMARY KEY (region, account, topic, id),
    UNIQUE (region, account, topic, protocol, endpoint),
    FOREIGN KEY (region, account, topic) REFERENCES baton_topics ON DELETE CASCADE
);

-- SNS's signing key, one for every node (TopicStore.SigningKey).
CREATE TABLE baton_sns_signing_key (
    id  integer PRIMARY KEY CHECK (id = 1),
    key bytea   NOT NULL
);
