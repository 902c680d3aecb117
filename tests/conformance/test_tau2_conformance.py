"""tau2 as upstream shows it to a model: the recorded conformance suite, every case, every domain.

The recording (``../shared/conformance/tau2``, upstream tau2-bench at 8ebb749) holds upstream's
output, error flag and state hash for every call and the reward info of every scored case; the
thresholds are issue 29's. Skipped with the reason when ``../shared`` is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlocal.tau2.conformance import CONFORMANCE_DOMAINS, compare_domain, details

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
RECORDING = SHARED / "conformance" / "tau2"
DATA = SHARED / "data" / "tau2"


@pytest.mark.slow
@pytest.mark.parametrize("domain", CONFORMANCE_DOMAINS)
def test_every_recorded_call_behaves_as_upstream(domain: str) -> None:
    if not (RECORDING / domain / "cases.json").is_file() or not (DATA / "domains" / domain).is_dir():
        pytest.skip(f"the recorded suite or tau2 data is not at {RECORDING / domain} / {DATA}")
    report = compare_domain(domain, RECORDING, DATA)
    why = details(report, show=3)
    assert report.words_error is None, why
    assert report.schemas_agent[0] == report.schemas_agent[1] > 0, why
    assert report.schemas_user[0] == report.schemas_user[1], why
    assert report.setup_errors == 0, why
    assert report.error_same == report.calls, why
    assert report.state_same == report.calls, why
    assert report.reward_same == report.scored > 0, why
    assert report.components_same == report.scored, why
    assert report.text_same >= 0.99 * report.calls, why
