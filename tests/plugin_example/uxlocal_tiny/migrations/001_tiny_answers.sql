-- 001_tiny_answers.sql
-- Why: the example suite keeps each sentence beside the judge's answer in a table of its own,
-- to show that a suite's tables ship with the suite (applied after uxlocal's core migrations).
-- Old rows: none; the table is new.
CREATE TABLE tiny_answers (
    run_id     VARCHAR NOT NULL,
    episode_id VARCHAR NOT NULL,
    sentence   VARCHAR,
    answer     VARCHAR
);
