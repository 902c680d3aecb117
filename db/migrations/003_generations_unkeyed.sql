-- 003_generations_unkeyed.sql
-- Why: the PRIMARY KEY on generations.request_hash kept an ART index in memory, ~120 bytes per
-- 64-character hash (120 MB at a million verdicts, growing with the job), and never served the
-- cache's lookups (DuckDB answers `request_hash IN (...)` with a scan and a semi join).
-- Old rows: copied as they are (the key made them unique); columns, order and NOT NULLs stay.
-- One row per hash is now kept by the store writer (uxlocal/store/writer.py, store/known_hashes.py).
CREATE TABLE generations_unkeyed AS SELECT * FROM generations;  -- same columns, types and order
ALTER TABLE generations_unkeyed ALTER COLUMN request_hash SET NOT NULL;
ALTER TABLE generations_unkeyed ALTER COLUMN model_identity SET NOT NULL;
DROP TABLE generations;
ALTER TABLE generations_unkeyed RENAME TO generations;
