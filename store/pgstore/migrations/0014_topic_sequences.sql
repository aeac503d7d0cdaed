-- A FIFO topic's last SequenceNumber (TopicStore.TopicSequenceNext): every
-- server numbers a topic's publishes from this one count, so that they
-- increase across servers whose clocks differ. 0 until the first publish;
-- adding a column with a constant default rewrites no row.
ALTER TABLE baton_topics ADD COLUMN last_sequence numeric(20) NOT NULL DEFAULT 0;
