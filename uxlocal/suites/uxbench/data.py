"""UXBench data files in, validated and normalized items out.

Layer contract: reads the four JSONL files, returns frozen pydantic items plus quarantine
records; no prompts, no metrics, no store, no logging.

Accepted spellings (spec ``uxbench.md`` §1.2-1.5):

- T1 history ``selected_history`` or ``history``; query ``source_query.message`` (a dict),
  ``source_query`` (a plain string) or ``query``; reply ``agent_response_full`` (or ``response``).
- Turn text ``content`` or ``message``; ``content`` wins when both are non-empty, as upstream.
- Any history or ``messages`` field: a list, a JSON string or a Python-literal string. JSON is
  tried first because it is the stricter parser; ``ast.literal_eval`` takes the rest.
- A rich ``agent_response_full`` (JSON ``{"content": [{"msg": ..., "type": ...}], ...}``) is
  reduced to its text parts; the item keeps ``response_raw`` and sets ``response_was_rich``.

Decisions where the spec is silent (each is stated again where it is coded):

- Blank lines are skipped but still counted, so ``source_line`` matches an editor's line number.
- ``item_id`` is the row's ``cid``, else ``<file stem>:<line>``; a cid used twice in one task is
  an error naming both places (upstream's resume silently double-counted such rows, spec §7).
- ``difficulty`` and label fields are free text (trimmed; ``""`` becomes ``None``): they feed
  breakdowns only, and rejecting a 2,000-row file over a label spelling helps nobody.
- Roles are normalized to ``user``/``assistant``/``system`` (``ai``, ``bot``, ``model`` mean
  assistant, ``human`` means user); any other role is a bad row, since chat templates reject it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from uxlocal.errors import InputError
from uxlocal.lang import Lang, detect_lang

TurnRole = Literal["user", "assistant", "system"]
Task = Literal["judge", "eval", "recovery"]
GroundTruth = Literal[-1, 1]

# ---------------------------------------------------------------- taxonomy (spec §4)

SCENARIOS: dict[str, str] = {
    "信息与知识查询": "Info",
    "创意内容与生成": "Creative",
    "娱乐消遣": "Fun",
    "私密与生活决策辅助": "Daily",
    "产品与服务咨询": "Service",
    "情绪与心理支持": "Emotion",
    "办公与效率": "Work",
}
"""The 7 scenario labels found in the data, mapped to the paper figures' short names."""

FAILURE_DIMENSIONS: dict[str, tuple[str, ...]] = {
    "Verbosity / Redundancy": ("冗余啰嗦", "冗余"),
    "Task Incompleteness": ("任务未完成",),
    "Intent Misunderstanding": ("意图理解偏差", "意图识别偏差", "需求澄清不足"),
    "Factual Error": ("事实性错误",),
    "Information Reliability Issue": ("信息可靠性不足",),
    "Instruction / Format Failure": ("指令遵循失败", "格式结构问题", "格式问题"),
    "Insufficiently Informative": ("信息不充分", "回答无效/无用"),
    "Emotional Tone Mismatch": ("情感语气失当", "情感响应失当"),
    "Safety / Refusal Issue": ("过度拒绝", "安全合规问题"),
    "System / Technical Error": ("系统技术错误",),
}
"""English failure dimension -> the Chinese labels that mean it (some mappings are the spec's
inferences: 需求澄清不足, the format and refusal pairs)."""

SUCCESS_PATTERNS: dict[str, tuple[str, ...]] = {
    "Accurate Answering": ("准确回答",),
    "Knowledge Depth": ("知识深度",),
    "Comprehensive Detail": ("全面详细",),
    "Problem Solving": ("解决问题",),
    "Practical Guidance / Actionability": ("实用性/操作指导", "实用性", "操作指导"),
    "Creative Generation": ("创意生成",),
    "Task Completion": ("任务完成",),
    "Empathetic Support": ("共情支持",),
}
"""English success pattern -> its Chinese labels."""

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "very_hard")


def _canonical(table: dict[str, tuple[str, ...]], label: str | None) -> str | None:
    if label is None:
        return None
    text = label.strip()
    for english, chinese in table.items():
        if text.casefold() == english.casefold() or text in chinese:
            return english
    return None


def canonical_dimension(label: str | None) -> str | None:
    """English failure dimension for a zh or en label, so breakdowns pool both languages.

    Returns None for unknown labels (including 其他) rather than guessing.
    """
    return _canonical(FAILURE_DIMENSIONS, label)


def canonical_success(label: str | None) -> str | None:
    """English success pattern for a zh or en label; None when unknown."""
    return _canonical(SUCCESS_PATTERNS, label)


def canonical_scenario(label: str | None) -> str | None:
    """Short English scenario name (Info, Creative, ...) for a zh label or a short name."""
    if label is None:
        return None
    text = label.strip()
    if text in SCENARIOS:
        return SCENARIOS[text]
    return text if text in SCENARIOS.values() else None


# ---------------------------------------------------------------- field parsers

_ROLE_ALIASES = {"ai": "assistant", "bot": "assistant", "model": "assistant", "human": "user"}


class Turn(BaseModel):
    """One message of a conversation, normalized to ``{role, content}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: TurnRole
    content: str

    @model_validator(mode="before")
    @classmethod
    def _accept_spellings(cls, data: Any) -> Any:
        """Take ``content`` or ``message`` and drop the release's extra turn keys."""
        if not isinstance(data, dict):
            return data
        role = data.get("role")
        if isinstance(role, str):
            role = _ROLE_ALIASES.get(role.strip().lower(), role.strip().lower())
        text = data.get("content") or data.get("message")
        return {"role": role, "content": "" if text is None else text}


def parse_history(value: Any) -> Any:
    """Turn a history given as a list, a JSON string or a Python-literal string into a list.

    Raises ValueError for a string that is neither; anything else is left to pydantic.
    """
    if value is None:
        return []
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return []
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("is a string that is neither JSON nor a Python literal list") from None


def _non_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("is empty")
    return text


def _blank_to_none(value: Any) -> Any:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def _lower(value: str | None) -> str | None:
    return value.lower() if value else value


def _id_to_str(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _blank_to_none(value)


def _parse_ground_truth(value: Any) -> Any:
    """Accept -1/1 as int, integral float or string; reject bools and everything else."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip() in {"-1", "1", "+1"}:
        return int(value.strip())
    if isinstance(value, int | float) and not isinstance(value, bool) and value in (-1, 1):
        return int(value)
    raise ValueError(f"must be -1 (disliked) or 1 (liked), got {value!r}")


History = Annotated[list[Turn], BeforeValidator(parse_history)]
NonBlank = Annotated[str, AfterValidator(_non_blank)]
Label = Annotated[str | None, BeforeValidator(_blank_to_none)]


def _query_text(value: Any) -> Any:
    """``source_query`` may be ``{turn_index, message}`` or a plain string."""
    if isinstance(value, dict):
        text = value.get("message") or value.get("content")
        if text is None:
            raise ValueError("is a dict without 'message'")
        return text
    return value


# ---------------------------------------------------------------- raw row shapes


class _Row(BaseModel):
    """Fields every task shares; unknown keys are metadata and ignored."""

    model_config = ConfigDict(extra="ignore")

    cid: Annotated[str | None, BeforeValidator(_id_to_str)] = None
    scenario: Label = None
    difficulty: Annotated[Label, AfterValidator(_lower)] = None


class _JudgeRow(_Row):
    ground_truth: Annotated[GroundTruth | None, BeforeValidator(_parse_ground_truth)] = None
    history: History = Field(default_factory=list,
                             validation_alias=AliasChoices("selected_history", "history"))
    query: Annotated[NonBlank, BeforeValidator(_query_text)] = Field(
        validation_alias=AliasChoices("source_query", "query"))
    response: str | dict[str, Any] = Field(validation_alias=AliasChoices("agent_response_full", "response"))
    failure_dimension: Label = None
    success_dimension: Label = None


class _EvalRow(_Row):
    messages: History = Field(default_factory=list)
    history: History = Field(default_factory=list)
    query: Label = None
    dimension: Label = Field(None, validation_alias=AliasChoices("dimension", "failure_dimension"))


class _RecoveryRow(_Row):
    history: History = Field(default_factory=list)
    failed_response: str
    user_complaint: NonBlank
    failure_dimension: Label = Field(None, validation_alias=AliasChoices("failure_dimension", "dimension"))


# ---------------------------------------------------------------- normalized items


class _Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    """The row's cid, else ``<file stem>:<line>``; unique within a task."""
    lang: Lang
    """Language of the user's words (``detect_lang``); picks the prompt language."""
    scenario: str | None = None
    difficulty: str | None = None
    """easy / medium / hard / very_hard in the release, lower-cased; None when blank."""
    source_file: str
    """File name only (not the folder), so stored items do not carry machine paths."""
    source_line: int
    """1-based physical line in ``source_file``."""


class JudgeItem(_Item):
    """A T1 record: judge whether the user liked ``response``."""

    ground_truth: GroundTruth
    """-1 the user disliked the reply, 1 liked it."""
    history: list[Turn]
    query: str
    response: str
    """The judged reply's text (rich JSON already reduced to text)."""
    response_was_rich: bool = False
    response_raw: str | None = None
    """The original JSON string when ``response_was_rich``, for a faithful-raw variant."""
    failure_dimension: str | None = None
    success_dimension: str | None = None


EvalMessagesSource = Literal["messages", "messages+query", "history+query"]


class EvalItem(_Item):
    """A T2 record: the candidate writes the next reply to ``messages``."""

    messages: list[Turn]
    """Chat for generation; always ends with the user ``query``."""
    history: list[Turn]
    """What the judge sees before the query (no system turns when derived from ``messages``)."""
    query: str
    dimension: str | None = None
    """Failure label of the original conversation (metadata only)."""
    messages_source: EvalMessagesSource
    """How ``messages`` was obtained: given, given plus the appended query, or built."""


class RecoveryItem(_Item):
    """A T3 record: the candidate answers ``user_complaint`` after its ``failed_response``."""

    history: list[Turn]
    failed_response: str
    """May be empty in the release; the judge then sees no prior reply."""
    user_complaint: str
    failure_dimension: str | None = None


ItemT = TypeVar("ItemT", JudgeItem, EvalItem, RecoveryItem)


@dataclass(frozen=True)
class QuarantineRecord:
    """A row ``skip_bad_rows=True`` set aside, ready for a quarantine table."""

    task: Task
    file: str
    """The path as the loader opened it, as in the error message."""
    line: int
    field: str | None
    """Offending field (a spelling from the file), None for whole-line problems."""
    reason: str
    raw: str
    """The line as read, without its newline."""


@dataclass(frozen=True)
class Loaded(Generic[ItemT]):
    """Items that loaded and the rows set aside (empty unless ``skip_bad_rows``)."""

    items: list[ItemT]
    quarantine: list[QuarantineRecord]


class UXBenchFiles(BaseModel):
    """File names of the four released files; relative names resolve against the data folder."""

    model_config = ConfigDict(frozen=True)

    judge_bad: str = "uxbench_task1_judge_bad_1k.jsonl"
    """T1 disliked replies; rows without ground_truth get -1."""
    judge_good: str = "uxbench_task1_judge_good_1k.jsonl"
    """T1 liked replies; rows without ground_truth get 1."""
    eval: str = "uxbench_task2_eval_4900.jsonl"
    """T2 conversations awaiting the candidate's next reply."""
    recovery: str = "uxbench_task3_recovery_500.jsonl"
    """T3 failed replies and the users' complaints."""

    def path(self, data_dir: str | Path, name: str) -> Path:
        """Resolve one file name against ``data_dir`` (absolute names are kept)."""
        candidate = Path(name)
        return candidate if candidate.is_absolute() else Path(data_dir) / candidate


# ---------------------------------------------------------------- row errors


class _RowProblem(Exception):
    """Why one row is bad; the loader turns it into an InputError or a quarantine record."""

    def __init__(self, field: str | None, problem: str, hint: str = "") -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem
        self.hint = hint

    def message(self) -> str:
        return f"{self.field}: {self.problem}" if self.field else self.problem


def _spellings(model: type[BaseModel], name: str) -> str:
    """``selected_history|history`` for a field known by several keys."""
    for field_name, info in model.model_fields.items():
        alias = info.validation_alias
        choices = [str(c) for c in alias.choices] if isinstance(alias, AliasChoices) else [field_name]
        if name in choices or name == field_name:
            return "|".join(choices)
    return name


def _validate(model: type[BaseModel], row: dict[str, Any]) -> Any:
    """Validate one row; the first pydantic error becomes a _RowProblem naming its field."""
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first.get("loc", ())]
        if first.get("type") == "missing":
            raise _RowProblem(_spellings(model, loc[0]), "missing") from None
        message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
        raise _RowProblem(".".join(loc) or None, message) from None


# ---------------------------------------------------------------- per-task builders


@dataclass(frozen=True)
class _RowContext:
    path: Path
    line: int
    implied_truth: GroundTruth | None = None
    name: str = ""
    """How items name their file (``source_file``); the file name when empty."""

    @property
    def default_id(self) -> str:
        return f"{self.path.stem}:{self.line}"

    def common(self, row: _Row) -> dict[str, Any]:
        """Fill the _Item fields every builder fills the same way."""
        return {"item_id": row.cid or self.default_id, "scenario": row.scenario, "difficulty": row.difficulty,
                "source_file": self.name or self.path.name, "source_line": self.line}


def _user_words(history: Iterable[Turn], *extra: str) -> str:
    return "\n".join([t.content for t in history if t.role == "user"] + list(extra))


def _all_words(history: Iterable[Turn], *extra: str) -> str:
    return "\n".join([t.content for t in history] + list(extra))


def extract_rich_text(raw: str) -> str | None:
    """Text of a JSON rich reply (``{"content": [{"msg", "type"}], ...}``), None if not one.

    Text parts are the ``msg`` strings, joined by blank lines; parts whose ``type`` mentions
    thinking or reasoning are dropped, as the harness ignores reasoning traces elsewhere.
    Returns "" for a rich reply with no text part (the caller rejects it).
    """
    if not raw.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    parts = obj.get("content") if isinstance(obj, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    texts = [p["msg"].strip() for p in parts
             if isinstance(p.get("msg"), str) and p["msg"].strip() and not _is_reasoning(p.get("type"))]
    return "\n\n".join(texts)


def _is_reasoning(part_type: Any) -> bool:
    return isinstance(part_type, str) and any(w in part_type.lower() for w in ("think", "reason"))


def _response_text(value: str | dict[str, Any]) -> tuple[str, str | None]:
    """(text, raw JSON if the reply was rich)."""
    raw = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value
    text = extract_rich_text(raw)
    if text is None:
        if isinstance(value, dict):
            raise _RowProblem("agent_response_full", "is an object but not a rich message with content parts")
        if not raw.strip():
            raise _RowProblem("agent_response_full", "is empty")
        return raw, None
    if not text:
        raise _RowProblem("agent_response_full", "is a rich message without any text part")
    return text, raw


def _ground_truth(given: GroundTruth | None, ctx: _RowContext) -> GroundTruth:
    implied = ctx.implied_truth
    if given is None:
        if implied is None:
            raise _RowProblem("ground_truth", "missing and the file does not imply it")
        return implied
    if implied is not None and given != implied:
        kind = "disliked (bad)" if implied == -1 else "liked (good)"
        raise _RowProblem("ground_truth", f"is {given} but the row is in the {kind} file",
                          hint="move the row to the other file or fix its ground_truth")
    return given


def _build_judge(row: dict[str, Any], ctx: _RowContext) -> JudgeItem:
    parsed: _JudgeRow = _validate(_JudgeRow, row)
    truth = _ground_truth(parsed.ground_truth, ctx)
    response, raw = _response_text(parsed.response)
    lang = detect_lang(_user_words(parsed.history, parsed.query), _all_words(parsed.history, response))
    return JudgeItem(**ctx.common(parsed), lang=lang, ground_truth=truth, history=parsed.history,
                     query=parsed.query, response=response, response_was_rich=raw is not None,
                     response_raw=raw, failure_dimension=parsed.failure_dimension,
                     success_dimension=parsed.success_dimension)


def _eval_chat(parsed: _EvalRow) -> tuple[list[Turn], list[Turn], str, EvalMessagesSource]:
    """(messages, history, query, source) per spec §1.3: append the query when it is not last."""
    if not parsed.messages:
        if parsed.query is None:
            raise _RowProblem("messages|query", "missing: need messages, or history plus query")
        built = [*parsed.history, Turn(role="user", content=parsed.query)]
        return built, parsed.history, parsed.query, "history+query"
    messages, query = list(parsed.messages), parsed.query
    last = messages[-1]
    if query is None:
        if last.role != "user" or not last.content.strip():
            raise _RowProblem("query", "missing and the last message is not a user turn")
        query = last.content
    source: EvalMessagesSource = "messages"
    if last.role != "user" or last.content.strip() != query.strip():
        messages.append(Turn(role="user", content=query))
        source = "messages+query"
    # derived history: what came before the query, without system turns the judge never sees
    history = parsed.history or [t for t in messages[:-1] if t.role != "system"]
    return messages, history, query, source


def _build_eval(row: dict[str, Any], ctx: _RowContext) -> EvalItem:
    parsed: _EvalRow = _validate(_EvalRow, row)
    messages, history, query, source = _eval_chat(parsed)
    lang = detect_lang(_user_words(history, query), _all_words(messages))
    return EvalItem(**ctx.common(parsed), lang=lang, messages=messages, history=history, query=query,
                    dimension=parsed.dimension, messages_source=source)


def _build_recovery(row: dict[str, Any], ctx: _RowContext) -> RecoveryItem:
    parsed: _RecoveryRow = _validate(_RecoveryRow, row)
    lang = detect_lang(_user_words(parsed.history, parsed.user_complaint),
                       _all_words(parsed.history, parsed.failed_response))
    return RecoveryItem(**ctx.common(parsed), lang=lang, history=parsed.history,
                        failed_response=parsed.failed_response, user_complaint=parsed.user_complaint,
                        failure_dimension=parsed.failure_dimension)


# ---------------------------------------------------------------- file reading


def iter_rows(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line or row number, JSON bytes) of a JSONL or Parquet file, blank lines included.

    Parquet rows become JSON objects (nested columns as lists and objects, other values as text),
    so one row parser serves both formats the dataset card ships.
    """
    if not path.is_file():
        raise InputError("file not found",
                         hint="point the data folder at the released files or override this file's name",
                         path=path)
    if path.suffix == ".parquet":
        yield from _parquet_rows(path)
        return
    with path.open("rb") as handle:
        yield from enumerate(handle, start=1)


def _parquet_rows(path: Path) -> Iterator[tuple[int, bytes]]:
    import duckdb

    from uxlocal.store.offline import open_duckdb

    con = open_duckdb(":memory:")
    try:
        cursor = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
        names = [d[0] for d in cursor.description]
        for number, values in enumerate(cursor.fetchall(), start=1):
            row = dict(zip(names, values, strict=True))
            yield number, json.dumps(row, ensure_ascii=False, default=str).encode("utf-8")
    except duckdb.Error as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=path) from None
    finally:
        con.close()


HUB_CONFIGS = {"judge_bad": "task1_judge_bad", "judge_good": "task1_judge_good", "eval": "task2_eval",
               "recovery": "task3_recovery"}
"""The dataset card's configuration per released file (``load_dataset("mengze-hong/UXBench", cfg)``)."""
DATA_SUFFIXES = (".jsonl", ".json", ".parquet")


def task_files(data_dir: str | Path, files: UXBenchFiles, key: str) -> list[Path]:
    """Find the files holding one released file's rows, in reading order.

    Tried in turn: the named JSONL file; its Parquet twin (same stem); the hub's folder per
    configuration (``<config>/`` or ``data/<config>/``, every JSONL or Parquet shard inside,
    sorted); shards named after the configuration (``<config>-00000-of-00001.parquet``). When none
    exists the named file is returned, so the error names what was expected.
    """
    root = Path(data_dir)
    named = files.path(root, getattr(files, key))
    if named.is_file():
        return [named]
    if named.with_suffix(".parquet").is_file():
        return [named.with_suffix(".parquet")]
    config = HUB_CONFIGS[key]
    for folder in (root / config, root / "data" / config):
        shards = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES) \
            if folder.is_dir() else []
        if shards:
            return shards
    for folder in (root, root / "data"):
        pattern = f"{config}[-_.]*"
        shards = sorted(p for p in folder.glob(pattern) if p.is_file() and p.suffix in DATA_SUFFIXES)
        if shards:
            return shards
    return [named]


def source_name(data_dir: str | Path, path: Path) -> str:
    """How items name a data file: its path under the data folder, else its file name."""
    try:
        return path.resolve().relative_to(Path(data_dir).resolve()).as_posix()
    except ValueError:
        return path.name


def _decode_row(raw: bytes, line: int) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _RowProblem(None, f"not valid UTF-8 at byte {exc.start}") from None
    if line == 1:
        text = text.lstrip("\ufeff")
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _RowProblem(None, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(row, dict):
        raise _RowProblem(None, f"a row must be a JSON object, got {type(row).__name__}")
    return row


@dataclass(frozen=True)
class _Source:
    path: Path
    implied_truth: GroundTruth | None = None
    name: str = ""


def _load_task(task: Task, sources: list[_Source], build: Callable[[dict[str, Any], _RowContext], ItemT],
               *, skip_bad_rows: bool) -> Loaded[ItemT]:
    """Read every source in order; bad rows raise or, with ``skip_bad_rows``, go to quarantine."""
    items: list[ItemT] = []
    quarantine: list[QuarantineRecord] = []
    first_seen: dict[str, tuple[Path, int]] = {}
    for source in sources:
        for line, raw in iter_rows(source.path):
            if not raw.strip():
                continue
            try:
                ctx = _RowContext(source.path, line, source.implied_truth, source.name)
                item = build(_decode_row(raw, line), ctx)
                _claim_id(first_seen, item.item_id, source.path, line)
            except _RowProblem as problem:
                if not skip_bad_rows:
                    raise InputError(problem.message(), problem.hint, path=source.path, line=line) from None
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                quarantine.append(QuarantineRecord(task, str(source.path), line, problem.field,
                                                   problem.problem, text))
                continue
            items.append(item)
    return Loaded(items, quarantine)


def _claim_id(first_seen: dict[str, tuple[Path, int]], item_id: str, path: Path, line: int) -> None:
    if item_id in first_seen:
        other_path, other_line = first_seen[item_id]
        raise _RowProblem("cid", f"duplicate cid {item_id!r}, first used at {other_path}:{other_line}",
                          hint="cids must be unique within a task")
    first_seen[item_id] = (path, line)


# ---------------------------------------------------------------- public loaders


def _sources(data_dir: str | Path, files: UXBenchFiles | None, key: str,
             implied_truth: GroundTruth | None = None) -> list[_Source]:
    paths = task_files(data_dir, files or UXBenchFiles(), key)
    return [_Source(p, implied_truth, source_name(data_dir, p)) for p in paths]


def load_judge(data_dir: str | Path, *, files: UXBenchFiles | None = None,
               skip_bad_rows: bool = False) -> Loaded[JudgeItem]:
    """T1 items from the bad file then the good file (ids unique across both).

    Ground truth is the row's own when present, else implied by the file; a row whose
    ground_truth contradicts its file is bad.
    """
    sources = _sources(data_dir, files, "judge_bad", -1) + _sources(data_dir, files, "judge_good", 1)
    return _load_task("judge", sources, _build_judge, skip_bad_rows=skip_bad_rows)


def load_eval(data_dir: str | Path, *, files: UXBenchFiles | None = None,
              skip_bad_rows: bool = False) -> Loaded[EvalItem]:
    """T2 items; ``messages`` is built or completed so it always ends with the query."""
    return _load_task("eval", _sources(data_dir, files, "eval"), _build_eval, skip_bad_rows=skip_bad_rows)


def load_recovery(data_dir: str | Path, *, files: UXBenchFiles | None = None,
                  skip_bad_rows: bool = False) -> Loaded[RecoveryItem]:
    """T3 items."""
    return _load_task("recovery", _sources(data_dir, files, "recovery"), _build_recovery,
                      skip_bad_rows=skip_bad_rows)


SAMPLE_DIR: Path = Path(__file__).resolve().parents[2] / "data" / "uxbench"
"""Bundled sample data written for uxlocal (CC0-1.0), in the released file names and schema."""
