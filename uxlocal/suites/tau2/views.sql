-- metric: tau2_episodes | grain: one row per (run_id, episode_id) of a tau2 run
-- source: episodes x runs (suite = 'tau2'), turns, tool_calls, episode_cost | spec: userproxybench.md §B.2, §B.4.8
-- caveat: an episode that failed with a bug (status 'failed') counts as infrastructure_error, which
-- tau2 leaves out of average reward and pass^k; success = |reward - 1| <= 1e-6 as in tau2's metrics.
-- dialogue_turns counts text messages (greeting included), messages the whole trajectory.
-- protocol: 'upstream' (tau2-bench's requests from a checkout, comparable) or 'ours' (older rows
-- without it are ours); NULL for an episode that failed before it recorded its info.
CREATE OR REPLACE VIEW tau2_episodes AS
WITH turn_counts AS (
    SELECT run_id, episode_id,
           count(*)                                          AS messages,
           count(*) FILTER (WHERE role IN ('assistant', 'user')) AS seat_messages
    FROM turns GROUP BY run_id, episode_id
), calls AS (
    SELECT run_id, episode_id,
           count(*)                                   AS tool_calls,
           count(*) FILTER (WHERE NOT ok)             AS tool_errors,
           count(*) FILTER (WHERE requestor = 'user') AS user_tool_calls
    FROM tool_calls GROUP BY run_id, episode_id
), cost AS (
    SELECT run_id, episode_id,
           sum(cost_usd)                               AS cost_usd,
           sum(cost_usd) FILTER (WHERE role = 'agent') AS agent_cost_usd,
           sum(cost_usd) FILTER (WHERE role = 'user')  AS user_cost_usd,
           sum(cost_usd) FILTER (WHERE role = 'judge') AS judge_cost_usd,
           sum(prompt_tokens + completion_tokens)      AS tokens
    FROM episode_cost GROUP BY run_id, episode_id
)
SELECT e.run_id, e.episode_id, e.task AS domain, substr(e.item_id, length(e.task) + 2) AS task_id, e.trial,
       CASE WHEN e.status = 'done' THEN e.termination ELSE 'infrastructure_error' END AS termination,
       coalesce(e.reward, 0.0)                                                  AS reward,
       e.status = 'done' AND abs(coalesce(e.reward, 0.0) - 1.0) <= 1e-6         AS success,
       coalesce(tc.messages, 0)                                                 AS messages,
       coalesce(tc.seat_messages, 0) - coalesce(c.tool_calls, 0)                AS dialogue_turns,
       coalesce(c.tool_calls, 0)                                                AS tool_calls,
       coalesce(c.tool_errors, 0)                                               AS tool_errors,
       coalesce(c.user_tool_calls, 0)                                           AS user_tool_calls,
       CAST(json_extract(e.info, '$.errors') AS INTEGER)                        AS errors,
       CAST(json_array_length(json_extract(e.info, '$.format_errors')) AS INTEGER) AS format_errors,
       coalesce(co.tokens, 0)                                                   AS tokens,
       coalesce(co.cost_usd, 0.0)                                               AS cost_usd,
       coalesce(co.agent_cost_usd, 0.0)                                         AS agent_cost_usd,
       coalesce(co.user_cost_usd, 0.0)                                          AS user_cost_usd,
       coalesce(co.judge_cost_usd, 0.0)                                         AS judge_cost_usd,
       CASE WHEN e.info IS NULL THEN NULL
            ELSE coalesce(json_extract_string(e.info, '$.protocol'), 'ours') END   AS protocol
FROM episodes e
JOIN runs r ON r.run_id = e.run_id AND r.suite = 'tau2'
LEFT JOIN turn_counts tc ON tc.run_id = e.run_id AND tc.episode_id = e.episode_id
LEFT JOIN calls c ON c.run_id = e.run_id AND c.episode_id = e.episode_id
LEFT JOIN cost co ON co.run_id = e.run_id AND co.episode_id = e.episode_id;

-- metric: tau2_summary | grain: one row per (run_id, domain)
-- source: tau2_episodes | spec: userproxybench.md §B.2 (avg_reward, success)
-- caveat: avg_reward and success_rate leave infrastructure_error episodes out; the means of turns,
-- tool calls and cost are over every episode. mean_user_tool_calls counts the user seat's own calls
-- (telecom's phone tools; 0 in domains without user tools), which mean_tool_calls includes.
-- infrastructure_errors counts the episodes left out; comparable is true when every episode that
-- recorded its protocol ran upstream's (tau2-bench's requests), false when any ran ours.
CREATE OR REPLACE VIEW tau2_summary AS
SELECT run_id, domain,
       count(*)                                                             AS episodes,
       count(DISTINCT task_id)                                              AS tasks,
       count(*) FILTER (WHERE termination <> 'infrastructure_error')        AS scored_episodes,
       count(*) FILTER (WHERE termination = 'infrastructure_error')         AS infrastructure_errors,
       coalesce(bool_and(protocol = 'upstream'), false)                     AS comparable,
       avg(reward) FILTER (WHERE termination <> 'infrastructure_error')     AS avg_reward,
       avg(CAST(success AS DOUBLE)) FILTER (WHERE termination <> 'infrastructure_error') AS success_rate,
       avg(dialogue_turns)                                                  AS mean_turns,
       avg(messages)                                                        AS mean_messages,
       avg(tool_calls)                                                      AS mean_tool_calls,
       avg(tool_errors)                                                     AS mean_tool_errors,
       avg(cost_usd)                                                        AS mean_cost_usd,
       sum(cost_usd)                                                        AS total_cost_usd,
       avg(user_tool_calls)                                                 AS mean_user_tool_calls
FROM tau2_episodes
GROUP BY run_id, domain
ORDER BY run_id, domain;

-- metric: tau2_pass_k | grain: one row per (run_id, domain, k), k = 1 .. the fewest trials of any task
-- source: tau2_episodes | spec: userproxybench.md §B.2: pass^k = mean over tasks of C(c, k) / C(n, k)
-- caveat: n and c count a task's trials without infrastructure_error; C(c,k)/C(n,k) is computed as
-- prod_{i<k} (c-i)/(n-i), which is exactly 0 when c < k.
CREATE OR REPLACE VIEW tau2_pass_k AS
WITH per_task AS (
    SELECT run_id, domain, task_id, count(*) AS n, count(*) FILTER (WHERE success) AS c
    FROM tau2_episodes
    WHERE termination <> 'infrastructure_error'
    GROUP BY run_id, domain, task_id
), ks AS (
    SELECT run_id, domain, unnest(range(1, min(n) + 1)) AS k
    FROM per_task GROUP BY run_id, domain
)
SELECT ks.run_id, ks.domain, ks.k,
       avg(list_product(list_transform(range(ks.k), lambda i: (p.c - i)::DOUBLE / (p.n - i)))) AS pass_k,
       count(*) AS tasks
FROM ks JOIN per_task p ON p.run_id = ks.run_id AND p.domain = ks.domain
GROUP BY ks.run_id, ks.domain, ks.k
ORDER BY ks.run_id, ks.domain, ks.k;

-- metric: tau2_terminations | grain: one row per (run_id, domain, termination)
-- source: tau2_episodes | spec: userproxybench.md §B.2, §B.3.3 (termination reasons)
-- caveat: only user_stop and agent_stop are scored; every other reason has reward 0
CREATE OR REPLACE VIEW tau2_terminations AS
SELECT run_id, domain, termination,
       count(*)                                                          AS episodes,
       count(*) / sum(count(*)) OVER (PARTITION BY run_id, domain)       AS share,
       avg(reward)                                                       AS mean_reward,
       avg(dialogue_turns)                                               AS mean_turns
FROM tau2_episodes
GROUP BY run_id, domain, termination
ORDER BY run_id, domain, episodes DESC, termination;

-- metric: tau2_cost | grain: one row per (run_id, domain, role)
-- source: episode_cost (common.sql) x tau2_episodes | caveat: prices come from the model presets;
-- generations include retried (unusable) outputs and cache hits, i.e. the cost of producing the
-- result; per-episode means divide by every episode of the domain, judged or not.
CREATE OR REPLACE VIEW tau2_cost AS
WITH n AS (SELECT run_id, domain, count(*) AS episodes FROM tau2_episodes GROUP BY run_id, domain)
SELECT c.run_id, e.domain, c.role, n.episodes,
       sum(c.generations)                                      AS generations,
       sum(c.prompt_tokens)                                    AS prompt_tokens,
       sum(c.completion_tokens)                                AS completion_tokens,
       sum(c.prompt_tokens + c.completion_tokens) / n.episodes AS tokens_per_episode,
       sum(c.cost_usd)                                         AS total_cost_usd,
       sum(c.cost_usd) / n.episodes                            AS cost_per_episode_usd
FROM episode_cost c
JOIN tau2_episodes e ON e.run_id = c.run_id AND e.episode_id = c.episode_id
JOIN n ON n.run_id = e.run_id AND n.domain = e.domain
GROUP BY c.run_id, e.domain, c.role, n.episodes
ORDER BY c.run_id, e.domain, c.role;
