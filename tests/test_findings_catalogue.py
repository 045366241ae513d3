"""The finding catalogue (kafkatool/findings.py) against the code that emits findings and the docs that list them.

The package is read as source (``ast``): every code any module can emit is catalogued, every catalogued code is
emitted somewhere, every Finding is built by :func:`kafkatool.findings.finding` (so its severity is the
catalogue's), and ``docs/findings.md`` is the catalogue's own table.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool import findings
from kafkatool.findings import CATALOGUE, finding, markdown
from kafkatool.model import SEVERITIES

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkatool"
FORMATS = ROOT / "formats"
# Callables that take a code where the constructor does, though not named after a ``code`` parameter the scan
# can see: ``Sink.__call__`` (log_check), called through its instances, all named ``sink``.
CALLABLE_WRAPPERS = {"sink": (0, False)}


def _modules() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))
            if "formats" not in p.relative_to(PACKAGE).parts}


def _name(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.FunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node  # type: ignore[return-value]
    return None


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args) if a.arg not in ("self", "cls")]


def _wrappers(modules: dict[Path, ast.Module]) -> dict[str, tuple[int, bool]]:
    """Functions that pass their ``code`` parameter on as a finding's code: name -> (the code's position, whether
    it is a method, called as ``self.name``)."""
    found = dict(CALLABLE_WRAPPERS)
    for tree in modules.values():
        parents = _parents(tree)
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and "code" in _params(fn) and fn.name != "__call__" and any(
                    isinstance(c, ast.Call) and _name(c.func) == "finding" and c.args
                    and isinstance(c.args[0], ast.Name) and c.args[0].id == "code" for c in ast.walk(fn)):
                found[fn.name] = (_params(fn).index("code"), isinstance(parents.get(fn), ast.ClassDef))
    return found


def _text_file_codes() -> set[str]:
    """The codes formats/ raises in a TextFileError (a reader turns ``e.code`` into the finding's code)."""
    return {c.args[0].value for p in FORMATS.rglob("*.py") for c in ast.walk(ast.parse(p.read_text()))
            if isinstance(c, ast.Call) and _name(c.func) == "TextFileError" and c.args
            and isinstance(c.args[0], ast.Constant)}


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


class _Resolver:
    """The codes an expression in the code position can have: a literal, a choice between literals, a module
    constant, a value of a module-level table of codes, a local assigned from those, or a TextFileError's code.
    A parameter of a wrapper, or a loop variable (a code re-emitted by a summary), is the callers' business."""

    def __init__(self, tree: ast.Module, wrappers: dict[str, tuple[int, bool]]) -> None:
        self.tree, self.wrappers, self.parents = tree, wrappers, _parents(tree)
        self.module_values = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                              for t in n.targets if isinstance(t, ast.Name)}

    def codes(self, expr: ast.expr, at: ast.AST) -> set[str] | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.IfExp):
            a, b = self.codes(expr.body, at), self.codes(expr.orelse, at)
            return None if a is None or b is None else a | b
        if isinstance(expr, ast.Subscript):
            table = expr.value
            while isinstance(table, ast.Subscript):
                table = table.value
            if isinstance(table, ast.Name) and isinstance(self.module_values.get(table.id), ast.Dict):
                return set().union(*(_strings(v) for v in self.module_values[table.id].values))  # type: ignore[union-attr]
            return None
        if isinstance(expr, ast.Attribute) and expr.attr == "code":
            return _text_file_codes()
        if isinstance(expr, ast.Name):
            return self._name(expr.id, at)
        return None

    def _name(self, name: str, at: ast.AST) -> set[str] | None:
        fn = _function(at, self.parents)
        if fn is not None:
            if name in _params(fn):
                return set() if fn.name in self.wrappers or fn.name == "__call__" else None
            for node in ast.walk(fn):
                targets = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} \
                    if isinstance(node, ast.For) else set()
                if name in targets:
                    return set()  # a code taken from findings already made (a summary)
            assigned: set[str] = set()
            for node in ast.walk(fn):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        got = self.codes(node.value, node)
                    elif isinstance(target, ast.Tuple) and name in [getattr(e, "id", None) for e in target.elts]:
                        got = self._unpacked(node.value, [getattr(e, "id", None) for e in target.elts].index(name))
                    else:
                        continue
                    if got is None:
                        return None
                    assigned |= got
            if assigned:
                return assigned
        value = self.module_values.get(name)
        return self.codes(value, at) if value is not None else None

    def _unpacked(self, value: ast.expr, i: int) -> set[str] | None:
        """``code, meaning = TABLE[key]``: the i-th element of every value of the table."""
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
            table = self.module_values.get(value.value.id)
            if isinstance(table, ast.Dict):
                return {v.elts[i].value for v in table.values if isinstance(v, ast.Tuple)
                        and isinstance(v.elts[i], ast.Constant)}
        return None


def _sites() -> list[tuple[str, set[str] | None]]:
    """(where, the codes it can emit; None: cannot tell) for every call in the code position of a finding."""
    modules = _modules()
    wrappers = _wrappers(modules)
    sites = []
    for path, tree in modules.items():
        resolver = _Resolver(tree, wrappers)
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call):
                continue
            name = _name(call.func)
            i, method = (0, False) if name == "finding" else wrappers.get(name or "", (None, False))
            # a function wrapper is called by its name, a method as self.name (not bytes.find, nor a local `find`)
            ours = (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self") if method else isinstance(call.func, ast.Name)
            if i is None or len(call.args) <= i or not ours:
                continue
            sites.append((f"{path.relative_to(ROOT)}:{call.lineno}", resolver.codes(call.args[i], call)))
    return sites


@functools.cache
def _emitted() -> frozenset[str]:
    sites = _sites()
    unknown = [where for where, codes in sites if codes is None]
    assert not unknown, f"finding codes the scan cannot resolve (make them literals or table values): {unknown}"
    return frozenset().union(*(codes for _, codes in sites if codes))


def test_every_emitted_code_is_catalogued() -> None:
    missing = _emitted() - set(CATALOGUE)
    assert not missing, f"emitted but not in kafkatool/findings.py: {sorted(missing)}"


def test_every_catalogued_code_is_emitted() -> None:
    unused = set(CATALOGUE) - _emitted()
    assert not unused, f"catalogued but emitted nowhere: {sorted(unused)}"


def test_the_scan_sees_codes_passed_through_constants_tables_and_exceptions() -> None:
    """The scan is only worth its name if it follows the indirect codes (a scan that sees literals only would let
    an uncatalogued table value through)."""
    emitted = _emitted()
    assert {"io-error",                                   # dump.IO_ERROR
            "leftover-swap", "log-start-below-log-start",  # verify's tables
            "index-missing-large",                         # segment_check._MISSING
            "checkpoint-count-mismatch", "clean-shutdown-unreadable",  # formats' TextFileError, via e.code
            "offset-below-segment-base"} <= emitted        # the loader's local `code`


def test_no_finding_is_built_outside_the_catalogue_constructor() -> None:
    """Every Finding takes its severity from the catalogue: ``Finding(...)`` is called only by the constructor and
    by CappedFindings' summary (which repeats the severity of a finding already made)."""
    allowed = {PACKAGE / "findings.py", PACKAGE / "model.py"}
    built = [f"{path.relative_to(ROOT)}:{call.lineno}" for path, tree in _modules().items() if path not in allowed
             for call in ast.walk(tree) if isinstance(call, ast.Call) and _name(call.func) == "Finding"]
    assert not built, f"Finding built outside kafkatool.findings.finding: {built}"
    literal = [f"{path.relative_to(ROOT)}:{call.lineno}" for path, tree in _modules().items()
               for call in ast.walk(tree) if isinstance(call, ast.Call) and _name(call.func) in ("finding", "sink")
               and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value in SEVERITIES]
    assert not literal, f"a severity passed where the code goes: {literal}"


def test_every_entry_is_complete() -> None:
    for code, entry in CATALOGUE.items():
        assert entry.code == code and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), code
        assert entry.severity in SEVERITIES, code
        assert entry.meaning.strip() and "\n" not in entry.meaning and "|" not in entry.meaning, code
        assert entry.reference.strip() and "|" not in entry.reference, code
        assert entry.reference == findings.KAFKATOOL or re.fullmatch(r"[A-Za-z][\w.]*", entry.reference), code
    assert len(CATALOGUE) == len(findings._ENTRIES), "a code catalogued twice"


def test_the_constructor_takes_the_catalogues_severity() -> None:
    assert finding("zero-filled-tail", "p", 3, "m") == ("warning", "zero-filled-tail", "p", 3, "m")
    assert finding("index-preallocated-rolled", "p", None, "m").severity == "warning"
    assert finding("crc-mismatch", "p", None, "m").severity == "error"
    with pytest.raises(KeyError):
        finding("no-such-code", "p", None, "m")


def test_docs_findings_md_is_the_catalogue() -> None:
    committed = (ROOT / "docs" / "findings.md").read_text()
    assert committed == markdown(), "docs/findings.md is stale: python -m kafkatool.findings --markdown > it"
    listed = re.findall(r"^\| `([a-z0-9-]+)` \| (info|warning|error) \|", committed, re.M)
    assert listed == [(e.code, e.severity) for e in CATALOGUE.values()]


def test_the_generator_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "kafkatool.findings", "--markdown"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == markdown()


def test_readme_links_to_the_catalogue_instead_of_listing_codes() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/findings.md" in readme
    assert "Finding codes of record files:" not in readme
