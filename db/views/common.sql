-- metric: run_summary | grain: one row per run_id
-- source: runs, episodes, run_generations x generations x models | spec: DESIGN.md (store)
-- caveat: tokens and cost count every generation the run used, cache hits included (the cost of
-- producing the result, not of this attempt); engine_calls is the last attempt's count.
CREATE OR REPLACE VIEW run_summary AS
WITH gen AS (
    SELECT rg.run_id,
           count(*)                                   AS generations,
           count(*) FILTER (WHERE rg.cached)          AS cache_hits,
           sum(g.prompt_tokens)                       AS prompt_tokens,
           sum(g.completion_tokens)                   AS completion_tokens,
           sum((g.prompt_tokens * m.price_input_per_mtok
                + g.completion_tokens * m.price_output_per_mtok) / 1e6) AS cost_usd,
           count(*) FILTER (WHERE NOT g.valid)        AS invalid_generations
    FROM run_generations rg
    JOIN generations g USING (request_hash)
    LEFT JOIN models m ON m.model_identity = g.model_identity
    GROUP BY rg.run_id
), ep AS (
    SELECT run_id, count(*) FILTER (WHERE status = 'done') AS episodes_done,
           count(*) FILTER (WHERE status = 'failed') AS episodes_failed
    FROM episodes GROUP BY run_id
)
SELECT r.run_id, r.suite, r.status, r.started_at, r.ended_at, r.wall_s, r.engine_calls, r.engine_busy_s,
       coalesce(ep.episodes_done, 0) AS episodes_done, coalesce(ep.episodes_failed, 0) AS episodes_failed,
       coalesce(gen.generations, 0) AS generations, coalesce(gen.cache_hits, 0) AS cache_hits,
       coalesce(gen.prompt_tokens, 0) AS prompt_tokens, coalesce(gen.completion_tokens, 0) AS completion_tokens,
       coalesce(gen.cost_usd, 0) AS cost_usd, coalesce(gen.invalid_generations, 0) AS invalid_generations
FROM runs r LEFT JOIN ep USING (run_id) LEFT JOIN gen USING (run_id);

-- metric: episode_cost | grain: one row per (run_id, episode_id, role)
-- source: run_generations x generations x models | caveat: prices come from the model preset
CREATE OR REPLACE VIEW episode_cost AS
SELECT rg.run_id, rg.episode_id, rg.role,
       count(*) AS generations,
       sum(g.prompt_tokens) AS prompt_tokens,
       sum(g.completion_tokens) AS completion_tokens,
       sum(g.latency_ms) AS latency_ms,
       sum((g.prompt_tokens * coalesce(m.price_input_per_mtok, 0)
            + g.completion_tokens * coalesce(m.price_output_per_mtok, 0)) / 1e6) AS cost_usd
FROM run_generations rg
JOIN generations g USING (request_hash)
LEFT JOIN models m ON m.model_identity = g.model_identity
GROUP BY ALL;

-- macro: py_round(x, n) | Python's round(x, n) on a DOUBLE: exact binary ties (x * 2^(n+1) odd)
-- round half to even; everything else is DuckDB's round, which already rounds the binary value
-- (75.05 -> 75.0 as in Python). Needed for UXBench's published Avg-Acc rounding (spec §3.1).
CREATE OR REPLACE MACRO py_round(x, n) AS
    CASE WHEN x * pow(2, n + 1) = floor(x * pow(2, n + 1))
              AND CAST(floor(x * pow(2, n + 1)) AS BIGINT) % 2 <> 0
         THEN (CASE WHEN CAST(floor(x * pow(10, n)) AS BIGINT) % 2 = 0 THEN floor(x * pow(10, n))
                    ELSE floor(x * pow(10, n)) + 1 END) / pow(10, n)
         ELSE round(x, n) END;
