"""A tau2-bench checkout read as source text: modules parsed with ``ast``, never imported.

Where a model must see upstream's exact words (tool descriptions, the agent's instructions, the
judge's prompt), uxlocal reads them from the user's own checkout at run time, so the words are
theirs and no copy of them lives in our code. This module finds the checkout, parses its modules
on demand (cached per file), resolves names through ``from … import`` to the module that defines
them, and evaluates the few constant expressions prompts are written as (string literals,
``.strip()``, ``+``). Everything else about the source (the schema builder, the prompts) lives in
``upstream_tools.py`` and ``upstream_words.py``.

A checkout whose source does not have the shape we read raises ``CheckoutError`` naming the file,
the line when known, and 8ebb749, the upstream version uxlocal reproduces.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

REPRODUCED_VERSION = "8ebb749"
"""The tau2-bench commit whose behaviour uxlocal reproduces (sierra-research/tau2-bench@8ebb749)."""


class CheckoutError(ValueError):
    """The checkout's source is not shaped as tau2-bench 8ebb749's; the message says where."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem} (uxlocal reproduces tau2-bench {REPRODUCED_VERSION}; "
                         "use a checkout of that version, or pass --tau2-tools with its tool schemas)")


def checkout_root(data_root: Path) -> Path | None:
    """Find the checkout a tau2 data dir belongs to (``<checkout>/data/tau2``); None for a bare folder."""
    data_root = data_root.absolute()  # not resolved: a checkout may link its data folder in
    if data_root.name != "tau2" or data_root.parent.name != "data":
        return None
    root = data_root.parent.parent
    return root if (root / "src" / "tau2").is_dir() else None


@dataclass(eq=False)
class Module:
    """One parsed source file: its tree and its top-level definitions by name."""

    name: str
    path: Path
    tree: ast.Module
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``local name -> (module, name)`` for every top-level ``from module import name``."""

    def where(self, node: ast.AST | None = None) -> str:
        """``path:line`` of a node (``path`` alone without one), for error messages."""
        line = getattr(node, "lineno", None)
        return f"{self.path}:{line}" if line else str(self.path)


class Checkout:
    """A tau2-bench checkout: ``src/tau2/…`` parsed lazily, plus ``data/tau2/…``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.src = self.root / "src"
        self._modules: dict[str, Module] = {}

    def module(self, dotted: str) -> Module:
        """Parse ``tau2.x.y`` (``src/tau2/x/y.py`` or its package ``__init__``); cached."""
        if dotted not in self._modules:
            self._modules[dotted] = self._parse(dotted)
        return self._modules[dotted]

    def has_module(self, dotted: str) -> bool:
        """Whether the checkout has that module's source file."""
        return self._file(dotted) is not None

    def _file(self, dotted: str) -> Path | None:
        base = self.src.joinpath(*dotted.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
        return None

    def _parse(self, dotted: str) -> Module:
        path = self._file(dotted)
        if path is None:
            raise CheckoutError(str(self.src.joinpath(*dotted.split("."))) + ".py", "file not found")
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as err:
            raise CheckoutError(f"{path}:{err.lineno}", f"not parseable Python: {err.msg}") from None
        module = Module(dotted, path, tree)
        for node in tree.body:
            _index(module, node)
        return module

    def resolve(self, module: Module, name: str) -> tuple[Module, ast.stmt] | None:
        """Follow ``name`` to the module that defines it; None when it comes from outside tau2."""
        seen = 0
        while seen < 20:  # an import cycle in someone's checkout must not hang us
            seen += 1
            if name in module.defs:
                return module, module.defs[name]
            source = module.imports.get(name)
            if source is None or not source[0].startswith("tau2") or not self.has_module(source[0]):
                return None
            module, name = self.module(source[0]), source[1]
        return None

    def digest(self, files: list[Path]) -> str:
        """sha256 over the given files' paths (relative to the checkout) and bytes, in order."""
        hasher = hashlib.sha256()
        for path in files:
            hasher.update(path.relative_to(self.root).as_posix().encode() + b"\0")
            hasher.update(path.read_bytes() + b"\0")
        return hasher.hexdigest()

    def parsed_files(self) -> list[Path]:
        """List the source files parsed so far, sorted: what the words read from this checkout depend on."""
        return sorted({m.path for m in self._modules.values()})


def _index(module: Module, node: ast.stmt) -> None:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        module.defs[node.name] = node
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                module.defs[target.id] = node
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        module.defs[node.target.id] = node
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        for alias in node.names:
            module.imports[alias.asname or alias.name] = (node.module, alias.name)
    elif isinstance(node, ast.ImportFrom) and node.level > 0:
        package = module.name.split(".")
        if not module.path.name == "__init__.py":
            package = package[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        for alias in node.names:
            module.imports[alias.asname or alias.name] = (base, alias.name)
    elif isinstance(node, ast.If):  # names defined under ``if TYPE_CHECKING:`` and the like
        for inner in node.body + node.orelse:
            _index(module, inner)


def assigned_value(module: Module, name: str) -> ast.expr:
    """Return the expression a top-level ``name = …`` assigns; CheckoutError when there is none."""
    node = module.defs.get(name)
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
        return node.value
    raise CheckoutError(module.where(), f"no top-level assignment to {name}")


def string_value(module: Module, node: ast.expr) -> str:
    """Evaluate a constant string expression: literals, names of such, ``+``, ``.strip()`` and kin."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return string_value(module, assigned_value(module, node.id))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return string_value(module, node.left) + string_value(module, node.right)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
            and not node.keywords and node.func.attr in _STRING_METHODS):
        return str(getattr(string_value(module, node.func.value), node.func.attr)())
    raise CheckoutError(module.where(node), f"expected a constant string, found {ast.unparse(node)[:80]!r}")


_STRING_METHODS = frozenset({"strip", "lstrip", "rstrip"})


def function_in(module: Module, owner: str | None, name: str) -> ast.FunctionDef:
    """Find a top-level function, or a method of class ``owner``; CheckoutError naming both when absent."""
    scope: list[ast.stmt] = module.tree.body
    if owner is not None:
        cls = module.defs.get(owner)
        if not isinstance(cls, ast.ClassDef):
            raise CheckoutError(module.where(), f"no class {owner}")
        scope = cls.body
    for node in scope:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise CheckoutError(module.where(), f"no function {owner + '.' if owner else ''}{name}")
