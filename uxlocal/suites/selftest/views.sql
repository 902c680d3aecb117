-- metric: selftest_summary | grain: one row per run_id
-- source: episodes, verdicts (name = 'label' | 'json') | spec: uxlocal/suites/selftest/suite.py
-- caveat: plumbing check only; p_good_mean averages the judge's label probability of "good"
CREATE OR REPLACE VIEW selftest_summary AS
SELECT e.run_id,
       count(DISTINCT e.episode_id)                                     AS episodes,
       count(*) FILTER (WHERE v.name = 'label' AND v.valid)             AS label_valid,
       count(*) FILTER (WHERE v.name = 'label' AND v.label = 'good')    AS label_good,
       round(avg(v.score) FILTER (WHERE v.name = 'label'), 3)          AS p_good_mean,
       count(*) FILTER (WHERE v.name = 'json' AND v.valid)              AS json_valid,
       round(avg(v.score) FILTER (WHERE v.name = 'json' AND v.valid), 2) AS json_score_mean
FROM episodes e
JOIN verdicts v ON v.run_id = e.run_id AND v.episode_id = e.episode_id
WHERE e.status = 'done'
GROUP BY e.run_id;
