package pgtest

// Released0012Indexes is what migration 0012 of the PostgreSQL store
// (store/pgstore/migrations) did to the indexes of messages when it was
// first written, before 0013 took them over to build them concurrently: a
// database an older Baton migrated to schema 12 has the full index of
// states and no longer the two it replaced. A test that brings a database
// to schema 12 as an older Baton left it runs this after 0012's file.
const Released0012Indexes = `
	CREATE INDEX baton_messages_by_state ON baton_messages (queue_id, leased, visible_at, pos);
	DROP INDEX baton_messages_by_visible;
	DROP INDEX baton_messages_leased`
