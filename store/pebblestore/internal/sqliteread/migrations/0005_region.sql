-- Each region is a namespace of queues of its own: a queue is named by its
-- region, account and name. The queues and deleted names of a data
-- directory written before have '' here until the same transaction gives
-- them the region the store was opened with (migrate.go): the one they were
-- served in.
ALTER TABLE queues ADD COLUMN region TEXT NOT NULL DEFAULT '';

CREATE TABLE deleted_queues_region (
	region     TEXT NOT NULL,
	account    TEXT NOT NULL,
	name       TEXT NOT NULL,
	deleted_at INTEGER NOT NULL,
	PRIMARY KEY (region, account, name)
) WITHOUT ROWID;
INSERT INTO deleted_queues_region (region, account, name, deleted_at)
	SELECT '', account, name, deleted_at FROM deleted_queues;
DROP TABLE deleted_queues;
ALTER TABLE deleted_queues_region RENAME TO deleted_queues;
