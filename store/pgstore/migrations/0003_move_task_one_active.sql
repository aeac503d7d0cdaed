-- One active (RUNNING or CANCELLING) move task per source queue, kept by
-- the database so that two servers cannot start two. Servers before this
-- migration each checked only their own tasks: should a source have several
-- active ones, the newest stays active and the others fail.

UPDATE baton_move_tasks t
SET status = 'FAILED', failure_reason = 'Another task of the source queue was running.'
WHERE t.status IN ('RUNNING', 'CANCELLING')
  AND EXISTS (
    SELECT 1 FROM baton_move_tasks o
    WHERE o.source_arn = t.source_arn AND o.status IN ('RUNNING', 'CANCELLING')
      AND (coalesce(o.started_at, '-infinity'), o.handle) > (coalesce(t.started_at, '-infinity'), t.handle));

CREATE UNIQUE INDEX baton_move_tasks_one_active ON baton_move_tasks (source_arn)
    WHERE status IN ('RUNNING', 'CANCELLING');
