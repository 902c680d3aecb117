"""Every ``uxlocal`` command in the README's and the docs' code blocks is real.

Each names a real command and real options, so the quick-starts cannot drift from the CLI.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from uxlocal.cli import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^ *```(?:bash|sh|shell)\n(.*?)^ *```", re.M | re.S)
COMMENT = re.compile(r"(^|\s)#.*$")
SHELL_OPERATORS = {"&&", ";", "|", "||", "(", ")", "done", "do"}


def shown_commands(text: str) -> list[list[str]]:
    """Return the argument lists of every ``uxlocal`` call in a page's shell code blocks (```bash)."""
    calls: list[list[str]] = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            lexer = shlex.shlex(COMMENT.sub("", line), posix=True, punctuation_chars=True)
            lexer.whitespace_split, lexer.commenters = True, ""
            current: list[str] | None = None
            for token in lexer:
                if token.rsplit("/", 1)[-1] == "uxlocal":
                    current = []
                    calls.append(current)
                elif token in SHELL_OPERATORS:
                    current = None
                elif current is not None:
                    current.append(token)
    return calls


def check_call(args: list[str]) -> list[str]:
    """Problems with one call: an unknown command or an option the command does not take."""
    command: click.Command = cli
    ctx = click.Context(cli, info_name="uxlocal")
    rest = list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            return [f"unknown command {rest[0]!r} under {ctx.command_path!r}"]
        ctx = click.Context(sub, parent=ctx, info_name=rest.pop(0))
        command = sub
    if rest and not rest[0].startswith("-"):
        # a command may hand its first word to another (``uxlocal judge train ...``)
        handed = command.make_context(ctx.info_name, list(rest), parent=ctx.parent, resilient_parsing=True)
        if handed.command is not command:
            ctx, command, rest = handed, handed.command, rest[1:]
    known = {opt for param in command.params for opt in [*param.opts, *param.secondary_opts]}
    known |= {"-h", "--help"}
    flags = [token.split("=", 1)[0] for token in rest if re.match(r"^--?[a-zA-Z]", token)]
    return [f"{ctx.command_path}: no option {flag}" for flag in flags if flag not in known]


def test_shown_commands_splits_side_by_side_and_chained_calls() -> None:
    text = ("```bash\n.ci/setup && .venv/bin/uxlocal demo\n"
            "uxlocal run a --shard 0/2     uxlocal run a --shard 1/2  # two boxes\n"
            "for d in x y; do uxlocal ufs criteria --domain $d; done\n"
            "uxlocal run b -m judge=http://h:8000/v1#name \\\n    --db s.duckdb\n```\n")
    assert shown_commands(text) == [["demo"], ["run", "a", "--shard", "0/2"], ["run", "a", "--shard", "1/2"],
                                    ["ufs", "criteria", "--domain", "$d"],
                                    ["run", "b", "-m", "judge=http://h:8000/v1#name", "--db", "s.duckdb"]]


def test_check_call_names_unknown_options_and_commands() -> None:
    assert check_call(["query", "--db", "x.duckdb", "select 1"]) == []
    assert check_call(["query", "--no-such-flag"]) == ["uxlocal query: no option --no-such-flag"]
    assert check_call(["nonsense"]) == ["unknown command 'nonsense' under 'uxlocal'"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_documented_commands_exist_with_their_options(page: Path) -> None:
    problems = [f"uxlocal {' '.join(call)}: {problem}"
                for call in shown_commands(page.read_text(encoding="utf-8")) for problem in check_call(call)]
    assert not problems
