-- metric: uxbench_items | grain: one row per (run_id, UXBench item) | the breakdown keys
-- source: items (task judge | eval | recovery) | caveat: blank keys group as 'unknown' (as upstream)
CREATE OR REPLACE VIEW uxbench_items AS
SELECT run_id, item_id, task,
       CAST(data->>'$.ground_truth' AS INTEGER)                    AS ground_truth,
       data->>'$.lang'                                             AS lang,
       coalesce(nullif(trim(data->>'$.scenario'), ''), 'unknown')   AS scenario,
       coalesce(nullif(trim(data->>'$.difficulty'), ''), 'unknown') AS difficulty,
       coalesce(nullif(trim(data->>'$.dimension'), ''), 'unknown')  AS dimension
FROM items WHERE task IN ('judge', 'eval', 'recovery');

-- metric: uxbench_t1_rows | grain: one row per (run_id, T1 item)
-- source: verdicts (name = 't1', and 't1_label' beside it in upstream mode) x items (task = 'judge')
-- x run_generations | spec: specs/uxbench.md §3.1
-- caveat: pred is NULL for an unusable judge output (cut off, over the window, not a label);
-- p_good is P(good) renormalized over the two label paths (label mode; in upstream mode the label
-- arm's, since free generation has none), and p_pred is the verdict of whichever call gave p_good,
-- so ECE measures one call's confidence against its own answer.
CREATE OR REPLACE VIEW uxbench_t1_rows AS
WITH label_arm AS (
    SELECT run_id, episode_id, item_id, score,
           CASE WHEN valid AND label = 'good' THEN 1 WHEN valid AND label = 'bad' THEN -1 END AS pred
    FROM verdicts WHERE name = 't1_label'
)
SELECT v.run_id, v.item_id, v.judge_model,
       CASE WHEN g.tag = 't1_reason' THEN 'reason' WHEN g.tag = 't1_upstream' THEN 'upstream'
            ELSE 'label' END                                        AS mode,
       i.ground_truth,
       CASE WHEN v.valid AND v.label = 'good' THEN 1
            WHEN v.valid AND v.label = 'bad' THEN -1 END             AS pred,
       CASE WHEN l.item_id IS NULL THEN v.score ELSE l.score END     AS p_good,
       CASE WHEN l.item_id IS NOT NULL THEN l.pred
            WHEN v.valid AND v.label = 'good' THEN 1
            WHEN v.valid AND v.label = 'bad' THEN -1 END             AS p_pred,
       i.lang, i.scenario, i.difficulty, i.dimension
FROM verdicts v
JOIN uxbench_items i ON i.run_id = v.run_id AND i.item_id = v.item_id AND i.task = 'judge'
LEFT JOIN run_generations g ON g.run_id = v.run_id AND g.request_hash = v.request_hash
     AND g.episode_id = v.episode_id
LEFT JOIN label_arm l ON l.run_id = v.run_id AND l.episode_id = v.episode_id AND l.item_id = v.item_id
WHERE v.name = 't1';

-- metric: uxbench_reply_rows | grain: one row per (run_id, T2 or T3 item)
-- source: verdicts (name = 't2' | 't3') x items x run_models | spec: specs/uxbench.md §3.2-3.3
-- caveat: verdict is NULL when the judge output was unusable or the reply was never judged
-- (status no_reply / context_window: empty replies are not sent to the judge, as upstream).
CREATE OR REPLACE VIEW uxbench_reply_rows AS
SELECT v.run_id, i.task, v.item_id, cm.model_name AS candidate_model, v.judge_model,
       CASE WHEN v.valid AND v.label = 'good' THEN 1
            WHEN v.valid AND v.label = 'bad' THEN -1 END             AS verdict,
       CASE WHEN v.valid THEN 'judged'
            ELSE coalesce(v.value->>'$.status', 'invalid') END        AS status,
       v.score AS p_good, i.lang, i.scenario, i.difficulty, i.dimension
FROM verdicts v
JOIN uxbench_items i ON i.run_id = v.run_id AND i.item_id = v.item_id AND i.task IN ('eval', 'recovery')
LEFT JOIN run_models cm ON cm.run_id = v.run_id AND cm.role = 'candidate'
WHERE v.name IN ('t2', 't3');

-- metric: uxbench_t1_groups | grain: one row per (run_id, facet, key) over T1 rows
-- source: uxbench_t1_rows | spec: specs/uxbench.md §3.1 (convention C and strict B), §3.4
-- caveat: facet = 'all' is the headline; Avg-Acc uses the published rounding via py_round.
CREATE OR REPLACE VIEW uxbench_t1_groups AS
WITH keyed AS (
    SELECT *, 'all' AS facet, 'all' AS key FROM uxbench_t1_rows
    UNION ALL SELECT *, 'scenario', scenario FROM uxbench_t1_rows
    UNION ALL SELECT *, 'difficulty', difficulty FROM uxbench_t1_rows
    UNION ALL SELECT *, 'dimension', dimension FROM uxbench_t1_rows
), counts AS (
    SELECT run_id, facet, key, any_value(judge_model) AS judge_model, any_value(mode) AS mode,
           count(*) FILTER (WHERE ground_truth = 1)                     AS n_good,
           count(*) FILTER (WHERE ground_truth = -1)                    AS n_bad,
           count(*) FILTER (WHERE ground_truth = 1 AND pred IS NOT NULL)  AS good_valid,
           count(*) FILTER (WHERE ground_truth = -1 AND pred IS NOT NULL) AS bad_valid,
           count(*) FILTER (WHERE ground_truth = 1 AND pred = 1)        AS good_correct,
           count(*) FILTER (WHERE ground_truth = -1 AND pred = -1)      AS bad_correct
    FROM keyed GROUP BY run_id, facet, key
), acc AS (
    SELECT *, n_good - good_valid AS good_invalid, n_bad - bad_valid AS bad_invalid,
           CASE WHEN good_valid > 0 THEN good_correct / good_valid * 100 END AS good_acc,
           CASE WHEN bad_valid > 0 THEN bad_correct / bad_valid * 100 END    AS bad_acc,
           CASE WHEN n_good > 0 THEN good_correct / n_good * 100 END         AS good_acc_strict,
           CASE WHEN n_bad > 0 THEN bad_correct / n_bad * 100 END            AS bad_acc_strict
    FROM counts
)
SELECT *, py_round((py_round(good_acc, 2) + py_round(bad_acc, 2)) / 2, 1)               AS avg_acc,
       py_round((py_round(good_acc_strict, 2) + py_round(bad_acc_strict, 2)) / 2, 1) AS avg_acc_strict
FROM acc;

-- metric: uxbench_t1_auroc | grain: one row per run_id
-- source: uxbench_t1_rows with p_good | caveat: rank-based (Mann-Whitney), ties share mean rank;
-- uses every row with a recorded p_good, valid pred or not; NULL when a class has none.
CREATE OR REPLACE VIEW uxbench_t1_auroc AS
WITH ranked AS (
    SELECT run_id, ground_truth,
           rank() OVER (PARTITION BY run_id ORDER BY p_good)
             + (count(*) OVER (PARTITION BY run_id, p_good) - 1) / 2.0 AS r
    FROM uxbench_t1_rows WHERE p_good IS NOT NULL
), sums AS (
    SELECT run_id, count(*) FILTER (WHERE ground_truth = 1) AS n_pos,
           count(*) FILTER (WHERE ground_truth = -1) AS n_neg,
           sum(r) FILTER (WHERE ground_truth = 1) AS pos_rank_sum
    FROM ranked GROUP BY run_id
)
SELECT run_id, CASE WHEN n_pos > 0 AND n_neg > 0
                    THEN (pos_rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg) END AS auroc
FROM sums;

-- metric: uxbench_t1_ece | grain: one row per run_id
-- source: uxbench_t1_rows (valid p_pred and p_good) | caveat: 10 equal-width confidence bins,
-- confidence = P(predicted label) of the call that gave p_good, last bin closed; a 0-1 fraction.
CREATE OR REPLACE VIEW uxbench_t1_ece AS
WITH conf AS (
    SELECT run_id, CASE WHEN p_pred = 1 THEN p_good ELSE 1.0 - p_good END AS c,
           CAST(p_pred = ground_truth AS DOUBLE) AS correct
    FROM uxbench_t1_rows WHERE p_pred IS NOT NULL AND p_good IS NOT NULL
), bins AS (
    SELECT run_id, least(CAST(floor(c * 10) AS INTEGER), 9) AS bin, count(*) AS n,
           avg(correct) AS acc, avg(c) AS mean_conf
    FROM conf GROUP BY run_id, bin
)
SELECT run_id, sum(n / total * abs(acc - mean_conf)) AS ece
FROM (SELECT *, sum(n) OVER (PARTITION BY run_id) AS total FROM bins) GROUP BY run_id;

-- metric: uxbench_t1 | grain: one row per run_id | the T1 headline
-- source: uxbench_t1_groups (facet = 'all'), uxbench_t1_auroc, uxbench_t1_ece
CREATE OR REPLACE VIEW uxbench_t1 AS
SELECT g.* EXCLUDE (facet, key), a.auroc, e.ece
FROM uxbench_t1_groups g
LEFT JOIN uxbench_t1_auroc a USING (run_id)
LEFT JOIN uxbench_t1_ece e USING (run_id)
WHERE g.facet = 'all';

-- metric: uxbench_rate_groups | grain: one row per (run_id, task, facet, key) over T2/T3 rows
-- source: uxbench_reply_rows | spec: §3.2 Good%, §3.3 Recovery Rate (judged-valid denominator)
-- caveat: rate_strict divides by every item (the old /4900 and /500 variant).
CREATE OR REPLACE VIEW uxbench_rate_groups AS
WITH keyed AS (
    SELECT *, 'all' AS facet, 'all' AS key FROM uxbench_reply_rows
    UNION ALL SELECT *, 'scenario', scenario FROM uxbench_reply_rows
    UNION ALL SELECT *, 'difficulty', difficulty FROM uxbench_reply_rows
    UNION ALL SELECT *, 'dimension', dimension FROM uxbench_reply_rows
)
SELECT run_id, task, facet, key, any_value(candidate_model) AS candidate_model,
       any_value(judge_model) AS judge_model,
       count(*)                                              AS n,
       count(*) FILTER (WHERE verdict IS NOT NULL)           AS n_valid,
       count(*) FILTER (WHERE verdict = 1)                   AS n_good,
       count(*) FILTER (WHERE verdict IS NULL)               AS n_invalid,
       count(*) FILTER (WHERE status IN ('no_reply', 'context_window')) AS n_not_judged,
       CASE WHEN count(*) FILTER (WHERE verdict IS NOT NULL) > 0
            THEN count(*) FILTER (WHERE verdict = 1) / count(*) FILTER (WHERE verdict IS NOT NULL) * 100
       END                                                   AS rate,
       count(*) FILTER (WHERE verdict = 1) / count(*) * 100  AS rate_strict
FROM keyed GROUP BY run_id, task, facet, key;

-- metric: uxbench_rates | grain: one row per (run_id, task) | T2 Good% and T3 Recovery Rate
CREATE OR REPLACE VIEW uxbench_rates AS
SELECT * EXCLUDE (facet, key) FROM uxbench_rate_groups WHERE facet = 'all';

-- metric: uxbench_breakdown | grain: one row per (run_id, task, facet, key) for all three tasks
-- source: uxbench_t1_groups, uxbench_rate_groups | caveat: value is Avg-Acc for T1, rate % else
CREATE OR REPLACE VIEW uxbench_breakdown AS
SELECT run_id, 'judge' AS task, facet, key, n_good + n_bad AS n, good_valid + bad_valid AS n_valid,
       good_acc, bad_acc, avg_acc AS value
FROM uxbench_t1_groups
UNION ALL
SELECT run_id, task, facet, key, n, n_valid, NULL, NULL, rate FROM uxbench_rate_groups;
