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


def test_the_table_command_prints_one_row_per_domain() -> None:
    if not (RECORDING / "mock" / "cases.json").is_file() or not (DATA / "domains" / "mock").is_dir():
        pytest.skip(f"the recorded suite or tau2 data is not at {RECORDING / 'mock'} / {DATA}")
    from click.testing import CliRunner

    from uxlocal.cli import cli

    result = CliRunner().invoke(
        cli,
        ["tau2", "conformance", "--domain", "mock", "--recording", str(RECORDING), "--tau2-data", str(DATA)],
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| mock "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "330 / 2,005" and cells[2] == "4/4" and cells[3] == "2/2"
    missing = CliRunner().invoke(
        cli, ["tau2", "conformance", "--domain", "nowhere", "--recording", str(RECORDING)]
    )
    assert missing.exit_code != 0 and "no recorded suite" in missing.output
