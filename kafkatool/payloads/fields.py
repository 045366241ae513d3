"""Records with their keys and values decoded (``--key-decoder``/``--value-decoder``); filters on decoded fields.

The consumer's side of Kafka's ``Deserializer``: :class:`PayloadView` holds the key and value decoders a command was
given (:func:`kafkatool.payloads.payload_decoder`) and the field filters (``--value-field PATH --value-match REGEX``,
``--where 'value.customer.id == 42'``). It reads a record into a :class:`PayloadRecord` (the record, raw as ever,
with what its key and value decode to) and the ``payload-undecodable`` findings of what did not decode. The filters
are a predicate of their own, applied after decoding and after ``dump``'s byte-level search
(:class:`kafkatool.dump.RecordFilter`).

A PATH is dotted (``customer.id``; a whole number indexes a list: ``items.0.sku``). ``--*-match`` searches the
field's JSON text (compact; a string without its quotes) with a regular expression. ``--where`` is
``key|value[.PATH] OP LITERAL``, OP one of ``== != < <= > >= ~=``, the literal JSON (``~=``: a regular expression,
JSON string or bare); ``<``... compare numbers with numbers and strings with strings. A missing field, or a payload
that did not decode, matches nothing (``!=`` included).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..findings import finding
from ..model import Finding, Record
from ..walk import partition_of
from . import Decoded, PayloadDecoder, SchemaSources, payload_decoder
from .decoded import PayloadRecord, compact

_MISSING = object()


@dataclass(frozen=True)
class FieldTest:
    """One filter on a decoded field: ``side`` (key or value), the PATH's steps, and the test of the field's value;
    ``option`` is how it was given (for the note that it matched nothing)."""

    side: str
    path: tuple[str, ...]
    test: Callable[[Any], bool]
    option: str

    def __call__(self, got: Decoded | None) -> bool:
        if got is None or got.error is not None:
            return False
        value = at(got.value, self.path)
        return value is not _MISSING and self.test(value)


def at(value: Any, path: tuple[str, ...]) -> Any:
    """The field at ``path`` in a decoded value (``_MISSING`` when it has none)."""
    for step in path:
        if isinstance(value, dict):
            value = value.get(step, _MISSING)
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return _MISSING
        if value is _MISSING:
            return value
    return value


def parse_path(option: str, text: str) -> tuple[str, ...]:
    """A dotted PATH as its steps; an empty one, or one with an empty step, is a usage error."""
    steps = tuple(text.split("."))
    if not text or "" in steps:
        raise UsageError(f"{option} {text!r}: give a dotted path into the decoded value (customer.id, items.0.sku)")
    return steps


def _regex(option: str, text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"{option} {text!r}: not a regular expression ({exc})") from exc


def _text(value: Any) -> str:
    return value if isinstance(value, str) else compact(value)


def field_match(side: str, path: str, regex: str) -> FieldTest:
    """``--key-field``/``--value-field PATH`` with ``--key-match``/``--value-match REGEX``."""
    steps = parse_path(f"--{side}-field", path)
    pattern = _regex(f"--{side}-match", regex)
    return FieldTest(side, steps, lambda v: pattern.search(_text(v)) is not None,
                     f"--{side}-field {path} --{side}-match {regex}")


_WHERE = re.compile(r"\s*(key|value)((?:\.[^\s=!<>~]*)*)\s*(==|!=|<=|>=|~=|<|>)\s*(.*?)\s*", re.DOTALL)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _ordered(op: Callable[[Any, Any], bool], literal: Any) -> Callable[[Any], bool]:
    if _number(literal):
        return lambda v: _number(v) and op(v, literal)
    return lambda v: isinstance(v, str) and op(v, literal)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` (Python's ``True == 1``), ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b or (_number(a) and _number(b) and a == b)


def where(text: str) -> FieldTest:
    """``--where 'value.customer.id == 42'``: parsed by a small grammar (never evaluated); a bad one is a usage
    error."""
    m = _WHERE.fullmatch(text)
    if m is None:
        raise UsageError(f"--where {text!r}: give key|value[.PATH] OP LITERAL, OP one of == != < <= > >= ~=, "
                         "the literal JSON (value.customer.id == 42, value.status ~= \"^paid\")")
    side, path, op, raw = m.groups()
    steps = parse_path("--where", path[1:]) if path else ()
    if op == "~=":
        try:
            literal = json.loads(raw)
        except ValueError:
            literal = raw
        pattern = _regex("--where", literal if isinstance(literal, str) else raw)
        return FieldTest(side, steps, lambda v: pattern.search(_text(v)) is not None, f"--where {text}")
    try:
        literal = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--where {text!r}: {raw!r} is not a JSON literal (42, \"text\", true, null)") from exc
    tests: dict[str, Callable[[Any], bool]] = {
        "==": lambda v: _same(v, literal),
        "!=": lambda v: not _same(v, literal),
    }
    if op in tests:
        return FieldTest(side, steps, tests[op], f"--where {text}")
    if not (_number(literal) or isinstance(literal, str)):
        raise UsageError(f"--where {text!r}: {op} compares with a number or a string")
    compare = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
               ">=": lambda a, b: a >= b}[op]
    return FieldTest(side, steps, _ordered(compare, literal), f"--where {text}")


@dataclass
class PayloadView:
    """The decoders of a command's keys and values (None: that side is not decoded) and its field filters (all
    must hold). ``reached`` counts, per filter, the records whose decoded payload had its field: a filter that
    never reached one says so (its PATH names nothing in these payloads), not only that nothing matched."""

    key: PayloadDecoder | None = None
    value: PayloadDecoder | None = None
    tests: tuple[FieldTest, ...] = ()
    reached: dict[str, int] = field(default_factory=dict)

    def read(self, r: Record, path: str, position: int | None) -> tuple[Record | PayloadRecord, list[Finding]]:
        """``r`` decoded, and a ``payload-undecodable`` finding for each side that does not decode (at the
        position of its batch, the record named by its offset). Control records stay as they are (their key and
        value are the marker)."""
        if r.control_type is not None:
            return r, []
        tp = partition_of(Path(path).parent.name)  # the subjects of its topic under TopicNameStrategy
        key = None if self.key is None else self.key(r.key, None if tp is None else f"{tp[0]}-key")
        value = None if self.value is None else self.value(r.value, None if tp is None else f"{tp[0]}-value")
        found = [finding("payload-undecodable", path, position, f"offset {r.offset}: {side}: {got.error}")
                 for side, got in (("key", key), ("value", value)) if got is not None and got.error is not None]
        return PayloadRecord(r, key, value), found

    def wants(self, shown: Record | PayloadRecord) -> bool:
        if not self.tests:
            return True
        if not isinstance(shown, PayloadRecord):
            return False
        holds = True
        for test in self.tests:  # each one tried: what reached counts does not hang on the filters before it
            got = shown.key if test.side == "key" else shown.value
            if got is not None and got.error is None and at(got.value, test.path) is not _MISSING:
                self.reached[test.option] = self.reached.get(test.option, 0) + 1
            holds = test(got) and holds
        return holds

    def shown(self, records: Iterable[Record], path: str, position: int | None) -> list[Record | PayloadRecord |
                                                                                        Finding]:
        """``records`` decoded, those the filters want, each followed by its findings (the findings of the others
        too: a record the filters could not read is named, not silently passed over)."""
        out: list[Record | PayloadRecord | Finding] = []
        for r in records:
            shown, found = self.read(r, path, position)
            if self.wants(shown):
                out.append(shown)
            out.extend(found)
        return out

    def unreached(self) -> list[str]:
        """The filters whose PATH no decoded payload had."""
        return [t.option for t in self.tests if not self.reached.get(t.option)]


def payload_view(key: str | None, value: str | None, sources: SchemaSources,
                 fields: Iterable[tuple[str, str | None, str | None]] = (),
                 wheres: Iterable[str] = ()) -> tuple[PayloadView | None, list[Finding]]:
    """The view of the command-line words, built once per command: the decoders named ``key`` and ``value``
    (:func:`~kafkatool.payloads.payload_decoder`, their schemas read from ``sources``) with the findings met loading
    them, and the filters: ``fields`` as (side, PATH, REGEX) of ``--key-field``/``--value-field``, ``wheres`` the
    ``--where`` texts. None without a decoder. A filter on a side without a decoder, or a PATH without its REGEX, is a
    usage error."""
    tests = []
    for side, path, regex in fields:
        if path is None:
            continue
        if regex is None:
            raise UsageError(f"--{side}-field needs --{side}-match REGEX")
        tests.append(field_match(side, path, regex))
    tests += [where(text) for text in wheres]
    for t in tests:
        if (key if t.side == "key" else value) is None:
            raise UsageError(f"{t.option}: give --{t.side}-decoder NAME (the filter reads the decoded {t.side})")
    if key is None and value is None:
        return None, []
    found: list[Finding] = []
    built: dict[str, PayloadDecoder] = {}  # the same name for keys and values: its schemas loaded once
    for name in (key, value):
        if name is not None and name not in built:
            built[name], findings = payload_decoder(name, sources)
            found += [f for f in findings if f not in found]  # a registry both decoders read: said once
    return PayloadView(built.get(key or ""), built.get(value or ""), tuple(tests)), found


__all__ = ["FieldTest", "PayloadRecord", "PayloadView", "at", "compact", "field_match", "parse_path",
           "payload_view", "where"]
