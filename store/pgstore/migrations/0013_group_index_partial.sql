-- A message without a group id (every message of a standard queue that is
-- not a fair queue) needs no entry in the index of groups, yet it got one
-- when it was sent and another at every lease: a lease rewrites the row's
-- state (leased, visible_at), so PostgreSQL adds an entry for the new
-- version to every index of the table. The index of groups now holds the
-- messages with a group id alone, and the index of states is split in
-- two, for the messages without a group id and for those with one, so
-- that a fair queue's messages without a group id are still found without
-- reading its grouped ones. Every message is in one index of states, as
-- before, and a message without a group id is in four indexes instead of
-- five: its send and each lease add four entries, not five (on a database
-- upgraded from an earlier schema, once the indexes kept below are gone).
--
-- A statement uses a partial index only where its conditions imply the
-- index's: those on messages without a group id say group_id = '', those
-- on grouped messages group_id > '' (the least text is the empty one, so
-- the two cover every message), and the counts of a queue read both.
--
-- This migration runs outside a transaction, each statement by itself:
-- CREATE INDEX CONCURRENTLY builds an index while sends, receives and
-- deletes go on (a plain CREATE INDEX, or a DROP INDEX, in a transaction
-- would hold them off until it committed: 16 s for a million messages of
-- 1 KiB, measured). Each new index is built under a name of its own, then
-- takes its name in one statement (a DO block: renames, no rebuild).
--
-- On a database an earlier Baton used (pgstore's migrate sets
-- baton.keep_previous_indexes then), the indexes the statements of the
-- release before use are kept: the
-- full index of groups as baton_messages_by_group_0012, the full index of
-- states (0012 as released) as baton_messages_by_state_0012, and
-- baton_messages_by_visible and baton_messages_leased (0011). Those
-- statements do not say group_id = '' or group_id > '', so the partial
-- indexes cannot serve them: without the old ones a node not yet
-- upgraded reads the whole table for each receive and count (seconds for
-- a million messages, past the retry bound), its abandoned scans pile up
-- in the database, and a concurrent DROP INDEX waits for them all. So a
-- send and a lease still add an entry to the kept indexes, until a later
-- migration drops them, once no node of the release before can be left.
-- A new database keeps none.
--
-- A run cut short is run again from the top: every statement leaves the
-- same schema when run again (an index built again under its new name
-- replaces the partial one of its name, while a full one is kept under
-- its old name), and an index whose build was cut short, left INVALID, is
-- dropped before (pgstore's migrate).
-- migrate: no transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_group_new ON baton_messages (queue_id, group_id, pos) WHERE group_id > '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_state_new ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id = '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_group_state ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id > '';
DO $$ BEGIN IF to_regclass('baton_messages_by_group_new') IS NOT NULL THEN IF (SELECT indpred IS NULL FROM pg_index WHERE indexrelid = to_regclass('baton_messages_by_group')) AND current_setting('baton.keep_previous_indexes', true) = 'on' THEN ALTER INDEX baton_messages_by_group RENAME TO baton_messages_by_group_0012; ELSE DROP INDEX IF EXISTS baton_messages_by_group; END IF; ALTER INDEX baton_messages_by_group_new RENAME TO baton_messages_by_group; END IF; END $$;
DO $$ BEGIN IF to_regclass('baton_messages_by_state_new') IS NOT NULL THEN IF (SELECT indpred IS NULL FROM pg_index WHERE indexrelid = to_regclass('baton_messages_by_state')) AND current_setting('baton.keep_previous_indexes', true) = 'on' THEN ALTER INDEX baton_messages_by_state RENAME TO baton_messages_by_state_0012; ELSE DROP INDEX IF EXISTS baton_messages_by_state; END IF; ALTER INDEX baton_messages_by_state_new RENAME TO baton_messages_by_state; END IF; END $$;
DO $$ BEGIN IF current_setting('baton.keep_previous_indexes', true) IS DISTINCT FROM 'on' THEN DROP INDEX IF EXISTS baton_messages_by_visible, baton_messages_leased; END IF; END $$;
