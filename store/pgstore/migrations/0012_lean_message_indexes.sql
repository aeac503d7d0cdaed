-- Every lease rewrites its message's row, changing visible_at and leased,
-- so PostgreSQL adds an entry for the new version to every index of the
-- table; a send adds one to every index too. Two changes make a message's
-- life touch fewer index entries:
--
-- One index of message states, (queue_id, leased, visible_at, pos), takes
-- the place of baton_messages_by_visible (queue_id, visible_at, pos) and of
-- baton_messages_leased (queue_id, visible_at) WHERE leased: a lease then
-- adds five index entries instead of six. A receive reads the messages
-- never leased and those whose lease ended as two ranges of it, the
-- in-flight and the delayed counts one range each. Migration 0013 builds
-- it, split in two, without holding off writes (CREATE INDEX
-- CONCURRENTLY cannot run in this migration's transaction), and keeps the
-- two old ones for the servers not yet upgraded.
--
-- The messages' queue_id no longer references baton_queues: the foreign
-- key ran a query and locked the queue's row once per message stored.
-- Instead a standard send locks the rows of its queues once per statement
-- (baton_lock_queues), a FIFO send and a move lock their queue's row as
-- before, and deleting a queue deletes its messages in the same
-- transaction (pgstore's QueueDelete): no message outlives its queue, and
-- none is stored into a queue being deleted.
ALTER TABLE baton_messages DROP CONSTRAINT baton_messages_queue_id_fkey;

-- baton_lock_queues locks the rows of the queues ids (distinct) against
-- deletion until the transaction ends, or raises foreign_key_violation
-- (23503), as the foreign key did, when one does not exist.
CREATE FUNCTION baton_lock_queues(ids bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT count(*) FROM (SELECT FROM baton_queues WHERE id = ANY (ids) FOR KEY SHARE) l) <> cardinality(ids) THEN
        RAISE EXCEPTION 'a queue of % does not exist', ids USING ERRCODE = 'foreign_key_violation';
    END IF;
END
$$;
