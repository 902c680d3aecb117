-- UserProxyBench: User Fidelity Score (UFS), violations, pre-checks, proxy cost, frontier.
-- Spec: userproxybench.md Part A. Python reference: uxlocal/suites/userproxy/ufs/scoring.py
-- and frontier.py (tests check these views against it). Bootstrap intervals are Python-only.
--
-- Rows these views read (written by UFS grading, `uxlocal ufs precheck` and `uxlocal ingest`):
--   verdicts.name = 'ufs:<criterion_id>'  one judge verdict per (trajectory, criterion); label
--       pass | fail | not_applicable | invalid; value = {criteria_set, criterion_id, family, mode,
--       applicable, passed, evidence_turns}; valid = false when the judge output was unusable.
--   verdicts.name = 'precheck:<kind>'    one deterministic check per (trajectory, kind); label
--       flagged | clean | not_applicable; value = {kind, family, turns, details}.
-- A verdict sits on the graded trajectory's own (run_id, episode_id), or on a grading episode
-- whose episodes.info names it in source_run_id / source_episode_id.
-- Trajectories are the episodes of runs with suite 'tau2' or 'userproxy' (ingested files are
-- 'tau2' runs). The proxy is episodes.info.proxy, else the run's 'user' model; the agent is
-- episodes.info.agent, else the run's 'agent' model. A UFS number is always per
-- (criteria_set, judge_model): two judges or two criteria sets never mix.

-- metric: ufs_trajectories | grain: one row per (run_id, episode_id) of a tau2-shaped run
-- source: episodes x runs x run_models, tool_calls, turns, episode_cost | spec: §A.6 (cost), §A.7.3 (effort)
-- caveat: infrastructure_error and failed episodes are left out, as tau2 does, and so are grading
-- episodes (those naming a source_run_id). agent_questions
-- counts agent text turns holding '?' other than tau2's fixed greeting. user_only_gold marks tasks
-- whose gold actions are all the user's (banking 001, 002, 003, 006, 007, 024, 025): only the
-- proxy's own tool calls can earn the reward. User-side cost and tokens
-- come from the user seat's generations (roles 'user' or 'user:*', priced by the model preset);
-- ingested runs have none, so the file's own numbers are used (info.user_cost, info.user_usage).
CREATE OR REPLACE VIEW ufs_trajectories AS
WITH calls AS (
    SELECT run_id, episode_id,
           count(*) FILTER (WHERE requestor = 'assistant') AS agent_tool_calls,
           count(*) FILTER (WHERE requestor = 'user')      AS user_tool_calls
    FROM tool_calls GROUP BY run_id, episode_id
), questions AS (
    SELECT run_id, episode_id, count(*) AS agent_questions
    FROM turns
    WHERE role = 'assistant'
      AND coalesce(json_array_length(json_extract(meta, '$.message.tool_calls')), 0) = 0
      AND json_extract_string(meta, '$.message.content') LIKE '%?%'
      AND trim(json_extract_string(meta, '$.message.content')) <> 'Hi! How can I help you today?'
    GROUP BY run_id, episode_id
), user_gen AS (
    SELECT run_id, episode_id, sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
           sum(cost_usd) AS cost_usd, sum(latency_ms) / 1000.0 AS engine_s
    FROM episode_cost WHERE role = 'user' OR role LIKE 'user:%'
    GROUP BY run_id, episode_id
)
SELECT e.run_id, e.episode_id, e.task AS domain, substr(e.item_id, length(e.task) + 2) AS task_id, e.trial,
       coalesce(json_extract_string(e.info, '$.agent'), am.model_name, 'unknown-agent') AS agent,
       coalesce(json_extract_string(e.info, '$.proxy'), um.model_name, 'unknown-user')  AS proxy,
       e.termination, e.reward,
       coalesce(abs(e.reward - 1.0) <= 1e-6, false)                                     AS success,
       coalesce(c.agent_tool_calls, 0)                                                 AS agent_tool_calls,
       coalesce(c.user_tool_calls, 0)                                                  AS user_tool_calls,
       coalesce(q.agent_questions, 0)                                                  AS agent_questions,
       coalesce(json_array_length(json_extract(e.info, '$.gold_requestors')) = 1
                AND json_extract_string(e.info, '$.gold_requestors[0]') = 'user', false)       AS user_only_gold,
       coalesce(g.prompt_tokens,
                CAST(json_extract(e.info, '$.user_usage.prompt_tokens') AS BIGINT), 0)       AS user_prompt_tokens,
       coalesce(g.completion_tokens,
                CAST(json_extract(e.info, '$.user_usage.completion_tokens') AS BIGINT), 0)   AS user_completion_tokens,
       coalesce(g.cost_usd, CAST(json_extract(e.info, '$.user_cost') AS DOUBLE))             AS user_cost_usd,
       coalesce(g.engine_s, CAST(json_extract(e.info, '$.user_usage.generation_s') AS DOUBLE)) AS user_engine_s
FROM episodes e
JOIN runs r ON r.run_id = e.run_id AND r.suite IN ('tau2', 'userproxy')
LEFT JOIN run_models um ON um.run_id = e.run_id AND um.role = 'user'
LEFT JOIN run_models am ON am.run_id = e.run_id AND am.role = 'agent'
LEFT JOIN calls c ON c.run_id = e.run_id AND c.episode_id = e.episode_id
LEFT JOIN questions q ON q.run_id = e.run_id AND q.episode_id = e.episode_id
LEFT JOIN user_gen g ON g.run_id = e.run_id AND g.episode_id = e.episode_id
WHERE e.status = 'done' AND coalesce(e.termination, '') <> 'infrastructure_error'
  AND json_extract_string(e.info, '$.source_run_id') IS NULL;  -- grading episodes are not trajectories

-- metric: ufs_protocol | grain: one row per (run_id, domain, proxy) of a userproxy run
-- source: episodes x runs (suite 'userproxy'), grading episodes left out | spec: issue 42 (comparability)
-- caveat: infrastructure_errors (and failed episodes) are the episodes every UFS and reward view
-- leaves out; comparable is true when every episode that recorded its protocol ran upstream's
-- (tau2-bench's requests from a checkout), false when any ran ours ("not comparable with tau2-bench").
CREATE OR REPLACE VIEW ufs_protocol AS
SELECT e.run_id, e.task AS domain, json_extract_string(e.info, '$.proxy') AS proxy,
       count(*)                                                                         AS episodes,
       count(*) FILTER (WHERE e.status = 'done'
                        AND coalesce(e.termination, '') = 'infrastructure_error')       AS infrastructure_errors,
       count(*) FILTER (WHERE e.status <> 'done')                                       AS failed,
       coalesce(bool_and(coalesce(json_extract_string(e.info, '$.protocol'), 'ours') = 'upstream')
                FILTER (WHERE e.info IS NOT NULL), false)                               AS comparable
FROM episodes e
JOIN runs r ON r.run_id = e.run_id AND r.suite = 'userproxy'
WHERE json_extract_string(e.info, '$.source_run_id') IS NULL
GROUP BY ALL
ORDER BY e.run_id, domain, proxy;

-- metric: ufs_coverage | grain: one row per (run_id, item) of a userproxy run (one task)
-- source: items (data.ufs_coverage, computed at plan time by ufs/coverage.py) x runs (suite 'userproxy')
-- spec: issue 42 part 4 (criteria still cover the scenario's fields)
-- caveat: a scenario field (reason_for_call, known_info, unknown_info, task_instructions, persona or
-- instructions; empty ones and '.' are not fields) is covered when a graded (kept or flagged)
-- criterion's grounding span is an exact substring of it, whitespace aside.
CREATE OR REPLACE VIEW ufs_coverage AS
SELECT i.run_id, json_extract_string(i.data, '$.domain') AS domain, i.item_id,
       CAST(json_extract(i.data, '$.ufs_coverage.n_fields') AS INTEGER)                     AS fields,
       CAST(json_extract(i.data, '$.ufs_coverage.n_covered') AS INTEGER)                    AS covered,
       array_to_string(json_extract_string(i.data, '$.ufs_coverage.uncovered[*]'), ', ')    AS uncovered
FROM items i
JOIN runs r ON r.run_id = i.run_id AND r.suite = 'userproxy'
WHERE json_extract(i.data, '$.ufs_coverage') IS NOT NULL
ORDER BY i.run_id, i.item_id;

-- metric: ufs_verdicts | grain: one row per (run_id, episode_id, criteria_set, judge_model, criterion_id)
-- source: verdicts named 'ufs:%' (x episodes of a grading run, x runs) | spec: §A.9 step 5
-- caveat: run_id/episode_id are the graded trajectory's. If a trajectory was graded twice with the
-- same criteria set and judge, the verdict of the most recently started grading run wins.
-- applicable/passed are NULL when valid is false.
CREATE OR REPLACE VIEW ufs_verdicts AS
SELECT coalesce(json_extract_string(g.info, '$.source_run_id'), v.run_id)         AS run_id,
       coalesce(json_extract_string(g.info, '$.source_episode_id'), v.episode_id) AS episode_id,
       coalesce(json_extract_string(v.value, '$.criteria_set'), '(none)')         AS criteria_set,
       coalesce(v.judge_model, '(unknown)')                                        AS judge_model,
       substr(v.name, 5)                                                            AS criterion_id,
       json_extract_string(v.value, '$.family')                                    AS family,
       json_extract_string(v.value, '$.mode')                                      AS mode,
       v.valid,
       CASE WHEN v.valid THEN CAST(json_extract(v.value, '$.applicable') AS BOOLEAN) END AS applicable,
       CASE WHEN v.valid THEN CAST(json_extract(v.value, '$.passed') AS BOOLEAN) END     AS passed,
       v.valid AND CAST(json_extract(v.value, '$.applicable') AS BOOLEAN)
               AND NOT CAST(json_extract(v.value, '$.passed') AS BOOLEAN)           AS failed,
       json_extract(v.value, '$.evidence_turns')                                   AS evidence_turns,
       v.rationale, v.run_id AS grading_run_id, v.episode_id AS grading_episode_id
FROM verdicts v
LEFT JOIN episodes g ON g.run_id = v.run_id AND g.episode_id = v.episode_id
LEFT JOIN runs gr ON gr.run_id = v.run_id
WHERE v.name LIKE 'ufs:%'
QUALIFY row_number() OVER (
    PARTITION BY coalesce(json_extract_string(g.info, '$.source_run_id'), v.run_id),
                 coalesce(json_extract_string(g.info, '$.source_episode_id'), v.episode_id),
                 coalesce(json_extract_string(v.value, '$.criteria_set'), '(none)'),
                 coalesce(v.judge_model, '(unknown)'), v.name
    ORDER BY gr.started_at DESC NULLS LAST, v.run_id DESC) = 1;

-- metric: ufs_episodes | grain: one row per (criteria_set, judge_model, run_id, episode_id)
-- source: ufs_verdicts x ufs_trajectories | spec: §A.3 Eq. 1 (f_i), App. B (unscorable)
-- caveat: status 'fail' if a usable verdict failed; else 'undetermined' if some verdict is unusable
-- (never guessed; left out like unscorable); else 'unscorable' if nothing applied; else 'pass'.
-- f is 1 / 0 for pass / fail and NULL otherwise.
CREATE OR REPLACE VIEW ufs_episodes AS
WITH per_episode AS (
    SELECT criteria_set, judge_model, run_id, episode_id,
           count(*)                                  AS criteria,
           count(*) FILTER (WHERE valid AND applicable) AS applicable,
           count(*) FILTER (WHERE failed)            AS failed,
           count(*) FILTER (WHERE NOT valid)         AS invalid
    FROM ufs_verdicts GROUP BY ALL
)
SELECT p.criteria_set, p.judge_model, t.agent, t.proxy, t.domain, t.task_id, t.trial, t.run_id, t.episode_id,
       t.reward, t.success, t.agent_tool_calls, t.agent_questions,
       p.criteria, p.applicable, p.failed, p.invalid,
       CASE WHEN p.failed > 0 THEN 'fail' WHEN p.invalid > 0 THEN 'undetermined'
            WHEN p.applicable = 0 THEN 'unscorable' ELSE 'pass' END                    AS status,
       CASE WHEN p.failed > 0 THEN 0 WHEN p.invalid > 0 OR p.applicable = 0 THEN NULL ELSE 1 END AS f
FROM per_episode p
JOIN ufs_trajectories t ON t.run_id = p.run_id AND t.episode_id = p.episode_id;

-- metric: ufs_episode_families | grain: one row per (criteria_set, judge_model, run_id, episode_id, family)
-- source: ufs_episodes x ufs_verdicts x the four families | spec: §A.5
-- caveat: failed = some usable verdict of the family failed; known = failed, or no unusable
-- verdict of that family (an episode whose family is unknown is left out of the effect views).
CREATE OR REPLACE VIEW ufs_episode_families AS
WITH families(family) AS (
    VALUES ('premature_disclosure'), ('groundedness'), ('goal_deviation'), ('missed_information')
)
SELECT e.criteria_set, e.judge_model, e.agent, e.proxy, e.domain, e.run_id, e.episode_id, f.family,
       e.success, e.agent_tool_calls, e.agent_questions,
       coalesce(bool_or(v.failed), false)                                   AS failed,
       coalesce(bool_or(v.failed), false) OR coalesce(bool_and(v.valid), true) AS known
FROM ufs_episodes e
CROSS JOIN families f
LEFT JOIN ufs_verdicts v ON v.run_id = e.run_id AND v.episode_id = e.episode_id
     AND v.criteria_set = e.criteria_set AND v.judge_model = e.judge_model AND v.family = f.family
GROUP BY ALL;

-- metric: ufs_domain | grain: one row per (criteria_set, judge_model, agent, proxy, domain)
-- source: ufs_episodes | spec: §A.3 (UFS per proxy x domain), Table 2
-- caveat: ufs = passed / (passed + failed); unscorable and undetermined episodes are counted but
-- left out. mean_reward is over the same graded trajectories.
CREATE OR REPLACE VIEW ufs_domain AS
SELECT criteria_set, judge_model, agent, proxy, domain,
       count(*)                                    AS episodes,
       count(*) FILTER (WHERE status = 'pass')     AS passed,
       count(*) FILTER (WHERE status = 'fail')     AS failed,
       count(*) FILTER (WHERE status = 'unscorable')   AS unscorable,
       count(*) FILTER (WHERE status = 'undetermined') AS undetermined,
       count(*) FILTER (WHERE f IS NOT NULL)       AS scorable,
       avg(f)                                      AS ufs,
       avg(coalesce(reward, 0.0))                  AS mean_reward
FROM ufs_episodes
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, domain;

-- metric: ufs_user_only_tasks | grain: one row per (criteria_set, judge_model, agent, proxy, domain)
-- source: ufs_episodes x ufs_trajectories.user_only_gold | spec: issue 16 item 6
-- caveat: only tasks whose gold actions are all the user's; the reward there measures the proxy's deeds.
CREATE OR REPLACE VIEW ufs_user_only_tasks AS
SELECT e.criteria_set, e.judge_model, e.agent, e.proxy, e.domain,
       string_agg(DISTINCT e.task_id, ', ' ORDER BY e.task_id) AS tasks,
       count(*)                                AS episodes,
       count(*) FILTER (WHERE e.f IS NOT NULL) AS scorable,
       avg(e.f)                                AS ufs,
       avg(coalesce(e.reward, 0.0))            AS mean_reward,
       avg(t.user_tool_calls)                  AS user_tool_calls
FROM ufs_episodes e
JOIN ufs_trajectories t ON t.run_id = e.run_id AND t.episode_id = e.episode_id
WHERE t.user_only_gold
GROUP BY ALL
ORDER BY ALL;

-- metric: ufs_summary | grain: one row per (criteria_set, judge_model, agent, proxy) -- Table 1
-- source: ufs_domain, ufs_episodes x ufs_trajectories | spec: §A.7.1 (Table 1), §A.6 (cost)
-- caveat: mean_ufs and mean_reward are unweighted means over domains (Table 1's caption); domains
-- without a scorable episode do not count. Cost, tokens and engine seconds are per simulation over
-- the graded trajectories, user side only; cost is NULL when no price is known.
CREATE OR REPLACE VIEW ufs_summary AS
WITH d AS (
    SELECT criteria_set, judge_model, agent, proxy,
           count(*) FILTER (WHERE ufs IS NOT NULL) AS domains,
           avg(ufs)                                AS mean_ufs,
           avg(mean_reward)                        AS mean_reward,
           sum(episodes) AS episodes, sum(scorable) AS scorable, sum(unscorable) AS unscorable,
           sum(undetermined) AS undetermined
    FROM ufs_domain GROUP BY ALL
), c AS (
    SELECT e.criteria_set, e.judge_model, e.agent, e.proxy,
           avg(t.user_cost_usd)          AS cost_per_sim_usd,
           avg(t.user_prompt_tokens)     AS prompt_tokens_per_sim,
           avg(t.user_completion_tokens) AS completion_tokens_per_sim,
           avg(t.user_engine_s)          AS engine_s_per_sim
    FROM ufs_episodes e JOIN ufs_trajectories t USING (run_id, episode_id)
    GROUP BY ALL
)
SELECT d.*, c.cost_per_sim_usd, c.prompt_tokens_per_sim, c.completion_tokens_per_sim, c.engine_s_per_sim
FROM d JOIN c USING (criteria_set, judge_model, agent, proxy)
ORDER BY criteria_set, judge_model, agent, cost_per_sim_usd DESC NULLS LAST, proxy;

-- metric: ufs_failures | grain: one row per (criteria_set, judge_model, agent, proxy, domain, family, mode)
-- source: ufs_verdicts x ufs_episodes | spec: §A.5, §A.7.3 (failure counts), Fig. 3 left
-- caveat: a failure is a usable verdict that found its criterion applicable and violated; every
-- graded episode counts, undetermined ones included.
CREATE OR REPLACE VIEW ufs_failures AS
SELECT e.criteria_set, e.judge_model, e.agent, e.proxy, e.domain, v.family, v.mode,
       count(*)                                       AS failures,
       count(DISTINCT (v.run_id, v.episode_id))       AS episodes
FROM ufs_verdicts v
JOIN ufs_episodes e ON e.run_id = v.run_id AND e.episode_id = v.episode_id
     AND e.criteria_set = v.criteria_set AND e.judge_model = v.judge_model
WHERE v.failed
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, domain, failures DESC, family, mode;

-- metric: ufs_family_failures | grain: one row per (criteria_set, judge_model, agent, proxy, family)
-- source: ufs_episode_families, ufs_failures | spec: §A.7.3 (premature disclosure 480, goal deviation 134)
-- caveat: every family appears, with 0 when it never failed; episodes = graded episodes with at
-- least one failure of the family.
CREATE OR REPLACE VIEW ufs_family_failures AS
WITH counts AS (
    SELECT criteria_set, judge_model, agent, proxy, family, sum(failures) AS failures
    FROM ufs_failures GROUP BY ALL
)
SELECT f.criteria_set, f.judge_model, f.agent, f.proxy, f.family,
       coalesce(any_value(c.failures), 0)          AS failures,
       count(*) FILTER (WHERE f.failed)            AS episodes,
       count(*)                                    AS graded_episodes
FROM ufs_episode_families f
LEFT JOIN counts c USING (criteria_set, judge_model, agent, proxy, family)
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, failures DESC, family;

-- metric: ufs_success_violations | grain: one row per (criteria_set, judge_model, agent, proxy, domain);
-- domain '*' = all domains together
-- source: ufs_episodes | spec: §A.7.3 ("24.4% of agent-successful episodes fail UFS")
-- caveat: over scorable episodes with reward 1 (tau2's tolerance); share = with_violation / successes.
CREATE OR REPLACE VIEW ufs_success_violations AS
SELECT criteria_set, judge_model, agent, proxy, coalesce(domain, '*') AS domain,
       count(*)                          AS successes,
       count(*) FILTER (WHERE f = 0)     AS with_violation,
       count(*) FILTER (WHERE f = 0) / count(*) AS share
FROM ufs_episodes
WHERE success AND f IS NOT NULL
GROUP BY GROUPING SETS ((criteria_set, judge_model, agent, proxy, domain), (criteria_set, judge_model, agent, proxy))
ORDER BY criteria_set, judge_model, agent, proxy, domain;

-- metric: ufs_effort_deltas | grain: one row per (criteria_set, judge_model, agent, proxy, family)
-- source: ufs_episode_families | spec: §A.7.3 (RL implications: -1.06 tool calls, -0.26 questions)
-- caveat: successful episodes only, whose family presence is known; delta = mean with the
-- family's failure minus mean without (NULL when either side is empty).
CREATE OR REPLACE VIEW ufs_effort_deltas AS
SELECT criteria_set, judge_model, agent, proxy, family,
       count(*) FILTER (WHERE failed)                         AS n_with,
       count(*) FILTER (WHERE NOT failed)                     AS n_without,
       avg(agent_tool_calls) FILTER (WHERE failed)            AS tool_calls_with,
       avg(agent_tool_calls) FILTER (WHERE NOT failed)        AS tool_calls_without,
       avg(agent_tool_calls) FILTER (WHERE failed)
         - avg(agent_tool_calls) FILTER (WHERE NOT failed)    AS delta_tool_calls,
       avg(agent_questions) FILTER (WHERE failed)             AS questions_with,
       avg(agent_questions) FILTER (WHERE NOT failed)         AS questions_without,
       avg(agent_questions) FILTER (WHERE failed)
         - avg(agent_questions) FILTER (WHERE NOT failed)     AS delta_questions
FROM ufs_episode_families
WHERE success AND known
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, family;

-- metric: ufs_delta_pass | grain: one row per (criteria_set, judge_model, agent, proxy, domain, family)
-- source: ufs_episode_families | spec: §A.7.3 (Δ pass rate per proxy-domain cell; Fig. 3 right)
-- caveat: rate = share of episodes with reward 1; eligible = at least 5 episodes on each side (the
-- paper's rule); the paper's means (-.515 goal deviation, -.043 disclosure) are over eligible cells.
CREATE OR REPLACE VIEW ufs_delta_pass AS
SELECT criteria_set, judge_model, agent, proxy, domain, family,
       count(*) FILTER (WHERE failed)                                   AS n_with,
       count(*) FILTER (WHERE NOT failed)                               AS n_without,
       avg(CAST(success AS DOUBLE)) FILTER (WHERE failed)               AS rate_with,
       avg(CAST(success AS DOUBLE)) FILTER (WHERE NOT failed)           AS rate_without,
       avg(CAST(success AS DOUBLE)) FILTER (WHERE failed)
         - avg(CAST(success AS DOUBLE)) FILTER (WHERE NOT failed)       AS delta,
       count(*) FILTER (WHERE failed) >= 5 AND count(*) FILTER (WHERE NOT failed) >= 5 AS eligible
FROM ufs_episode_families
WHERE known
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, domain, family;

-- metric: ufs_prechecks | grain: one row per (run_id, episode_id, kind)
-- source: verdicts named 'precheck:%' x ufs_trajectories | spec: §A.9 step 6 (proposal)
-- caveat: flagged is NULL when the check did not apply (nothing to look at in that trajectory).
CREATE OR REPLACE VIEW ufs_prechecks AS
SELECT t.agent, t.proxy, t.domain, t.task_id, v.run_id, v.episode_id,
       substr(v.name, 10)                              AS kind,
       json_extract_string(v.value, '$.family')        AS family,
       v.label,
       CASE v.label WHEN 'flagged' THEN true WHEN 'clean' THEN false END AS flagged,
       json_extract(v.value, '$.turns')                AS turns,
       json_extract(v.value, '$.details')              AS details
FROM verdicts v
JOIN ufs_trajectories t ON t.run_id = v.run_id AND t.episode_id = v.episode_id
WHERE v.name LIKE 'precheck:%';

-- metric: ufs_precheck_agreement | grain: one row per (criteria_set, judge_model, agent, proxy, domain, kind)
-- source: ufs_prechecks x ufs_episode_families | spec: §A.9 step 6 (pre-checks audit the judge)
-- caveat: compares a check with the judge's failures in the family it audits, over graded episodes
-- where the check applied and the family is known; the judge may fail the family for other reasons,
-- so judge_only counts are expected; precheck_only counts are the ones to read by hand.
CREATE OR REPLACE VIEW ufs_precheck_agreement AS
SELECT f.criteria_set, f.judge_model, f.agent, f.proxy, f.domain, p.kind, p.family,
       count(*)                                              AS episodes,
       count(*) FILTER (WHERE p.flagged)                     AS flagged,
       count(*) FILTER (WHERE f.failed)                      AS judge_failed,
       count(*) FILTER (WHERE p.flagged AND f.failed)        AS flagged_and_failed,
       count(*) FILTER (WHERE p.flagged AND NOT f.failed)    AS precheck_only,
       count(*) FILTER (WHERE NOT p.flagged AND f.failed)    AS judge_only,
       avg(CAST(p.flagged = f.failed AS DOUBLE))             AS agreement
FROM ufs_prechecks p
JOIN ufs_episode_families f ON f.run_id = p.run_id AND f.episode_id = p.episode_id AND f.family = p.family
WHERE p.flagged IS NOT NULL AND f.known
GROUP BY ALL
ORDER BY criteria_set, judge_model, agent, proxy, domain, kind;

-- macro: ufs_pareto(table_name) | a table of (grp, name, cost, fidelity) -> each point with the
-- names that dominate it within its grp (cost <=, fidelity >=, one strictly), dominated, and its
-- 1-based rank along the efficient frontier by increasing cost (NULL when dominated).
-- spec: §A.7.1 († strictly dominated), §A.7.3 (frontier) | Python twin: ufs/frontier.py pareto()
CREATE OR REPLACE MACRO ufs_pareto(points) AS TABLE
WITH marked AS (
    SELECT p.grp, p.name, p.cost, p.fidelity,
           list(q.name ORDER BY q.name) FILTER (WHERE q.name IS NOT NULL) AS dominated_by
    FROM query_table(points) p
    LEFT JOIN query_table(points) q
      ON q.grp = p.grp AND q.name <> p.name AND q.cost <= p.cost AND q.fidelity >= p.fidelity
     AND (q.cost < p.cost OR q.fidelity > p.fidelity)
    GROUP BY p.grp, p.name, p.cost, p.fidelity
)
SELECT grp, name, cost, fidelity, coalesce(dominated_by, []) AS dominated_by,
       dominated_by IS NOT NULL AS dominated,
       CASE WHEN dominated_by IS NULL THEN
            row_number() OVER (PARTITION BY grp, dominated_by IS NULL ORDER BY cost, fidelity DESC, name) END
           AS frontier_rank
FROM marked;

-- metric: ufs_frontier_points | grain: one row per (criteria_set, judge_model, agent, proxy)
-- source: ufs_summary | caveat: helper for ufs_frontier; proxies without a cost are left out
CREATE OR REPLACE VIEW ufs_frontier_points AS
SELECT concat_ws(' | ', criteria_set, judge_model, agent) AS grp, proxy AS name,
       cost_per_sim_usd AS cost, mean_ufs AS fidelity
FROM ufs_summary WHERE cost_per_sim_usd IS NOT NULL AND mean_ufs IS NOT NULL;

-- metric: ufs_frontier_points_engine | grain: one row per (criteria_set, judge_model, agent, proxy)
-- source: ufs_summary | caveat: helper for ufs_frontier's second axis (engine seconds per simulation)
CREATE OR REPLACE VIEW ufs_frontier_points_engine AS
SELECT concat_ws(' | ', criteria_set, judge_model, agent) AS grp, proxy AS name,
       engine_s_per_sim AS cost, mean_ufs AS fidelity
FROM ufs_summary WHERE engine_s_per_sim IS NOT NULL AND mean_ufs IS NOT NULL;

-- metric: ufs_frontier | grain: one row per (criteria_set, judge_model, agent, proxy)
-- source: ufs_summary, ufs_pareto | spec: §A.7.1 (dominated †), §A.7.3 (U*(q) = argmin C s.t. UFS >= q), Fig. 1
-- caveat: two axes: cost per simulation (USD) and engine seconds per simulation; a proxy missing
-- an axis's value has NULLs for that axis. U*(q) is: ORDER BY cost_per_sim_usd LIMIT 1 over
-- rows with mean_ufs >= q.
CREATE OR REPLACE VIEW ufs_frontier AS
SELECT s.criteria_set, s.judge_model, s.agent, s.proxy, s.mean_ufs, s.mean_reward,
       s.cost_per_sim_usd, c.dominated AS dominated, c.dominated_by AS dominated_by,
       c.frontier_rank AS frontier_rank,
       s.engine_s_per_sim, x.dominated AS dominated_engine, x.dominated_by AS dominated_by_engine,
       x.frontier_rank AS frontier_rank_engine
FROM ufs_summary s
LEFT JOIN ufs_pareto('ufs_frontier_points') c
       ON c.grp = concat_ws(' | ', s.criteria_set, s.judge_model, s.agent) AND c.name = s.proxy
LEFT JOIN ufs_pareto('ufs_frontier_points_engine') x
       ON x.grp = concat_ws(' | ', s.criteria_set, s.judge_model, s.agent) AND x.name = s.proxy
ORDER BY s.criteria_set, s.judge_model, s.agent, s.cost_per_sim_usd, s.proxy;

-- metric: ufs_criteria_summary | grain: one row per (criteria_set, domain)
-- source: ufs_criteria_tasks x ufs_criteria | spec: §A.4 (2,141 criteria, 5.7 per task)
-- caveat: graded = kept + flagged; per_task divides graded criteria by the tasks in the set
CREATE OR REPLACE VIEW ufs_criteria_summary AS
SELECT t.criteria_set, t.domain,
       count(DISTINCT t.task_id)                                     AS tasks,
       count(c.criterion_id)                                         AS criteria,
       count(c.criterion_id) FILTER (WHERE c.status = 'kept')        AS kept,
       count(c.criterion_id) FILTER (WHERE c.status = 'flagged')     AS flagged,
       count(c.criterion_id) FILTER (WHERE c.status = 'dropped')     AS dropped,
       count(c.criterion_id) FILTER (WHERE c.status IN ('kept', 'flagged'))
           / count(DISTINCT t.task_id)                               AS graded_per_task
FROM ufs_criteria_tasks t
LEFT JOIN ufs_criteria c USING (criteria_set, domain, task_id)
GROUP BY ALL
ORDER BY criteria_set, domain;

-- metric: ufs_criteria_modes | grain: one row per (criteria_set, domain, family, mode)
-- source: ufs_criteria | spec: §A.5 (18 of 19 modes received criteria)
-- caveat: graded criteria only (kept + flagged)
CREATE OR REPLACE VIEW ufs_criteria_modes AS
SELECT criteria_set, domain, family, mode, count(*) AS criteria,
       count(*) FILTER (WHERE applies_when <> 'always') AS conditional
FROM ufs_criteria
WHERE status IN ('kept', 'flagged')
GROUP BY ALL
ORDER BY criteria_set, domain, family, mode;
