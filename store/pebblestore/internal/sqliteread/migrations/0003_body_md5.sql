-- The body's MD5 digest as the send computed it, so that a receive need
-- not compute it again. Rows written before this column have '': a receive
-- computes theirs.
ALTER TABLE messages ADD COLUMN body_md5 TEXT NOT NULL DEFAULT '';
