-- Message move tasks, by handle. started_at is the engine's time.

CREATE TABLE baton_move_tasks (
    handle          text COLLATE "C" PRIMARY KEY,
    source_arn      text COLLATE "C" NOT NULL,
    destination_arn text COLLATE "C" NOT NULL,
    max_per_second  integer NOT NULL,
    status          text NOT NULL,
    moved           bigint NOT NULL,
    to_move         bigint NOT NULL,
    failure_reason  text NOT NULL,
    started_at      timestamptz
);
