-- 003_generations_unkeyed.sql
-- Why: the PRIMARY KEY on generations.request_hash kept an ART index in memory, ~120 bytes per
-- 64-character hash (120 MB at a million verdicts, growing with the job), and never served the
-- cache's lookups (DuckDB answers `request_hash IN (...)` with a scan and a semi join).
-- Old rows: copied as they are (the key made them unique); the columns, order and NOT NULLs stay.
-- One row per hash is now kept by the store writer (uxlocal/store/writer.py, store/known_hashes.py).
CREATE TABLE generations_unkeyed (
    request_hash      VARCHAR NOT NULL,     -- sha256(model identity, prompt, sampling, constraint, lora)
    model_identity    VARCHAR NOT NULL,
    lora              VARCHAR,
    prompt            VARCHAR,
    sampling          JSON,
    constraint_spec   JSON,
    text              VARCHAR,
    parsed            JSON,
    valid             BOOLEAN,
    error             VARCHAR,
    label_probs       JSON,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_ms        DOUBLE,
    finish_reason     VARCHAR,
    created_at        TIMESTAMPTZ
);
INSERT INTO generations_unkeyed SELECT * FROM generations;
DROP TABLE generations;
ALTER TABLE generations_unkeyed RENAME TO generations;
