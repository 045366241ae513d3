"""Readers derived from Construct declarations, for the records a command reads by the million.

``__consumer_offsets`` holds one record per committed partition per commit: a busy cluster writes millions a
day, and Construct's interpreter takes ~25 µs for an ``OffsetCommitKey`` and ~40 µs for its value. The reader
:func:`reader` derives from a declaration walks the same fields in the same order with ``struct``, and gives the
very ``Container`` Construct's ``parse`` gives (``==``, which ignores Construct's private ``_io`` entries), or
``None``: for anything it does not take (a short field, a length past the end, bytes left over, bad UTF-8, tagged
fields present, an overlong varint), and then the caller parses with the declaration itself, which words the
error. So the declaration stays the one source of the layout and of every finding; ``tests/test_fastparse.py``
holds the two equal on every internal-topic record of the corpus and on mutated and generated ones.

Shapes taken (any other field in a declaration: no reader, the declaration parses every time): fixed-size
integers (``FormatField``), the nullable strings of both encodings (``string16``, ``compact_nullable_string``),
``tagged_fields`` when there are none, a nested ``Struct`` of these, and ``Switch`` on an earlier field whose
cases are such Structs and whose default is ``Pass`` (``OffsetCommitValue``'s version).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from construct import Container, FormatField, ListContainer, Pass, Renamed, Struct, Switch

from .formats import internal_topics as it
from .formats.primitives import tagged_fields

# A step reads one field of ``data`` at ``pos`` into ``out`` and returns where the next begins; it raises
# _Miss for bytes it does not take (the declaration then parses them).
Step = Callable[[bytes, int, Container], int]
Reader = Callable[[bytes], Container | None]


class _Miss(Exception):
    pass


_INT16 = struct.Struct(">h")


def _ints_step(names: list[str], fmt: struct.Struct) -> Step:
    """Consecutive fixed-size integer fields, read with one ``struct`` call."""
    unpack, size = fmt.unpack_from, fmt.size
    if len(names) == 1:
        name = names[0]

        def one(data: bytes, pos: int, out: Container) -> int:
            if pos + size > len(data):
                raise _Miss
            out[name] = unpack(data, pos)[0]
            return pos + size

        return one

    def step(data: bytes, pos: int, out: Container) -> int:
        if pos + size > len(data):
            raise _Miss
        out.update(zip(names, unpack(data, pos), strict=True))
        return pos + size

    return step


def _string(data: bytes, pos: int, n: int) -> str | None:
    """``n`` bytes at ``pos`` as UTF-8 (None when ``n`` is negative: null)."""
    if n < 0:
        return None
    end = pos + n
    if end > len(data):
        raise _Miss
    try:
        return data[pos:end].decode("utf-8")
    except UnicodeDecodeError:
        raise _Miss from None


def _string16_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        if pos + 2 > len(data):
            raise _Miss
        n = _INT16.unpack_from(data, pos)[0]
        out[name] = Container(length=n, value=_string(data, pos + 2, n))
        return pos + 2 + n if n > 0 else pos + 2

    return step


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Construct's ``VarInt`` (base-128, little-endian groups), up to 5 bytes: a longer one is the declaration's."""
    value = shift = 0
    for i in range(pos, min(pos + 5, len(data))):
        b = data[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i + 1
        shift += 7
    raise _Miss


def _compact_string_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        n, pos = _uvarint(data, pos)
        n -= 1
        out[name] = Container(length=n, value=_string(data, pos, n))
        return pos + n if n > 0 else pos

    return step


def _no_tags_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        if pos >= len(data) or data[pos] != 0:
            raise _Miss
        out[name] = Container(count=0, fields=ListContainer())
        return pos + 1

    return step


def _struct_steps(decl: Any) -> list[Step] | None:
    steps: list[Step] = []
    ints: list[tuple[str, str]] = []  # (name, struct format) of the integer fields not yet made a step

    def flush() -> None:
        if ints:
            fmt = struct.Struct("".join(f for _name, f in ints))
            steps.append(_ints_step([name for name, _f in ints], fmt))
            ints.clear()

    for sub in decl.subcons:
        if not isinstance(sub, Renamed) or not sub.name:
            return None
        if isinstance(sub.subcon, FormatField) and sub.subcon.fmtstr[0] == ">":
            ints.append((sub.name, sub.subcon.fmtstr if not ints else sub.subcon.fmtstr[1:]))
            continue
        flush()
        step = _field_step(sub.name, sub.subcon)
        if step is None:
            return None
        steps.append(step)
    flush()
    return steps


def _nested_step(name: str, steps: list[Step]) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        inner = Container()
        for s in steps:
            pos = s(data, pos, inner)
        out[name] = inner
        return pos

    return step


def _switch_step(name: str, switch: Switch) -> Step | None:
    key = repr(switch.keyfunc)  # this['version'] for this.version
    if not (key.startswith("this['") and key.endswith("']")):
        return None
    field = key[6:-2]
    cases: dict[Any, list[Step]] = {}
    for value, case in switch.cases.items():
        steps = _struct_steps(case) if isinstance(case, Struct) else None
        if steps is None:
            return None
        cases[value] = steps

    default_is_pass = switch.default is Pass

    def step(data: bytes, pos: int, out: Container) -> int:
        steps = cases.get(out.get(field))
        if steps is None:  # a version without a case: Pass reads nothing, as None; any other default is Construct's
            if default_is_pass:
                out[name] = None
                return pos
            raise _Miss
        inner = Container()
        for s in steps:
            pos = s(data, pos, inner)
        out[name] = inner
        return pos

    return step


def _field_step(name: str, sub: Any) -> Step | None:
    if isinstance(sub, FormatField):
        return _ints_step([name], struct.Struct(sub.fmtstr))
    if sub is it.string16:
        return _string16_step(name)
    if sub is it.compact_nullable_string:
        return _compact_string_step(name)
    if sub is tagged_fields:
        return _no_tags_step(name)
    if isinstance(sub, Switch):
        return _switch_step(name, sub)
    if isinstance(sub, Struct):
        steps = _struct_steps(sub)
        return None if steps is None else _nested_step(name, steps)
    return None


def reader(decl: Any) -> Reader | None:
    """A reader of ``decl`` (a Construct ``Struct``) for whole byte strings, or None where ``decl`` has a field of
    a shape not taken here. The reader gives what ``decl.parse(data)`` gives, or None (see the module's help)."""
    steps = _struct_steps(decl) if isinstance(decl, Struct) else None
    if steps is None:
        return None

    def read(data: bytes) -> Container | None:
        out = Container()
        pos = 0
        try:
            for s in steps:
                pos = s(data, pos, out)
        except _Miss:
            return None
        return out if pos == len(data) else None

    return read


__all__ = ["Reader", "reader"]
