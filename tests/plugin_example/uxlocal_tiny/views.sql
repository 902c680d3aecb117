-- metric: tiny_summary | grain: one row per run_id
-- source: verdicts (name = 'answer') of finished episodes | spec: tests/plugin_example
-- caveat: an example; yes_rate is the share of sentences the judge called true
CREATE OR REPLACE VIEW tiny_summary AS
SELECT e.run_id,
       count(*)                                  AS sentences,
       count(*) FILTER (WHERE v.label = 'yes')   AS yes,
       round(avg((v.label = 'yes')::INT), 3)     AS yes_rate
FROM episodes e
JOIN verdicts v ON v.run_id = e.run_id AND v.episode_id = e.episode_id AND v.name = 'answer'
WHERE e.status = 'done'
GROUP BY e.run_id;
