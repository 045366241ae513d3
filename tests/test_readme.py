"""The README's examples, run: every ``$ command`` of its ``console`` blocks whose paths exist here (the corpus,
the fixtures) is run from the project root, and its output must be what the README shows.

A README line ``...`` stands for any number of lines, and ``...`` inside a line for any text; everything else is
compared as written (trailing spaces and blank lines aside). ``$ echo $?`` shows the previous command's exit code.
A command naming paths that exist nowhere here (``/var/lib/kafka/data``, ``...``-shortened paths) is illustrative and
skipped, and the test says how many there are, so the README cannot drift without a test turning red.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PROJECT_ROOT, corpus_root

README = PROJECT_ROOT / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples() -> list[tuple[str, list[str], int]]:
    """(command, expected output lines, line number in the README) of every ``$`` line."""
    text = README.read_text()
    found: list[tuple[str, list[str], int]] = []
    for m in BLOCK.finditer(text):
        first_line = text[: m.start(1)].count("\n") + 1
        current: tuple[str, list[str], int] | None = None
        for i, line in enumerate(m.group(1).splitlines()):
            if line.startswith("$ "):
                current = (line[2:], [], first_line + i)
                found.append(current)
            elif current is not None:
                current[1].append(line)
    return found


def runnable(command: str) -> bool:
    """Every path-like word names something that exists (from the project root)."""
    words = [w for part in command.split("|")[:1] for w in shlex.split(part)]
    paths = [w.replace("../shared/corpus", str(corpus_root())) for w in words if "/" in w and not w.startswith("-")]
    return all((PROJECT_ROOT / w).exists() for w in paths)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory laid out as the README assumes (``fixtures/`` here, the corpus at ``../shared/corpus``), made of
    links, so the commands and the paths they print are the README's wherever the corpus really is."""
    root = tmp_path_factory.mktemp("readme")
    (root / "shared").mkdir()
    (root / "shared" / "corpus").symlink_to(corpus_root())
    (root / "kafkatool").mkdir()
    (root / "kafkatool" / "fixtures").symlink_to(PROJECT_ROOT / "fixtures")
    return root / "kafkatool"


def pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in (x for x in expected if x.strip()):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.rstrip().split("...")) + r"\n")
    last = [x for x in expected if x.strip()][-1:] or [""]
    return re.compile("".join(parts) + (r"" if last[0].strip() == "..." else r"\Z"), re.S)


EXAMPLES = examples()


def test_the_readme_has_examples_and_most_run() -> None:
    ran = [c for c, _e, _n in EXAMPLES if c != "echo $?" and runnable(c)]
    skipped = [c for c, _e, _n in EXAMPLES if c != "echo $?" and not runnable(c)]
    assert len(ran) >= 20 and len(skipped) <= 6, skipped


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[f"README:{n}" for _c, _e, n in EXAMPLES])
def test_readme_example(index: int, checkout: Path) -> None:
    command, expected, _line = EXAMPLES[index]
    if command == "echo $?":
        return  # checked with the command before it
    if not runnable(command):
        pytest.skip("illustrative: names paths that do not exist here")
    shown = any(line.strip() for line in expected)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "1000"}
    proc = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    output = "".join(line.rstrip() + "\n" for line in proc.stdout.splitlines() if line.strip())
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), (command, proc.returncode, proc.stderr)
    if not shown:
        return  # the README shows the command only: it must run, and say something
    assert pattern(expected).match(output), f"$ {command}\n--- README:\n" + "\n".join(expected) + \
        f"\n--- got:\n{output}--- stderr:\n{proc.stderr}"
    following = EXAMPLES[index + 1] if index + 1 < len(EXAMPLES) else None
    if following is not None and following[0] == "echo $?":
        assert str(proc.returncode) == following[1][0].strip(), (command, proc.returncode)
