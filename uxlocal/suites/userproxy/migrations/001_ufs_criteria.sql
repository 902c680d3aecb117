-- 001_ufs_criteria.sql (suite userproxy)
-- Why: UserProxyBench grades every trajectory against criteria written once per task and then
-- frozen, so that runs graded weeks apart (and trajectories ingested from tau2 files) share them.
-- These tables belong to the suite, so they come with it (issue 45): until then core migration
-- 002_ufs_criteria.sql created them.
-- Old rows: none move. A store that applied the old core 002 has both tables already; IF NOT EXISTS
-- leaves them as they are, so old and new stores end with the same schema.

-- One row per (criteria set, task): where the task's criteria came from.
CREATE TABLE IF NOT EXISTS ufs_criteria_tasks (
    criteria_set           VARCHAR NOT NULL,   -- a name; a set is frozen once a task is written into it
    domain                 VARCHAR NOT NULL,
    task_id                VARCHAR NOT NULL,
    blueprint_sha256       VARCHAR NOT NULL,   -- scenario fields + contract + user tools they were written from
    source                 VARCHAR NOT NULL,   -- writer | file
    source_file            VARCHAR,            -- the JSONL file, for source = 'file'
    writer_model           VARCHAR,
    writer_identity        VARCHAR,
    writer_prompt_sha256   VARCHAR,
    writer_request_hash    VARCHAR,            -- the generation the criteria were parsed from
    verifier_model         VARCHAR,
    verifier_identity      VARCHAR,
    verifier_prompt_sha256 VARCHAR,
    verifier_request_hash  VARCHAR,
    n_written              INTEGER NOT NULL,   -- criteria the writer (or file) produced
    note                   VARCHAR,            -- e.g. why the writer answer could not be used
    created_at             TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (criteria_set, domain, task_id)
);

-- One row per criterion, dropped ones included (with their reasons) so a set can be audited.
CREATE TABLE IF NOT EXISTS ufs_criteria (
    criteria_set    VARCHAR NOT NULL,
    domain          VARCHAR NOT NULL,
    task_id         VARCHAR NOT NULL,
    criterion_id    VARCHAR NOT NULL,
    position        INTEGER NOT NULL,          -- order in the writer's answer or the file
    family          VARCHAR NOT NULL,
    mode            VARCHAR NOT NULL,
    text            VARCHAR NOT NULL,
    grounding_span  VARCHAR NOT NULL,
    grounded_in     VARCHAR,                   -- blueprint.<field> | contract | NULL (not grounded)
    applies_when    VARCHAR NOT NULL,
    evidence_hint   VARCHAR,
    status          VARCHAR NOT NULL,          -- kept | flagged (both graded) | dropped (never graded)
    reasons         JSON,                      -- why flagged or dropped (code checks, verifier checks)
    checks          JSON,                      -- the verifier's boolean per check, NULL if not reviewed
    PRIMARY KEY (criteria_set, domain, task_id, criterion_id)
);
