"""UserProxyBench's evaluation layer: the User Fidelity Score (UFS) and everything around it.

Spec userproxybench.md Part A. Model-free pieces (this package): the violation taxonomy,
criteria (blueprints, the writer/verifier schemas, exact grounding, the frozen store), the
writer/verifier/grader prompts and the grader's trajectory view, UFS arithmetic with bootstrap
intervals and violation effects, the cost-fidelity frontier and its plot, deterministic
pre-checks, and ingest of tau2 / tau-bench v1 trajectory files. Metrics are SQL views in
``suites/userproxy/views.sql``. See README.md for the map.
"""

from .criteria import (
    MAX_CRITERIA,
    MIN_CRITERIA,
    VERIFIER_CHECKS,
    Blueprint,
    Criterion,
    FileCriterion,
    Screened,
    apply_review,
    grounding_problem,
    grounding_source,
    read_criteria_jsonl,
    screen,
    screen_file_rows,
    user_only_problem,
    verifier_schema,
    write_criteria_jsonl,
    writer_schema,
)
from .frontier import TABLE_1, FrontierRow, Point, cheapest_at, efficient, pareto, table1_points
from .ingest import IngestReport, ingest_tau2, ingest_taubench_v1, rebuild_results
from .prechecks import PRECHECK_FAMILY, PrecheckResult, run_prechecks
from .programs import CriteriaJob, GradingJob, criteria_program, grading_program, task_criteria_from_outcome
from .prompts import Grade, grader_request, parse_grade, prompt_hashes
from .render import render_trajectory
from .scoring import (
    CriterionVerdict,
    EpisodeRecord,
    bootstrap_ufs,
    delta_pass_rate,
    domain_ufs,
    effort_delta,
    episode_status,
    mean_ufs,
    success_violations,
    violation_counts,
)
from .store import Provenance, TaskCriteria, load_criteria, save_criteria
from .taxonomy import FAMILIES, MODES, Mode

__all__ = [
    "FAMILIES",
    "MAX_CRITERIA",
    "MIN_CRITERIA",
    "MODES",
    "PRECHECK_FAMILY",
    "TABLE_1",
    "VERIFIER_CHECKS",
    "Blueprint",
    "CriteriaJob",
    "Criterion",
    "CriterionVerdict",
    "EpisodeRecord",
    "FileCriterion",
    "FrontierRow",
    "Grade",
    "GradingJob",
    "IngestReport",
    "Mode",
    "Point",
    "PrecheckResult",
    "Provenance",
    "Screened",
    "TaskCriteria",
    "apply_review",
    "bootstrap_ufs",
    "cheapest_at",
    "criteria_program",
    "delta_pass_rate",
    "domain_ufs",
    "effort_delta",
    "efficient",
    "episode_status",
    "grader_request",
    "grading_program",
    "grounding_problem",
    "grounding_source",
    "ingest_tau2",
    "ingest_taubench_v1",
    "load_criteria",
    "mean_ufs",
    "pareto",
    "parse_grade",
    "prompt_hashes",
    "read_criteria_jsonl",
    "rebuild_results",
    "render_trajectory",
    "run_prechecks",
    "save_criteria",
    "screen",
    "screen_file_rows",
    "success_violations",
    "table1_points",
    "task_criteria_from_outcome",
    "user_only_problem",
    "verifier_schema",
    "violation_counts",
    "write_criteria_jsonl",
    "writer_schema",
]
