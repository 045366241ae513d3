"""Text checkpoint files: offset checkpoints and ``leader-epoch-checkpoint``.

Follows Kafka's ``server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java``
(``CheckpointReadBuffer`` / ``CheckpointWriteBuffer``) with the entry formatters of
``storage/.../internals/checkpoint/OffsetCheckpointFile.java`` and ``LeaderEpochCheckpointFile.java``.
UTF-8 text, one item per line::

    0                       <- version (only 0 exists)
    2                       <- number of entries
    codecs 0 200            <- offset checkpoints: topic partition offset
    codecs 1 180               (leader-epoch-checkpoint: epoch start_offset)

The broker-level files ``replication-offset-checkpoint`` (high watermarks),
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``
share the offset format.

Kafka's reader, reproduced here: lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (``BufferedReader``); an
empty file, or one that ends right after the version line, has no entries; the version and count
lines must be exactly a Java ``int`` (no spaces); entry fields are split on runs of ASCII whitespace
(Java's ``\\s+``, leading empty field kept, trailing ones dropped) and the field count must be
exact; the number of entry lines must equal the count. There are no blank or comment lines.
The writer ends every line with ``\\n`` (``BufferedWriter.newLine`` on Unix).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kafkatool.errors import FormatError

CURRENT_VERSION = 0

_LINE_END = re.compile(rb"\r\n|\r|\n")
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")  # java.util.regex \s (not Unicode-aware)
_JAVA_INT = re.compile(r"[+-]?\d+")  # Integer.parseInt / Long.parseLong accept any Unicode decimal digit


class TextFileError(FormatError):
    """A text file Kafka refuses to read; ``code`` is the stable Finding code, ``position`` a byte offset."""

    def __init__(self, code: str, message: str, position: int | None = None) -> None:
        super().__init__(message, position)
        self.code = code


def java_lines(data: bytes, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """``(byte position, line)`` for each line as ``BufferedReader.readLine`` returns it (strict decoding)."""
    if b"\r" in data or not data.isascii():
        return _java_lines(data, encoding)
    # What Kafka writes: ASCII (a character is a byte, every encoding here reads it alike), lines ending at \n.
    lines = data.decode("ascii").split("\n")
    if not lines[-1]:  # the last line ends at the end of the data (or there is none)
        lines.pop()
    out, at = [], 0
    for line in lines:
        out.append((at, line))
        at += len(line) + 1
    return iter(out)


def _java_lines(data: bytes, encoding: str) -> Iterator[tuple[int, str]]:
    start = 0
    for m in _LINE_END.finditer(data):
        yield start, _decode(data[start : m.start()], start, encoding)
        start = m.end()
    if start < len(data):
        yield start, _decode(data[start:], start, encoding)


def _decode(raw: bytes, position: int, encoding: str) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        where = position + e.start
        raise TextFileError("text-bad-encoding", f"malformed {encoding} at byte {where}", where) from None


def java_split(pattern: re.Pattern[str], line: str) -> list[str]:
    """``Pattern.split(line)``: ``re.split`` minus trailing empty fields (unless nothing matched)."""
    parts = pattern.split(line)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def java_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64), or ``None`` where Java throws."""
    if text.isdigit() and text.isascii() and len(text) < 19:  # most: plain digits, fewer than a long's 19
        value = int(text)
    elif _JAVA_INT.fullmatch(text):
        if len(text) > 20:  # int() refuses more than 4300 digits (ValueError): past a long's 19 only zeros may lead
            digits = text.lstrip("+-")
            lead = next((i for i, c in enumerate(digits) if unicodedata.decimal(c)), len(digits))
            if len(digits) - lead > 19:
                return None
            text = text[: len(text) - len(digits)] + (digits[lead:] or "0")
        value = int(text)
    else:
        return None
    limit = 1 << (bits - 1)
    return value if -limit <= value < limit else None


def parse_offset_line(line: str) -> tuple[str, int, int] | None:
    """``topic partition offset`` as ``OffsetCheckpointFile.Formatter.fromString`` reads it, or None."""
    parts = line.split(" ")
    if len(parts) == 3:  # as Kafka writes it: one space between fields, a topic with no whitespace, plain digits
        topic, partition, offset = parts
        if (partition.isdigit() and offset.isdigit() and partition.isascii() and offset.isascii()
                and len(partition) < 10 and len(offset) < 19 and topic.isprintable()):
            return topic, int(partition), int(offset)
    parts = java_split(_JAVA_WHITESPACE, line)
    if len(parts) != 3:
        return None
    partition, offset = java_int(parts[1]), java_int(parts[2], 64)
    return None if partition is None or offset is None else (parts[0], partition, offset)


def parse_epoch_line(line: str) -> tuple[int, int] | None:
    """``epoch start_offset`` as ``LeaderEpochCheckpointFile.Formatter.fromString`` reads it, or None."""
    parts = line.split(" ")
    if len(parts) == 2:  # as Kafka writes it: one space between two numbers of plain digits
        epoch, start_offset = parts
        if (epoch.isdigit() and start_offset.isdigit() and epoch.isascii() and start_offset.isascii()
                and len(epoch) < 10 and len(start_offset) < 19):
            return int(epoch), int(start_offset)
    parts = java_split(_JAVA_WHITESPACE, line)
    if len(parts) != 2:
        return None
    epoch, start_offset = java_int(parts[0]), java_int(parts[1], 64)
    return None if epoch is None or start_offset is None else (epoch, start_offset)


def parse_checkpoint(data: bytes, parse_line: Callable[[str], Any | None]) -> Iterator[tuple]:
    """Yield ``(version, count)``, then ``parse_line``'s tuple for each entry line, in file order:
    ``CheckpointReadBuffer.read()`` line by line.

    Nothing is yielded for an empty file; ``count`` is ``None`` when the file ends after the version
    line (Kafka reads both as "no entries"). Raises :class:`TextFileError` where Kafka's
    ``CheckpointReadBuffer.read()`` throws, after yielding what precedes the problem. A file as the broker writes
    it takes the fast path of each step (:func:`java_lines`, :func:`java_int`, the line parsers').
    """
    lines = java_lines(data)
    first = next(lines, None)
    if first is None:
        return
    version = _int_line(*first)
    if version != CURRENT_VERSION:
        raise TextFileError("checkpoint-bad-version", f"unknown version {version} (expected 0)", first[0])
    second = next(lines, None)
    if second is None:
        yield (version, None)
        return
    count = _int_line(*second)
    if count < 0:  # new ArrayList<>(count) throws
        raise TextFileError("checkpoint-bad-count", f"negative entry count {count}", second[0])
    yield (version, count)
    found = 0
    for position, line in lines:
        entry = parse_line(line)
        if entry is None:
            raise TextFileError("checkpoint-malformed", f"malformed line {line!r}", position)
        found += 1
        yield entry
    if found != count:
        message = f"expected {count} entries, found {found}"
        raise TextFileError("checkpoint-count-mismatch", message, len(data))


def _int_line(position: int, line: str) -> int:
    value = java_int(line)
    if value is None:
        raise TextFileError("checkpoint-malformed", f"malformed line {line!r} (expected an int)", position)
    return value


def build_checkpoint(lines: Iterable[str], version: int = CURRENT_VERSION) -> bytes:
    """A checkpoint file exactly as ``CheckpointWriteBuffer.write`` writes it, from formatted entry lines."""
    lines = list(lines)
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode("utf-8")


def format_offset_line(topic: str, partition: int, offset: int) -> str:
    return f"{topic} {partition} {offset}"


def format_epoch_line(epoch: int, start_offset: int) -> str:
    return f"{epoch} {start_offset}"


def build_offset_checkpoint(entries: Iterable[tuple[str, int, int]]) -> bytes:
    """An offset checkpoint file from ``(topic, partition, offset)`` entries, in the given order."""
    return build_checkpoint(format_offset_line(*e) for e in entries)


def build_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    """A ``leader-epoch-checkpoint`` file from ``(epoch, start_offset)`` entries, in the given order."""
    return build_checkpoint(format_epoch_line(*e) for e in entries)
