"""The PALATE suite end to end on a scripted engine: episodes, verdicts, views, report tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from palate_script import respond
from prefix_layout import assert_conversation_then_question

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError
from uxlocal.runner import bind_roles, run_suite
from uxlocal.store.db import connect
from uxlocal.suites.base import get_suite
from uxlocal.suites.palate.agreement import ScoredTurn, pairwise_agreement
from uxlocal.suites.palate.options import PalateConfig, parse_candidates
from uxlocal.suites.palate.report import report_tables

CONFIG = {
    "candidates": "A=fake,B=fake",
    "users": "u1,u3",
    "panel_cards": 3,
    "max_turns": 4,
    "heldout_sessions": 2,
    "realism_turns": 2,
}


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(respond)


def _run(engine: FakeEngine, tmp_path: Path, *, fresh: bool = False, **overrides: Any) -> Any:
    pool = ModelPool.from_engines(
        {"candidate:A": engine, "candidate:B": engine, "user": engine, "judge": engine}
    )
    run = RunConfig(
        suite="palate",
        suite_config={**CONFIG, **overrides},
        db=str(tmp_path / "p.duckdb"),
        progress=False,
        fresh=fresh,
    )
    return run_suite(run, pool=pool)


def test_palate_run_produces_three_axes_matrix_agreement_and_realism(
    engine: FakeEngine, tmp_path: Path
) -> None:
    result = _run(engine, tmp_path)
    assert result.stats.episodes_failed == 0
    # 2 induce + 2 candidates x 2 users x 3 cards + 2 users x 2 sessions + 2 x 2 x 2 realism
    assert result.stats.episodes_done == 2 + 12 + 4 + 8
    titles = [t.title for t in result.tables]
    for needle in ("axis 1", "axis 2", "axis 3", "agreement", "realism", "rubrics"):
        assert any(needle in t for t in titles), needle
    axis1 = next(t for t in result.tables if "axis 1" in t.title)
    assert {(r[0], r[4]) for r in axis1.rows} == {("A", "5.00"), ("B", "2.00")}
    matrix = next(t for t in result.tables if "axis 3" in t.title)
    assert matrix.columns == ["user", "A", "B"]
    assert [row for row in matrix.rows] == [
        ("u1", "5.00 (#1)", "2.00 (#2)"),
        ("u3", "5.00 (#1)", "2.00 (#2)"),
    ]


def test_sessions_stop_on_quit_and_store_the_stop_reason(engine: FakeEngine, tmp_path: Path) -> None:
    result = _run(engine, tmp_path)
    con = connect(result.db, read_only=True)
    rows = con.execute(
        "SELECT stop_reason, candidate_turns, user_turns, count(*) FROM palate_trajectories GROUP BY ALL"
    ).fetchall()
    # user, reply, user, reply, [QUIT]: two replies, three user turns
    assert rows == [("user_quit", 2, 3, 12)]
    texts = con.execute(
        "SELECT role, content FROM turns WHERE episode_id = 'traj/A/prompted/u1/"
        f"{_first_card(con)}/0' ORDER BY idx"
    ).fetchall()
    assert texts[0][0] == "assistant" and texts[-1] == ("user", "[QUIT]")


def _first_card(con: Any) -> str:
    return con.execute("SELECT min(card_id) FROM palate_trajectories").fetchone()[0]


def test_turn_cap_ends_the_session_after_the_reaction_to_the_last_reply(
    engine: FakeEngine, tmp_path: Path
) -> None:
    result = _run(engine, tmp_path, max_turns=1, parts="trajectories")
    con = connect(result.db, read_only=True)
    assert con.execute(
        "SELECT DISTINCT stop_reason, candidate_turns, user_turns FROM palate_trajectories"
    ).fetchall() == [("turn_cap", 1, 2)]


def test_agreement_view_equals_the_python_definition(engine: FakeEngine, tmp_path: Path) -> None:
    result = _run(engine, tmp_path)
    con = connect(result.db, read_only=True)
    view = {
        (s, u): (p, a)
        for s, u, p, a in con.execute(
            "SELECT scorer, user_id, pairs, agreement FROM palate_agreement"
        ).fetchall()
    }
    turns = con.execute(
        "SELECT scorer, user_id, session_id, human_rating, score FROM palate_agreement_turns"
    ).fetchall()
    assert {s for s, _ in view} == {"general", "personal", "personal_noreact"}
    for (scorer, user), (pairs, value) in view.items():
        mine = pairwise_agreement(
            ScoredTurn(t[2], t[3], t[4]) for t in turns if t[0] == scorer and t[1] == user
        )
        assert mine.pairs == pairs and mine.value == pytest.approx(value)


def test_realism_coin_puts_the_simulated_turn_on_both_sides(engine: FakeEngine, tmp_path: Path) -> None:
    result = _run(engine, tmp_path)
    con = connect(result.db, read_only=True)
    sides = {
        r[0]
        for r in con.execute(
            "SELECT value->>'$.sim_label' FROM palate_verdicts WHERE track = 'realism'"
        ).fetchall()
    }
    assert sides == {"A", "B"}  # a judge that always answers A is not scored as always fooled
    rates = con.execute("SELECT picked_simulated FROM palate_realism").fetchall()
    assert rates == [(0.5,), (0.5,)]  # the fake judge always answers A; sides alternate per user


def test_rubric_is_induced_once_per_user_and_recorded_with_its_version(
    engine: FakeEngine, tmp_path: Path
) -> None:
    result = _run(engine, tmp_path)
    inductions = [p for p in engine.requests if p.request.tag == "induce"]
    assert len({p.request_hash for p in inductions}) == 2 and len(inductions) == 2  # others hit the cache
    con = connect(result.db, read_only=True)
    rubrics = con.execute("SELECT user_id, rubric_version, source FROM palate_rubrics ORDER BY 1").fetchall()
    assert [r[0] for r in rubrics] == ["u1", "u3"] and all(
        r[1].startswith("palate-rubric-v1:") for r in rubrics
    )
    used = {
        r[0]
        for r in con.execute(
            "SELECT DISTINCT value->>'$.rubric_sha256' FROM palate_verdicts WHERE track = 'personal_turn'"
        ).fetchall()
    }
    assert len(used) == 2
    rubric_table = next(
        t for t in report_tables(con, result.run_id) if t.title == "PALATE personalized rubrics"
    )
    assert f"uxlocal query --db {result.db} " in rubric_table.note  # the hint is copy-pasteable


def test_invalid_rubric_falls_back_to_the_profile_summary(tmp_path: Path) -> None:
    def broken_rubric(prepared: PreparedRequest) -> str:
        return "{" if prepared.request.tag == "induce" else respond(prepared)

    result = _run(FakeEngine(broken_rubric), tmp_path, parts="agreement")
    con = connect(result.db, read_only=True)
    assert {r[0] for r in con.execute("SELECT source FROM palate_rubrics").fetchall()} == {"fallback"}
    assert any("rubric agreement" in t.title for t in result.tables)


def test_rerun_is_served_from_the_cache(engine: FakeEngine, tmp_path: Path) -> None:
    first = _run(engine, tmp_path)
    calls = engine.calls
    again = _run(engine, tmp_path, fresh=True)  # a new run id, every generation replayed from the store
    assert again.run_id != first.run_id and again.stats.episodes_done == first.stats.episodes_done
    assert again.stats.cache_hits == again.stats.requests and engine.calls == calls
    assert again.tables[0].rows == first.tables[0].rows


def test_zh_user_gets_chinese_prompts_everywhere(engine: FakeEngine, tmp_path: Path) -> None:
    _run(engine, tmp_path, users="u3", parts="trajectories")
    systems = {p.request.role: p.request.messages[0]["content"] for p in engine.requests}
    assert "你是" in systems["candidate:A"] and "真人用户" in systems["user"]
    assert "只用JSON回答" in systems["judge"]


def test_candidates_become_roles_and_the_user_seat_defaults_to_the_judge() -> None:
    suite = get_suite("palate")
    specs = bind_roles(suite, {"candidates": "embedded,big=/models/Qwen3-8B@hf"}, {"judge": "qwen3-32b"})
    assert specs == {
        "judge": "qwen3-32b",
        "candidate:embedded": "embedded",
        "candidate:big": "/models/Qwen3-8B@hf",
        "user": "qwen3-32b",
    }
    assert [c.name for c in parse_candidates("models/Llama-3@hf,embedded")] == ["Llama-3@hf", "embedded"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"candidates": "x=embedded,x=fake"}, "appears twice"),  # two candidates with one name
        ({"parts": "trajectories,nope"}, "parts: nope not in"),  # unknown part
        ({"simulator": "persona"}, "simulator: persona not in"),  # unknown simulator kind
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises((InputError, ValueError), match=message):
        PalateConfig(**options)


def test_trajectories_without_candidates_is_a_clear_error(engine: FakeEngine, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="needs --candidates"):
        _run(engine, tmp_path, candidates="")


def test_changed_panel_card_stops_the_run(engine: FakeEngine, tmp_path: Path) -> None:
    from uxlocal.suites.palate.cardfiles import load_cards
    from uxlocal.suites.palate.profiles import write_cards

    cards = load_cards()
    cards[77] = cards[77].model_copy(update={"tags": [*cards[77].tags, "pace:fast"]})  # c0078 is on the panel
    write_cards(cards, tmp_path / "pool.jsonl")
    with pytest.raises(InputError, match="card c0078 changed since the panel was frozen"):
        _run(engine, tmp_path, cards=str(tmp_path / "pool.jsonl"))


def test_demo_settings_are_valid_and_bind_every_role(engine: FakeEngine, tmp_path: Path) -> None:
    spec = get_suite("palate").demo()
    assert spec is not None and spec.unavailable is None
    config = PalateConfig(**spec.config)
    assert set(spec.roles) == {"user", "judge"} | {c.role for c in parse_candidates(config.candidates)}
    pool = ModelPool.from_engines({role: engine for role in spec.roles})
    run = RunConfig(suite="palate", suite_config=spec.config, db=str(tmp_path / "d.duckdb"), progress=False)
    result = run_suite(run, pool=pool)
    assert result.stats.episodes_failed == 0 and len(result.tables) >= 5


def test_lora_simulator_requests_name_the_users_adapter(engine: FakeEngine, tmp_path: Path) -> None:
    _run(engine, tmp_path, simulator="prompted,lora", users="u2", panel_cards=1)
    users = [p.request for p in engine.requests if p.request.role == "user"]
    seats = {(r.tag.split(":")[0], r.lora) for r in users}
    assert seats == {("user", None), ("user", "palate-u2"), ("realism", None), ("realism", "palate-u2")}
    lora_system = next(p for p in engine.requests if p.request.lora).request.messages[0]["content"]
    assert "Write the user's next message, or [QUIT] to leave." in lora_system
    assert "About this user" not in lora_system  # no persona: style comes from the user's data


def _reply_groups(engine: FakeEngine, tags: tuple[str, ...]) -> list[list[PreparedRequest]]:
    """Return runs of adjacent requests in one batch whose tags are ``tags`` with the same turn number."""
    groups = []
    for batch in engine.batches:
        for i, prepared in enumerate(batch):
            tag = prepared.request.tag or ""
            if tag.startswith(tags[0] + ":"):
                number = tag.split(":", 1)[1]
                run = batch[i:i + len(tags)]
                assert [p.request.tag for p in run] == [f"{t}:{number}" for t in tags]  # adjacent
                groups.append(run)
    return groups


@pytest.mark.parametrize("tags", [
    ("agree_general", "agree_personal", "agree_personal_noreact"),  # held-out replies, three scorers
    ("general", "personal"),  # panel trajectories, the general and the personal turn judge
])
def test_turn_judge_prompts_share_the_conversation_prefix_when_one_reply_gets_k_judges(
    tmp_path: Path, tags: tuple[str, ...]
) -> None:
    # issue 17: character, conversation and reply first; the rubric (general or personal) after
    engine = FakeEngine(respond)
    _run(engine, tmp_path, agreement_without_reaction=True)
    groups = _reply_groups(engine, tags)
    assert groups
    for group in groups:
        prompts = [p.prompt for p in group]
        zh = "此前的对话：" in prompts[0]
        start, end = ("此前的对话：", "\n\n任务：") if zh else ("Conversation so far:", "\n\nTask:")
        conversation = prompts[0].split(start, 1)[1].split(end, 1)[0]
        assert ("待评分的回复：" if zh else "Reply to rate:") in conversation
        questions = (
            ["为这条回复的质量打分", "这条回复之后用户的下一条消息", "给出这位用户对该回复的满意度"]
            if zh
            else ["rate the quality", "The user's next message", "Rate this user's satisfaction"]
        )
        if len(tags) == 2:
            questions = questions[:1] + (["预测某一位特定用户"] if zh else ["predict how satisfied"])
        assert_conversation_then_question(prompts, [conversation], questions)
