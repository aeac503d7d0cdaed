-- A purge marks a queue's messages dead rather than deleting them in its own
-- commit: the rows of the queue with pos up to purged_pos are gone for every
-- reader (the index never loads them) and a background reclaimer deletes
-- them a chunk at a time. Likewise the rows of a deleted queue's id.
ALTER TABLE queues ADD COLUMN purged_pos INTEGER NOT NULL DEFAULT 0;
