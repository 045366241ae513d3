"""Readers derived from Construct declarations, for the records a command reads by the million.

``__consumer_offsets`` holds one record per committed partition per commit: a busy cluster writes millions a
day, and Construct's interpreter takes ~25 µs for an ``OffsetCommitKey`` and ~40 µs for its value; a KRaft
controller's ``__cluster_metadata`` log holds a NoOpRecord every 500 ms besides the cluster's changes. The reader
:func:`reader` derives from a declaration walks the same fields in the same order with ``struct``, and gives the
very ``Container`` Construct's ``parse`` gives (``==``, which ignores Construct's private ``_io`` entries), or
``None``: for anything it does not take (a short field, a length past the end, bytes left over, bad UTF-8, a
varint over 5 bytes), and then the caller parses with the declaration itself, which words the error. So the
declaration stays the one source of the layout and of every finding; ``tests/test_fastparse.py`` holds the two
equal on every internal-topic record of the corpus and on mutated and generated ones.

Shapes taken (any other field in a declaration: no reader, the declaration parses every time): fixed-size
integers (``FormatField``), ``Flag``, ``VarInt``, ``Bytes`` of a fixed length (a Uuid), the nullable strings and
bytes of both encodings (``string16``, ``bytes32``, ``compact_nullable_string``, ``compact_bytes``), the arrays
of both (``array32``, ``compact_array``) of any of these, ``tagged_fields``, a nested ``Struct`` of these, and
``Switch`` on an earlier field whose cases are such Structs and whose default is ``Pass`` (a value's version).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from construct import (
    Array,
    Bytes,
    Container,
    Flag,
    FormatField,
    IfThenElse,
    ListContainer,
    Pass,
    Renamed,
    Struct,
    Switch,
    VarInt,
)

from .formats import internal_topics as it
from .formats.primitives import compact_length, tagged_fields

# A step reads one field of ``data`` at ``pos`` into ``out`` and returns where the next begins; it raises
# _Miss for bytes it does not take (the declaration then parses them).
Step = Callable[[bytes, int, Container], int]
Reader = Callable[[bytes], Any]


class _Miss(Exception):
    pass


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


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


def _bytes(data: bytes, pos: int, n: int) -> bytes | None:
    """``n`` bytes at ``pos`` (None when ``n`` is negative: null)."""
    if n < 0:
        return None
    end = pos + n
    if end > len(data):
        raise _Miss
    return data[pos:end]


def _string(data: bytes, pos: int, n: int) -> str | None:
    """``n`` bytes at ``pos`` as UTF-8 (None when ``n`` is negative: null)."""
    raw = _bytes(data, pos, n)
    try:
        return None if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Miss from None


def _fixed_length_step(name: str, fmt: struct.Struct, body: Callable[[bytes, int, int], Any]) -> Step:
    """A nullable string or bytes field of a signed fixed-size length (-1: null)."""
    unpack, size = fmt.unpack_from, fmt.size

    def step(data: bytes, pos: int, out: Container) -> int:
        if pos + size > len(data):
            raise _Miss
        n = unpack(data, pos)[0]
        out[name] = Container(length=n, value=body(data, pos + size, n))
        return pos + size + n if n > 0 else pos + size

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


def _compact_step(name: str, body: Callable[[bytes, int, int], Any]) -> Step:
    """A nullable compact string or bytes field: uvarint ``length + 1`` (0: null)."""

    def step(data: bytes, pos: int, out: Container) -> int:
        n, pos = _uvarint(data, pos)
        n -= 1
        out[name] = Container(length=n, value=body(data, pos, n))
        return pos + n if n > 0 else pos

    return step


def _tags_step(name: str) -> Step:
    """Tagged fields: uvarint count, then per field uvarint tag, uvarint size and ``size`` bytes."""

    def step(data: bytes, pos: int, out: Container) -> int:
        count, pos = _uvarint(data, pos)
        fields = ListContainer()
        for _ in range(count):
            tag, pos = _uvarint(data, pos)
            size, pos = _uvarint(data, pos)
            end = pos + size
            if end > len(data):
                raise _Miss
            fields.append(Container(tag=tag, size=size, data=data[pos:end]))
            pos = end
        out[name] = Container(count=count, fields=fields)
        return pos

    return step


def _array_steps(decl: Any) -> tuple[Step, Callable[[bytes, int], tuple[Any, int]]] | None:
    """The two fields of ``array32(element)`` / ``compact_array(element)``: the count's step, and a reader of one
    element; None for any other Struct."""
    subs = decl.subcons
    if len(subs) != 2 or [getattr(x, "name", None) for x in subs] != ["count", "entries"]:
        return None
    count, entries = subs[0].subcon, subs[1].subcon
    if not (isinstance(entries, IfThenElse) and entries.elsesubcon is Pass
            and repr(entries.condfunc) == "(this['count'] >= 0)" and isinstance(entries.thensubcon, Array)
            and repr(entries.thensubcon.count) == "this['count']"):
        return None
    if isinstance(count, FormatField) and count.fmtstr[0] == ">":
        count_step = _ints_step(["count"], struct.Struct(count.fmtstr))
    elif count is compact_length:
        count_step = _uvarint_minus_one_step("count")
    else:
        return None
    element = _field_step("item", entries.thensubcon.subcon)
    if element is None:
        return None

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        slot: dict[str, Any] = {}
        pos = element(data, pos, slot)  # type: ignore[arg-type]
        return slot["item"], pos

    return count_step, read


def _uvarint_minus_one_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        n, pos = _uvarint(data, pos)
        out[name] = n - 1
        return pos

    return step


def _array_step(name: str, count_step: Step, read: Callable[[bytes, int], tuple[Any, int]]) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        inner = Container()
        pos = count_step(data, pos, inner)
        n = inner["count"]
        if n > len(data) - pos:  # every element takes a byte or more: a count past the end is damage
            raise _Miss
        entries = None
        if n >= 0:
            entries = ListContainer()
            for _ in range(n):
                item, pos = read(data, pos)
                entries.append(item)
        inner["entries"] = entries
        out[name] = inner
        return pos

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
    cases: dict[Any, Step] = {}
    for value, case in switch.cases.items():
        steps = _struct_steps(case) if isinstance(case, Struct) else None
        if steps is None:
            return None
        cases[value] = _nested_step(name, steps)

    default_is_pass = switch.default is Pass

    def step(data: bytes, pos: int, out: Container) -> int:
        case = cases.get(out.get(field))
        if case is None:  # a version without a case: Pass reads nothing, as None; any other default is Construct's
            if default_is_pass:
                out[name] = None
                return pos
            raise _Miss
        return case(data, pos, out)

    return step


def _fixed_bytes_step(name: str, n: int) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        end = pos + n
        if end > len(data):
            raise _Miss
        out[name] = data[pos:end]
        return end

    return step


def _flag_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        if pos >= len(data):
            raise _Miss
        out[name] = data[pos] != 0
        return pos + 1

    return step


def _uvarint_step(name: str) -> Step:
    def step(data: bytes, pos: int, out: Container) -> int:
        out[name], pos = _uvarint(data, pos)
        return pos

    return step


def _field_step(name: str, sub: Any) -> Step | None:
    if isinstance(sub, FormatField):
        return _ints_step([name], struct.Struct(sub.fmtstr))
    if sub is Flag:
        return _flag_step(name)
    if sub is VarInt:
        return _uvarint_step(name)
    if isinstance(sub, Bytes) and isinstance(sub.length, int):
        return _fixed_bytes_step(name, sub.length)
    if sub is it.string16:
        return _fixed_length_step(name, _INT16, _string)
    if sub is it.bytes32:
        return _fixed_length_step(name, _INT32, _bytes)
    if sub is it.compact_nullable_string:
        return _compact_step(name, _string)
    if sub is it.compact_bytes:
        return _compact_step(name, _bytes)
    if sub is tagged_fields:
        return _tags_step(name)
    if isinstance(sub, Switch):
        return _switch_step(name, sub)
    if isinstance(sub, Struct):
        array = _array_steps(sub)
        if array is not None:
            return _array_step(name, *array)
        steps = _struct_steps(sub)
        return None if steps is None else _nested_step(name, steps)
    return None


def reader(decl: Any) -> Reader | None:
    """A reader of ``decl`` (a Construct ``Struct``, or one field of a shape taken here) for whole byte strings,
    or None where ``decl`` has a field of a shape not taken here. The reader gives what ``decl.parse(data)``
    gives, or None (see the module's help)."""
    read = prefix_reader(decl)
    if read is None:
        return None

    def whole(data: bytes) -> Any:
        got = read(data)
        return got[0] if got is not None and got[1] == len(data) else None

    return whole


def prefix_reader(decl: Any) -> Callable[[bytes], tuple[Any, int] | None] | None:
    """Like :func:`reader`, for the first bytes of a byte string (a header the rest follows): what
    ``decl.parse(data)`` gives and where it stopped, or None."""
    step = _field_step("value", decl)
    if step is None:
        return None

    def read(data: bytes) -> tuple[Any, int] | None:
        slot: dict[str, Any] = {}
        try:
            pos = step(data, 0, slot)  # type: ignore[arg-type]
        except _Miss:
            return None
        return slot["value"], pos

    return read


__all__ = ["Reader", "prefix_reader", "reader"]
