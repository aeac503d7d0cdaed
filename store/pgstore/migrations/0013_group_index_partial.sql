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
-- five: its send and each lease add four entries, not five.
--
-- A statement uses a partial index only where its conditions imply the
-- index's: those on messages without a group id say group_id = '', those
-- on grouped messages group_id > '' (the least text is the empty one, so
-- the two cover every message), and the counts of a queue read both.
--
-- This migration runs outside a transaction, each statement by itself:
-- CREATE INDEX CONCURRENTLY builds an index while sends, receives and
-- deletes go on (a plain CREATE INDEX, or a DROP INDEX, in a transaction
-- would hold them off until it committed: seconds for a million messages),
-- and DROP INDEX CONCURRENTLY drops one without holding them off. Each new
-- index is built under a name of its own, then the old one is dropped and
-- the new one takes its name. A run cut short is run again from the top:
-- every statement leaves the same schema when run again (a built index
-- already renamed is built once more under its own name, and replaces the
-- one of that name), and an index whose build was cut short, left INVALID,
-- is dropped before (pgstore's migrate). The old indexes, which the
-- statements of a server not yet upgraded use, are dropped last.
-- migrate: no transaction
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_group_new ON baton_messages (queue_id, group_id, pos) WHERE group_id > '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_state_new ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id = '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS baton_messages_by_group_state ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id > '';
DROP INDEX CONCURRENTLY IF EXISTS baton_messages_by_group;
ALTER INDEX baton_messages_by_group_new RENAME TO baton_messages_by_group;
DROP INDEX CONCURRENTLY IF EXISTS baton_messages_by_state;
ALTER INDEX baton_messages_by_state_new RENAME TO baton_messages_by_state;
DROP INDEX CONCURRENTLY IF EXISTS baton_messages_by_visible;
DROP INDEX CONCURRENTLY IF EXISTS baton_messages_leased;
