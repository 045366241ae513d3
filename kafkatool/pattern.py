"""Python regular expressions as the native core's (the ``regex`` crate's): home of ``dump``'s search patterns on the
native path (``native/src/search.rs``).

:func:`translate` gives a pattern of the ``regex`` crate that matches exactly the strings Python's ``re.search``
matches, or None where it cannot promise that (the search then stays in Python, the reference). It reads the pattern
with Python's own parser (``re._parser``) and spells each part in the crate's syntax:

- each one-character part (a literal under IGNORECASE, a class such as ``[a-z]``, ``\\d``, ``\\w``, ``\\s`` with their
  negations, under whatever flags are in force there) becomes the explicit set of code points Python's own engine
  matches with it, found by running it over every code point (a literal: over those that can match it): Python's
  Unicode database and case rules, whatever the crate's (their versions differ, and so do ``\\w`` and ``\\s`` and case
  folding at the edges);
- literals, ``.``, groups (as non-capturing), alternation and repetition (greedy or lazy alike: whether a match
  exists does not depend on it) as they are; ``^``/``$`` with MULTILINE, ``\\A``, ``\\Z`` as the crate's;
  ``$`` without MULTILINE (the end, or before a last ``\\n``) where nothing can follow it; ``\\b``/``\\B`` under ASCII.

Declined (searched in Python): backreferences, lookahead/lookbehind, conditionals, atomic groups and possessive
repeats (none is in the crate), ``\\b``/``\\B`` without ASCII (Python's word characters are not the crate's), ``$``
without MULTILINE where something may follow it, and a pattern the crate refuses to build (too big).
"""

from __future__ import annotations

import _sre
import functools
import re
from re import _casefix, _compiler, _parser
from re import _constants as C  # noqa: N812 (the parser's opcodes, as re._compiler names them)

_LAST = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


class Declined(Exception):
    """A part of a pattern this module does not translate exactly."""


@functools.cache
def _every_char() -> str:
    """Every code point a decoded string can hold (surrogates never come out of a UTF-8 decode), in order: their
    UTF-32LE bytes laid out a byte column at a time (a loop over 1.1 M ``chr`` took five times as long)."""
    n = _LAST + 1
    utf32 = bytearray(4 * n)
    utf32[0::4] = bytes(range(256)) * (n // 256)
    utf32[1::4] = bytes(b for b in range(256) for _ in range(256)) * (n // 65536)
    utf32[2::4] = b"".join(bytes([b]) * 65536 for b in range(n // 65536))
    return utf32[:4 * _SURROGATES[0]].decode("utf-32-le") + utf32[4 * (_SURROGATES[1] + 1):].decode("utf-32-le")


def _code_point(index: int) -> int:
    return index if index < _SURROGATES[0] else index + (_SURROGATES[1] - _SURROGATES[0] + 1)


@functools.cache
def _char_set(node: tuple, flags: int) -> str:
    """The class of the one-character part ``node`` under ``flags``: the code points Python's engine matches with it,
    as maximal runs (``(?:node)+`` over every code point)."""
    state = _parser.State()
    state.flags = flags
    inner = _parser.SubPattern(state, [_thaw(node)])
    run = _parser.SubPattern(state, [(C.MAX_REPEAT, (1, C.MAXREPEAT, inner))])
    rx = _compiler.compile(run, flags)
    ranges = [(_code_point(m.start()), _code_point(m.end() - 1)) for m in rx.finditer(_every_char())]
    if not ranges:
        return r"[^\x{0}-\x{10FFFF}]"
    return "[" + "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges) + "]"


@functools.cache
def _cased() -> tuple[int, ...]:
    """The code points with case (``_sre.unicode_iscased``: a simple lower or upper case other than themselves), and
    a few more (a full case mapping only): ``str.lower``/``str.upper`` over blocks of 256, each block without a change
    skipped whole (a call per code point took 0.5 s)."""
    every, found = _every_char(), []
    for at in range(0, len(every), 256):
        block = every[at:at + 256]
        if block.lower() != block or block.upper() != block:
            found.extend(ord(c) for c in block if c.lower() != c or c.upper() != c)
    return tuple(found)


@functools.cache
def _literal_set(code: int, flags: int) -> str:
    """The class of literal ``code`` under IGNORECASE (and ``flags``): what Python's engine matches with it, tried on
    the only characters that can match it: itself, its lower case and ``re``'s extra case pairs (``_casefix``) and
    every character with case (an uncaseable one matches only where it is one of those): a few thousand, not every
    code point."""
    if flags & C.SRE_FLAG_ASCII:
        candidates = {*range(128), code}
    else:
        lower = _sre.unicode_tolower(code)
        candidates = {*_cased(), code, lower, *_casefix._EXTRA_CASES.get(lower, ())}
    state = _parser.State()
    state.flags = flags
    rx = _compiler.compile(_parser.SubPattern(state, [(C.LITERAL, code)]), flags)
    found = sorted(c for c in candidates if not _SURROGATES[0] <= c <= _SURROGATES[1] and rx.fullmatch(chr(c)))
    ranges: list[list[int]] = []
    for c in found:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges)


def _freeze(node):
    """A parse-tree node as a hashable key (``_char_set`` is cached by it)."""
    op, av = node
    if op is C.IN:
        return op, tuple(av)
    return op, av


def _thaw(node):
    op, av = node
    return (op, list(av)) if op is C.IN else (op, av)


def _char(cp: int) -> str:
    return chr(cp) if chr(cp).isascii() and chr(cp).isalnum() else f"\\x{{{cp:X}}}"


def translate(pattern: str) -> str | None:
    """The ``regex`` crate's pattern matching what ``re.search(pattern, s)`` matches, for every ``s``; None where it
    cannot say (see the module docs)."""
    try:
        parsed = _parser.parse(pattern, 0)
        return _sequence(list(parsed), parsed.state.flags, True)
    except (Declined, re.error, RecursionError, TypeError, ValueError, AttributeError):
        return None


def _sequence(items: list, flags: int, tail: bool) -> str:
    return "".join(_node(node, flags, tail and k == len(items) - 1) for k, node in enumerate(items))


def _node(node: tuple, flags: int, tail: bool) -> str:
    op, av = node
    ignore = flags & C.SRE_FLAG_IGNORECASE
    one_char = flags & (C.SRE_FLAG_IGNORECASE | C.SRE_FLAG_ASCII | C.SRE_FLAG_UNICODE)  # what a character test reads
    if op is C.LITERAL:
        return f"[{_literal_set(av, one_char)}]" if ignore else _char(av)
    if op is C.NOT_LITERAL:  # NOT_LITERAL_UNI_IGNORE: what the literal does not match
        return f"[^{_literal_set(av, one_char)}]" if ignore else f"[^{_char(av)}]"
    if op is C.IN:
        return _char_set(_freeze(node), one_char)
    if op is C.ANY:
        return r"(?s:.)" if flags & C.SRE_FLAG_DOTALL else r"[^\n]"
    if op is C.SUBPATTERN:
        _group, add, remove, items = av
        return "(?:" + _sequence(list(items), (flags | add) & ~remove, tail) + ")"
    if op is C.BRANCH:
        return "(?:" + "|".join(_sequence(list(alt), flags, tail) for alt in av[1]) + ")"
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        low, high, items = av
        body = "(?:" + _sequence(list(items), flags, False) + ")"
        return body + (f"{{{low},}}" if high == C.MAXREPEAT else f"{{{low},{high}}}")
    if op is C.AT:
        return _at(av, flags, tail)
    raise Declined(str(op))


def _at(where, flags: int, tail: bool) -> str:
    multiline = flags & C.SRE_FLAG_MULTILINE
    if where is C.AT_BEGINNING:
        return "(?m:^)" if multiline else r"\A"
    if where is C.AT_BEGINNING_STRING:
        return r"\A"
    if where is C.AT_END:
        if multiline:
            return "(?m:$)"
        if tail:  # the end, or before a last "\n": nothing follows, so taking that "\n" changes no verdict
            return r"(?:\n?\z)"
        raise Declined("$ before more of the pattern")
    if where is C.AT_END_STRING:
        return r"\z"
    if where in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY) and flags & C.SRE_FLAG_ASCII:
        return r"(?-u:\b)" if where is C.AT_BOUNDARY else r"(?-u:\B)"
    raise Declined(str(where))


__all__ = ["translate"]
