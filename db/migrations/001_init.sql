-- 001_init.sql
-- Why: the first schema. DuckDB is the single source of truth; every metric is a view over these
-- tables. Rows are append-only except episode status and run bookkeeping.
-- Old rows: none (first migration).

CREATE TABLE runs (
    run_id        VARCHAR PRIMARY KEY,   -- <suite>-<first 12 hex of config_sha256>
    suite         VARCHAR NOT NULL,
    config        JSON NOT NULL,         -- the canonical run config (what was asked)
    config_sha256 VARCHAR NOT NULL,      -- run identity: sha256 of the canonical config
    versions      JSON,                  -- python, uxlocal, vllm, torch, transformers, duckdb ...
    git_commit    VARCHAR,               -- uxlocal checkout commit (+dirty), NULL for wheels
    status        VARCHAR NOT NULL,      -- running | done | failed
    started_at    TIMESTAMPTZ NOT NULL,
    ended_at      TIMESTAMPTZ,
    wall_s        DOUBLE,                -- seconds of the last attempt
    engine_calls  INTEGER,               -- batched engine calls of the last attempt (0 = all cached)
    engine_busy_s DOUBLE                 -- seconds spent inside engines during the last attempt
);

CREATE TABLE models (
    model_identity        VARCHAR PRIMARY KEY,
    name                  VARCHAR,
    path                  VARCHAR,
    backend               VARCHAR,
    dtype                 VARCHAR,
    max_model_len         INTEGER,
    price_input_per_mtok  DOUBLE,
    price_output_per_mtok DOUBLE
);

CREATE TABLE run_models (
    run_id         VARCHAR NOT NULL,
    role           VARCHAR NOT NULL,     -- candidate | user | judge (or a suite's named seat)
    model_identity VARCHAR NOT NULL,
    model_name     VARCHAR
);

CREATE TABLE items (
    run_id      VARCHAR NOT NULL,
    item_id     VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    data        JSON,
    source_file VARCHAR,
    source_line INTEGER
);

CREATE TABLE quarantine (
    run_id      VARCHAR NOT NULL,
    task        VARCHAR,
    source_file VARCHAR,
    source_line INTEGER,
    reason      VARCHAR,
    raw         VARCHAR
);

CREATE TABLE episodes (
    run_id      VARCHAR NOT NULL,
    episode_id  VARCHAR NOT NULL,
    item_id     VARCHAR,
    task        VARCHAR,
    trial       INTEGER,
    status      VARCHAR NOT NULL,        -- done | failed (rows appear when the episode ends)
    termination VARCHAR,                 -- suite-defined reason (user_stop, max_steps, judged, ...)
    reward      DOUBLE,
    info        JSON,
    n_turns     INTEGER,
    started_at  TIMESTAMPTZ,
    ended_at    TIMESTAMPTZ
);

CREATE TABLE turns (
    run_id       VARCHAR NOT NULL,
    episode_id   VARCHAR NOT NULL,
    idx          INTEGER NOT NULL,       -- 0-based position in the episode
    role         VARCHAR NOT NULL,       -- user | assistant | tool | system
    content      VARCHAR,
    model_role   VARCHAR,                -- which seat produced it (candidate | user | judge), NULL for data
    request_hash VARCHAR,                -- the generation behind it, NULL for data turns
    meta         JSON
);

CREATE TABLE tool_calls (
    run_id     VARCHAR NOT NULL,
    episode_id VARCHAR NOT NULL,
    turn_idx   INTEGER,
    call_idx   INTEGER,
    requestor  VARCHAR,                  -- assistant | user
    name       VARCHAR,
    arguments  JSON,
    ok         BOOLEAN,
    result     VARCHAR,
    error      VARCHAR
);

CREATE TABLE generations (
    request_hash      VARCHAR PRIMARY KEY,  -- sha256(model identity, prompt, sampling, constraint, lora)
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

CREATE TABLE run_generations (
    run_id       VARCHAR NOT NULL,
    episode_id   VARCHAR NOT NULL,
    seq          INTEGER NOT NULL,       -- order of the request inside the episode
    role         VARCHAR NOT NULL,
    tag          VARCHAR,
    request_hash VARCHAR NOT NULL,
    cached       BOOLEAN                 -- served from the store, not the engine
);

CREATE TABLE verdicts (
    run_id       VARCHAR NOT NULL,
    episode_id   VARCHAR NOT NULL,
    item_id      VARCHAR,
    name         VARCHAR NOT NULL,       -- what was judged (t1_label, t2_good, nl_assertion:2, ...)
    judge_role   VARCHAR,
    judge_model  VARCHAR,                -- model name, so every result row names its judge
    label        VARCHAR,
    score        DOUBLE,
    valid        BOOLEAN NOT NULL,
    label_probs  JSON,
    value        JSON,
    rationale    VARCHAR,
    request_hash VARCHAR
);
