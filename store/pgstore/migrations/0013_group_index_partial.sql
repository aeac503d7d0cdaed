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
-- Like every migration this runs in one transaction: building the three
-- indexes holds off writes to the messages' table until it commits, a
-- moment for a table of a few thousand messages, longer for millions.
DROP INDEX baton_messages_by_group;
CREATE INDEX baton_messages_by_group ON baton_messages (queue_id, group_id, pos) WHERE group_id > '';
DROP INDEX baton_messages_by_state;
CREATE INDEX baton_messages_by_state ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id = '';
CREATE INDEX baton_messages_by_group_state ON baton_messages (queue_id, leased, visible_at, pos) WHERE group_id > '';
