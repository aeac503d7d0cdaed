-- Each region is a namespace of queues of its own: a queue is named by its
-- region, account and name. Rows written before have '' here until the same
-- transaction gives them the region the store was opened with (migrate.go):
-- the one they were served in.
ALTER TABLE baton_queues ADD COLUMN region text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE baton_queues DROP CONSTRAINT baton_queues_account_name_key;
ALTER TABLE baton_queues ADD CONSTRAINT baton_queues_region_account_name_key UNIQUE (region, account, name);
DROP INDEX baton_queues_by_name;
CREATE INDEX baton_queues_by_name ON baton_queues (name, account, region);

ALTER TABLE baton_deleted_queues ADD COLUMN region text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE baton_deleted_queues DROP CONSTRAINT baton_deleted_queues_pkey;
ALTER TABLE baton_deleted_queues ADD PRIMARY KEY (region, account, name);
