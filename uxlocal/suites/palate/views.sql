-- PALATE metric views. Three axes are reported side by side and never merged into one number.
-- Spec: ../shared/specs/palate.md (§4 rubrics and agreement, §5 axes); programs that write the
-- rows: uxlocal/suites/palate/episodes.py (verdict names and episode info keys).
-- A JSON arrow right after AND/OR/NOT stands in parentheses (DuckDB before 2.0 binds ->> looser
-- than AND: see uxlocal/suites/judge/views.sql).

-- metric: palate_verdicts | grain: one row per verdict of a finished PALATE episode
-- source: runs (suite = 'palate') x episodes (info JSON) x verdicts | spec: palate.md §4
-- caveat: track and position come from the verdict name ("general_turn:2" -> general_turn, 2);
-- score is NULL for an invalid judge output, which every metric below leaves out
CREATE OR REPLACE VIEW palate_verdicts AS
SELECT e.run_id, e.episode_id, e.trial, e.termination,
       e.info->>'$.kind'       AS kind,
       e.info->>'$.candidate'  AS candidate,
       e.info->>'$.user_id'    AS user_id,
       e.info->>'$.card_id'    AS card_id,
       e.info->>'$.simulator'  AS simulator,
       e.info->>'$.session_id' AS session_id,
       split_part(v.name, ':', 1) AS track,
       TRY_CAST(nullif(split_part(v.name, ':', 2), '') AS INTEGER) AS position,
       v.valid, CASE WHEN v.valid THEN v.score END AS score, v.label, v.value, v.judge_model
FROM episodes e
JOIN runs r ON r.run_id = e.run_id AND r.suite = 'palate'
JOIN verdicts v ON v.run_id = e.run_id AND v.episode_id = e.episode_id
WHERE e.status = 'done';

-- metric: palate_trajectories | grain: one row per finished session (candidate, user, card, trial)
-- source: episodes with info.kind = 'trajectory' | spec: palate.md §3.3 (free-form, [QUIT], cap)
-- caveat: stop_reason is user_quit, turn_cap, or an early end (empty_user_turn, empty_reply,
-- context_window, error); candidate_turns excludes the card's greeting
CREATE OR REPLACE VIEW palate_trajectories AS
SELECT e.run_id, e.episode_id, e.trial,
       e.info->>'$.candidate' AS candidate,
       e.info->>'$.user_id'   AS user_id,
       e.info->>'$.card_id'   AS card_id,
       e.info->>'$.simulator' AS simulator,
       e.termination          AS stop_reason,
       CAST(e.info->>'$.candidate_turns' AS INTEGER) AS candidate_turns,
       CAST(e.info->>'$.user_turns' AS INTEGER)      AS user_turns
FROM episodes e
JOIN runs r ON r.run_id = e.run_id AND r.suite = 'palate'
WHERE e.status = 'done' AND (e.info->>'$.kind') = 'trajectory';

-- metric: palate_turn_quality (axis 1, generic turn quality) | grain: one row per (run_id, candidate, simulator)
-- source: palate_verdicts, track general_turn | spec: palate.md §5 row 1
-- caveat: a turn's score is the mean of the five general criteria (1-5); every reply of every
-- session weighs the same, so users who stay longer weigh more
CREATE OR REPLACE VIEW palate_turn_quality AS
SELECT run_id, candidate, simulator,
       count(score)                 AS turns_scored,
       count(*) - count(score)      AS turns_invalid,
       avg(score)                   AS turn_quality
FROM palate_verdicts
WHERE kind = 'trajectory' AND track = 'general_turn'
GROUP BY ALL;

-- metric: palate_session_capability (axis 2) | grain: one row per (run_id, candidate, simulator)
-- source: palate_trajectories left join palate_verdicts (track session) | spec: palate.md §5 row 2
-- caveat: session score is the judge's "overall"; a session without a candidate reply has no
-- session verdict and counts in sessions but not in sessions_scored
CREATE OR REPLACE VIEW palate_session_capability AS
SELECT t.run_id, t.candidate, t.simulator,
       count(*)                  AS sessions,
       count(v.score)            AS sessions_scored,
       avg(v.score)              AS session_capability,
       avg(t.candidate_turns)    AS mean_replies,
       avg(CASE WHEN t.stop_reason = 'user_quit' THEN 1.0 ELSE 0.0 END) AS quit_rate,
       count(*) FILTER (WHERE t.stop_reason NOT IN ('user_quit', 'turn_cap')) AS ended_early
FROM palate_trajectories t
LEFT JOIN palate_verdicts v ON v.run_id = t.run_id AND v.episode_id = t.episode_id AND v.track = 'session'
GROUP BY ALL;

-- metric: palate_user_experience (axis 3) | grain: one row per (run_id, simulator, user_id, candidate)
-- source: palate_verdicts, track personal_turn | spec: palate.md §5 row 3 (user x candidate matrix)
-- caveat: scored with that user's induced rubric and the simulator's next turn as evidence;
-- user_rank is competition ranking (1 = best, ties share the better rank) within the user
CREATE OR REPLACE VIEW palate_user_experience AS
WITH cell AS (
    SELECT run_id, simulator, user_id, candidate,
           count(score) AS turns_scored, count(*) - count(score) AS turns_invalid, avg(score) AS personal_score
    FROM palate_verdicts
    WHERE kind = 'trajectory' AND track = 'personal_turn'
    GROUP BY ALL
)
SELECT *, CASE WHEN personal_score IS NOT NULL THEN
              rank() OVER (PARTITION BY run_id, simulator, user_id ORDER BY personal_score DESC NULLS LAST) END
          AS user_rank
FROM cell;

-- metric: palate_behaviour | grain: one row per (run_id, candidate, simulator)
-- source: palate_trajectories, palate_verdicts (personal_turn labels) | spec: palate.md §5 (extra signals)
-- caveat: reactions are the judge's reading of the simulator's next turn, not the simulator's own label
CREATE OR REPLACE VIEW palate_behaviour AS
WITH reactions AS (
    SELECT run_id, candidate, simulator, count(label) AS judged,
           avg(CASE WHEN label = 'continue' THEN 1.0 ELSE 0.0 END) FILTER (WHERE label IS NOT NULL) AS continue_share,
           avg(CASE WHEN label IN ('correct', 'repeat') THEN 1.0 ELSE 0.0 END) FILTER (WHERE label IS NOT NULL)
               AS correct_or_repeat_share,
           avg(CASE WHEN label = 'change_topic' THEN 1.0 ELSE 0.0 END) FILTER (WHERE label IS NOT NULL)
               AS change_topic_share
    FROM palate_verdicts WHERE kind = 'trajectory' AND track = 'personal_turn'
    GROUP BY ALL
), stops AS (
    SELECT run_id, candidate, simulator, count(*) AS sessions,
           count(*) FILTER (WHERE stop_reason = 'user_quit') AS user_quit,
           count(*) FILTER (WHERE stop_reason = 'turn_cap')  AS turn_cap,
           count(*) FILTER (WHERE stop_reason NOT IN ('user_quit', 'turn_cap')) AS ended_early,
           avg(user_turns) AS mean_user_turns
    FROM palate_trajectories GROUP BY ALL
)
SELECT s.*, r.continue_share, r.correct_or_repeat_share, r.change_topic_share
FROM stops s LEFT JOIN reactions r USING (run_id, candidate, simulator);

-- metric: palate_agreement_turns | grain: one row per (run_id, scorer, held-out session, rated turn)
-- source: palate_verdicts, tracks agree_* | spec: palate.md §4.4
-- caveat: scorer is general, personal (with the user's real next turn as evidence) or
-- personal_noreact (same rubric, no evidence); score NULL = invalid judge output
CREATE OR REPLACE VIEW palate_agreement_turns AS
SELECT run_id, episode_id, user_id, session_id,
       replace(track, 'agree_', '')                    AS scorer,
       position                                         AS turn_idx,
       CAST(value->>'$.human_rating' AS DOUBLE)         AS human_rating,
       value->>'$.human_reaction'                       AS human_reaction,
       score
FROM palate_verdicts
WHERE kind = 'agreement' AND track LIKE 'agree_%';

-- metric: palate_agreement | grain: one row per (run_id, scorer, user_id)
-- source: palate_agreement_turns self-joined within a session | spec: palate.md §4.4
-- caveat: pairs = turns of one session with different human ratings; a scorer tie counts 0.5
-- (chance stays 0.5); pairs with a missing score are left out and counted in pairs_missing.
-- Bootstrap intervals, Kendall's tau and the macro row come from agreement.py (the report).
CREATE OR REPLACE VIEW palate_agreement AS
WITH pairs AS (
    SELECT a.run_id, a.scorer, a.user_id,
           CASE WHEN a.score IS NULL OR b.score IS NULL THEN NULL
                WHEN a.score = b.score THEN 0.5
                WHEN sign(a.score - b.score) = sign(a.human_rating - b.human_rating) THEN 1.0
                ELSE 0.0 END AS outcome
    FROM palate_agreement_turns a
    JOIN palate_agreement_turns b
      ON a.run_id = b.run_id AND a.episode_id = b.episode_id AND a.scorer = b.scorer AND a.turn_idx < b.turn_idx
    WHERE a.human_rating <> b.human_rating
)
SELECT run_id, scorer, user_id,
       count(outcome)                 AS pairs,
       count(*) - count(outcome)      AS pairs_missing,
       avg(outcome)                   AS agreement,
       avg(CASE WHEN outcome = 0.5 THEN 1.0 ELSE 0.0 END) FILTER (WHERE outcome IS NOT NULL) AS tie_share
FROM pairs
GROUP BY ALL;

-- metric: palate_realism | grain: one row per (run_id, simulator, user_id)
-- source: palate_verdicts, track realism | spec: palate.md §3.4 (2AFC)
-- caveat: picked_simulated = share of valid trials where the judge took the simulated turn for the
-- real one (0.5 = indistinguishable); the shown order is a per-trial coin, so position bias cancels
CREATE OR REPLACE VIEW palate_realism AS
SELECT run_id, simulator, user_id,
       count(*) FILTER (WHERE valid) AS trials,
       avg(CASE WHEN CAST(value->>'$.picked_simulated' AS BOOLEAN) THEN 1.0 ELSE 0.0 END) FILTER (WHERE valid)
           AS picked_simulated,
       avg(score) AS p_simulated
FROM palate_verdicts
WHERE kind = 'realism' AND track = 'realism'
GROUP BY ALL;

-- metric: palate_rubrics | grain: one row per (run_id, user_id)
-- source: palate_verdicts, track rubric (the induce episode) | spec: palate.md §4.2
-- caveat: source = fallback when the judge's rubric did not parse (the profile summary is used)
CREATE OR REPLACE VIEW palate_rubrics AS
SELECT run_id, user_id,
       value->>'$.version' AS rubric_version,
       value->>'$.sha256'  AS rubric_sha256,
       value->>'$.source'  AS source,
       value->'$.criteria' AS criteria,
       judge_model
FROM palate_verdicts
WHERE kind = 'induce' AND track = 'rubric';
