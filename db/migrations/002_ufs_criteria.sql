-- 002_ufs_criteria.sql
-- Why: this migration created UserProxyBench's criteria tables (ufs_criteria_tasks, ufs_criteria).
-- They belong to the suite and now come with it: uxlocal/suites/userproxy/migrations/
-- 001_ufs_criteria.sql (issue 45). The number stays so that core numbers remain contiguous.
-- Old rows: untouched. A store that ran this file before keeps its tables; the suite's migration
-- creates them only where they are missing.
SELECT 1;
