-- 004_generation_tools.sql
-- Why: native tool calling and top-token log-probabilities (issue 45, the engine contract): a
-- generation keeps the tools it was shown, the tool calls the engine parsed from its output, and
-- the top alternatives per generated token when the request asked for them (UXBench's GRM score).
-- Old rows: all three stay NULL (no tools shown, no calls parsed, no log-probabilities asked).
ALTER TABLE generations ADD COLUMN tools JSON;
ALTER TABLE generations ADD COLUMN tool_calls JSON;
ALTER TABLE generations ADD COLUMN top_logprobs JSON;
