-- Views of `uxlocal judge` (suite 'judge'). Python reference: uxlocal/stats.py; the tests in
-- tests/unit/judge/test_judge_views.py check every statistic here against it on the same rows.
-- Verdict rows are described in uxlocal/suites/judge/episodes.py.
-- A JSON arrow right after AND/OR/NOT stands in parentheses: DuckDB before 2.0 binds ->> looser than
-- AND, so `a AND j->>'k' IS NULL` reads as `(a AND j)->>'k'` and fails casting j (issue 44).

-- metric: judge_items | grain: one row per (run_id, item_id) | source: items of judge runs
-- caveat: human_label is the normalized text (label or A/B/tie); human_score its number (likert)
CREATE OR REPLACE VIEW judge_items AS
SELECT i.run_id, i.item_id, i.data->>'kind' AS kind, i.data->>'group' AS grp,
       i.data->>'source_id' AS source_id, CAST(i.data->>'turn' AS INTEGER) AS turn,
       i.data->>'human' AS human_label, TRY_CAST(i.data->>'human' AS DOUBLE) AS human_score,
       i.source_file, i.source_line
FROM items i JOIN runs r USING (run_id)
WHERE r.suite = 'judge';

-- metric: judge_verdicts | grain: one row per (run_id, item_id, criterion, judge_role)
-- source: verdicts named 'judge:<criterion>' (pairwise order rows left out) x judge_items
-- caveat: score = P(positive) (binary label), expected score (likert), P(A better) reconciled
-- (pairwise); points = the argmax label as a number (likert only); status ok | abstain | why invalid
CREATE OR REPLACE VIEW judge_verdicts AS
SELECT v.run_id, v.item_id, v.value->>'criterion' AS criterion, v.judge_role, v.judge_model,
       v.value->>'kind' AS kind, v.value->>'rubric' AS rubric_sha256, v.label,
       TRY_CAST(v.label AS INTEGER) AS points, CAST(v.value->>'scale' AS INTEGER) AS scale, v.score, v.valid, v.value->>'status' AS status,
       CAST(v.value->>'confidence' AS DOUBLE) AS confidence, v.value->>'positive' AS positive,
       TRY_CAST(v.value->>'flip' AS BOOLEAN) AS flip, v.label_probs, v.rationale,
       i.grp, i.source_id, i.human_label, i.human_score
FROM verdicts v JOIN judge_items i USING (run_id, item_id)
WHERE v.name LIKE 'judge:%' AND (v.value->>'order') IS NULL;

-- metric: judge_counts | grain: one row per (run_id, criterion, judge_role, outcome)
-- source: judge_verdicts | caveat: outcome = the label for valid verdicts, 'invalid: <status>' else
CREATE OR REPLACE VIEW judge_counts AS
SELECT run_id, criterion, judge_role, judge_model,
       CASE WHEN valid THEN label ELSE 'invalid: ' || status END AS outcome, count(*) AS n
FROM judge_verdicts GROUP BY ALL;

-- metric: judge_throughput | grain: one row per run_id
-- source: runs x judge_verdicts | caveat: wall_s is the last attempt's; a replay from the cache
-- is therefore much faster than the first run
CREATE OR REPLACE VIEW judge_throughput AS
SELECT r.run_id, count(v.item_id) AS verdicts, r.wall_s, r.engine_calls,
       CASE WHEN r.wall_s > 0 THEN count(v.item_id) / r.wall_s END AS verdicts_per_s
FROM runs r LEFT JOIN judge_verdicts v USING (run_id)
WHERE r.suite = 'judge' GROUP BY r.run_id, r.wall_s, r.engine_calls;

-- metric: judge_scored | grain: verdicts usable for agreement | source: judge_verdicts
-- caveat: valid, not abstained, and with a human value; the agreement views all read this
CREATE OR REPLACE VIEW judge_scored AS
SELECT * FROM judge_verdicts
WHERE valid AND status = 'ok' AND human_label IS NOT NULL;

-- metric: judge_label_agreement | grain: one row per (run_id, criterion, judge_role), label rubrics
-- source: judge_scored | spec: judge.md §4 | caveat: kappa and macro-F1 over every class seen in
-- human or judge labels; AUROC (a tie counts one half) and ECE (10 equal-width bins, confidence in
-- the own verdict) only for two-label rubrics; all 0-1 fractions
CREATE OR REPLACE VIEW judge_label_agreement AS
WITH s AS (SELECT run_id, criterion, judge_role, label, human_label, positive, score, confidence
           FROM judge_scored WHERE kind = 'label'),
key AS (SELECT DISTINCT run_id, criterion, judge_role FROM s),
classes AS (SELECT DISTINCT run_id, criterion, judge_role, c FROM
            (SELECT run_id, criterion, judge_role, label AS c FROM s
             UNION ALL SELECT run_id, criterion, judge_role, human_label FROM s)),
cells AS (SELECT run_id, criterion, judge_role, label, human_label, count(*) AS n FROM s GROUP BY ALL),
per_class AS (  -- from the (judge, human) cells, not s itself: a join of s on its one key cannot spill
    SELECT k.run_id, k.criterion, k.judge_role, k.c,
           CAST(coalesce(sum(m.n) FILTER (WHERE m.label = k.c AND m.human_label = k.c), 0) AS BIGINT)  AS tp,
           CAST(coalesce(sum(m.n) FILTER (WHERE m.label = k.c AND m.human_label <> k.c), 0) AS BIGINT) AS fp,
           CAST(coalesce(sum(m.n) FILTER (WHERE m.label <> k.c AND m.human_label = k.c), 0) AS BIGINT) AS fn,
           CAST(coalesce(sum(m.n) FILTER (WHERE m.label = k.c), 0) AS BIGINT)       AS n_judge,
           CAST(coalesce(sum(m.n) FILTER (WHERE m.human_label = k.c), 0) AS BIGINT) AS n_human
    FROM classes k JOIN cells m USING (run_id, criterion, judge_role) GROUP BY ALL
),
basic AS (
    SELECT run_id, criterion, judge_role, count(*) AS n,
           avg(CAST(label = human_label AS DOUBLE)) AS accuracy
    FROM s GROUP BY ALL
),
chance AS (
    SELECT p.run_id, p.criterion, p.judge_role,
           sum(p.n_judge * p.n_human) / any_value(b.n * b.n) AS pe,
           avg(CASE WHEN 2 * tp + fp + fn > 0 THEN 2.0 * tp / (2 * tp + fp + fn) ELSE 0 END) AS macro_f1
    FROM per_class p JOIN basic b USING (run_id, criterion, judge_role) GROUP BY ALL
),
by_score AS (  -- positives and negatives per distinct score: the window below runs over these, not s
    SELECT run_id, criterion, judge_role, score, count(*) FILTER (WHERE human_label = positive) AS n_pos,
           count(*) FILTER (WHERE human_label <> positive) AS n_neg
    FROM s WHERE positive IS NOT NULL AND score IS NOT NULL GROUP BY ALL
),
auc AS (  -- wins = the rank sum of the positives less n_pos (n_pos + 1) / 2: each positive beats the
          -- negatives scored below it and half of those tied with it
    SELECT run_id, criterion, judge_role, sum(n_pos) AS n_pos, sum(n_neg) AS n_neg,
           sum(n_pos * (neg_below + n_neg / 2.0)) AS wins
    FROM (SELECT *, coalesce(sum(n_neg) OVER (PARTITION BY run_id, criterion, judge_role ORDER BY score
                                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS neg_below
          FROM by_score)
    GROUP BY ALL
),
bins AS (
    SELECT run_id, criterion, judge_role, least(CAST(floor(confidence * 10) AS INTEGER), 9) AS bin,
           count(*) AS n_bin, avg(CAST(label = human_label AS DOUBLE)) AS acc, avg(confidence) AS conf
    FROM s WHERE positive IS NOT NULL GROUP BY ALL
),
calib AS (
    SELECT b.run_id, b.criterion, b.judge_role, sum(b.n_bin / t.n * abs(b.acc - b.conf)) AS ece
    FROM bins b JOIN basic t USING (run_id, criterion, judge_role) GROUP BY ALL
)
SELECT b.run_id, b.criterion, b.judge_role, b.n, b.accuracy,
       CASE WHEN c.pe < 1 THEN (b.accuracy - c.pe) / (1 - c.pe) END AS kappa, c.macro_f1,
       CASE WHEN a.n_pos > 0 AND a.n_neg > 0
            THEN a.wins / (a.n_pos * a.n_neg) END AS auroc,
       e.ece
FROM basic b JOIN chance c USING (run_id, criterion, judge_role)
LEFT JOIN auc a USING (run_id, criterion, judge_role)
LEFT JOIN calib e USING (run_id, criterion, judge_role);

-- metric: judge_score_agreement | grain: one row per (run_id, criterion, judge_role), likert rubrics
-- source: judge_scored | spec: judge.md §4 | caveat: Pearson, Spearman (mean ranks) and Kendall
-- tau-b on the expected score vs the human score; QWK on the argmax point vs the human score
-- mapped to the scale (floor(x + 0.5), clipped to 1..N); acc_eq on the argmax point vs the human
-- score over item pairs within a group (all items when no group), a tie matching a tie
CREATE OR REPLACE VIEW judge_score_agreement AS
WITH s AS (
    SELECT *, greatest(1, least(CAST(floor(human_score + 0.5) AS INTEGER), scale)) AS human_point,
           rank() OVER w_s + (count(*) OVER (PARTITION BY run_id, criterion, judge_role, score) - 1) / 2.0 AS r_s,
           rank() OVER w_h + (count(*) OVER (PARTITION BY run_id, criterion, judge_role, human_score) - 1) / 2.0
             AS r_h
    FROM judge_scored WHERE kind = 'likert' AND human_score IS NOT NULL
    WINDOW w_s AS (PARTITION BY run_id, criterion, judge_role ORDER BY score),
           w_h AS (PARTITION BY run_id, criterion, judge_role ORDER BY human_score)
),
pairs AS (
    SELECT a.run_id, a.criterion, a.judge_role,
           sum(sign(a.score - b.score) * sign(a.human_score - b.human_score)) AS s_xy,
           sum(abs(sign(a.score - b.score))) AS s_x, sum(abs(sign(a.human_score - b.human_score))) AS s_y,
           avg(CAST(sign(a.points - b.points) = sign(a.human_score - b.human_score) AS DOUBLE))
             FILTER (WHERE coalesce(a.grp, '') = coalesce(b.grp, '')) AS acc_eq
    FROM s a JOIN s b ON a.run_id = b.run_id AND a.criterion = b.criterion AND a.judge_role = b.judge_role
                     AND a.item_id < b.item_id
    GROUP BY ALL
),
agg AS (
    SELECT run_id, criterion, judge_role, count(*) AS n, corr(score, human_score) AS pearson,
           corr(r_s, r_h) AS spearman,
           CAST(count(*) AS DOUBLE) * sum((human_point - points) ^ 2) AS qwk_num,
           count(*) * sum(human_point ^ 2) + count(*) * sum(points ^ 2)
             - 2.0 * sum(human_point) * sum(points) AS qwk_den
    FROM s GROUP BY ALL
)
SELECT g.run_id, g.criterion, g.judge_role, g.n, g.pearson, g.spearman,
       CASE WHEN p.s_x > 0 AND p.s_y > 0 THEN p.s_xy / sqrt(p.s_x * p.s_y) END AS kendall_tau_b,
       CASE WHEN g.qwk_den > 0 THEN 1 - g.qwk_num / g.qwk_den END AS qwk, p.acc_eq
FROM agg g LEFT JOIN pairs p USING (run_id, criterion, judge_role);

-- metric: judge_pairwise_agreement | grain: one row per (run_id, criterion, judge_role), pairwise
-- source: judge_verdicts, judge_scored, order rows of verdicts | caveat: agreement = over pairs the
-- human did not call a tie, the reconciled label equals the human's (a judge tie counts wrong);
-- agreement_with_ties = three-way equality over all pairs; flip_rate = share of pairs whose two
-- orders pick different replies; first_position_rate = share of order verdicts choosing the reply
-- shown first (0.5 = no position bias)
CREATE OR REPLACE VIEW judge_pairwise_agreement AS
WITH v AS (SELECT * FROM judge_verdicts WHERE kind = 'pairwise' AND valid AND status = 'ok'),
orders AS (
    SELECT o.run_id, o.value->>'criterion' AS criterion, o.judge_role,
           avg(CAST(o.label = 'A' AS DOUBLE)) AS first_position_rate
    FROM verdicts o JOIN judge_items i USING (run_id, item_id)
    WHERE o.value->>'order' IS NOT NULL AND o.valid AND i.kind = 'pairwise' GROUP BY ALL
)
SELECT v.run_id, v.criterion, v.judge_role, count(*) AS n,
       count(*) FILTER (WHERE human_label IS NOT NULL) AS n_human,
       avg(CAST(label = human_label AS DOUBLE)) FILTER (WHERE human_label IN ('A', 'B')) AS agreement,
       avg(CAST(label = human_label AS DOUBLE)) FILTER (WHERE human_label IS NOT NULL) AS agreement_with_ties,
       avg(CAST(flip AS DOUBLE)) AS flip_rate, any_value(o.first_position_rate) AS first_position_rate
FROM v LEFT JOIN orders o USING (run_id, criterion, judge_role)
GROUP BY v.run_id, v.criterion, v.judge_role;

-- metric: judge_panel | grain: one row per (run_id, item_id, criterion) | source: judge_verdicts
-- caveat: mean of the judges' scores over valid non-abstained verdicts; n_judges says how many
CREATE OR REPLACE VIEW judge_panel AS
SELECT run_id, item_id, criterion, count(*) AS n_judges, avg(score) AS panel_score,
       any_value(human_label) AS human_label, any_value(human_score) AS human_score
FROM judge_verdicts WHERE valid AND status = 'ok' GROUP BY ALL;

-- metric: judge_interjudge | grain: one row per (run_id, criterion, judge pair) | source: judge_verdicts
-- caveat: items both judges answered validly; label agreement and Pearson r of their scores
CREATE OR REPLACE VIEW judge_interjudge AS
SELECT a.run_id, a.criterion, a.judge_role AS judge_a, b.judge_role AS judge_b, count(*) AS n,
       avg(CAST(a.label = b.label AS DOUBLE)) AS label_agreement, corr(a.score, b.score) AS score_pearson
FROM judge_verdicts a JOIN judge_verdicts b
  ON a.run_id = b.run_id AND a.item_id = b.item_id AND a.criterion = b.criterion AND a.judge_role < b.judge_role
WHERE a.valid AND b.valid AND a.status = 'ok' AND b.status = 'ok'
GROUP BY ALL;

-- metric: judge_confusion | grain: one row per (run_id, criterion, judge_role, human, judge) cell
-- source: judge_scored (label and likert; likert humans mapped to points as in judge_score_agreement)
-- caveat: for likert this is the human-vs-judge scatter as counts
CREATE OR REPLACE VIEW judge_confusion AS
SELECT run_id, criterion, judge_role,
       CASE WHEN kind = 'likert'
            THEN CAST(greatest(1, least(CAST(floor(human_score + 0.5) AS INTEGER), scale)) AS VARCHAR)
            ELSE human_label END AS human, label AS judge, count(*) AS n
FROM judge_scored WHERE kind IN ('label', 'likert') GROUP BY ALL;

-- metric: judge_reliability | grain: one row per (run_id, criterion, judge_role, bin), binary label rubrics
-- source: judge_scored | caveat: the reliability diagram behind ECE: 10 equal-width bins of the
-- confidence in the own verdict, with the share of verdicts that matched the human
CREATE OR REPLACE VIEW judge_reliability AS
SELECT run_id, criterion, judge_role, least(CAST(floor(confidence * 10) AS INTEGER), 9) AS bin, count(*) AS n,
       avg(confidence) AS mean_confidence, avg(CAST(label = human_label AS DOUBLE)) AS accuracy
FROM judge_scored WHERE kind = 'label' AND positive IS NOT NULL GROUP BY ALL;
