-- The in-flight count (visible_at later than now, leased) read every hidden
-- row of the queue through baton_messages_by_visible, delayed ones
-- included: with 755,000 delayed messages each receive spent 0.6 s on it.
-- Only leased rows are in this index, so the count reads those alone.
CREATE INDEX baton_messages_leased ON baton_messages (queue_id, visible_at) WHERE leased;
