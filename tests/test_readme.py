"""The README's and docs/'s examples, run: every ``$ command`` of the ``console`` blocks of ``README.md`` and
``docs/*.md`` whose paths exist here (the corpus, the fixtures) is run from the project root, and its output must be
what the page shows.

A README line ``...`` stands for any number of lines, and ``...`` inside a line for any text; everything else is
compared as written (trailing spaces and blank lines aside). ``$ echo $?`` shows the previous command's exit code.
A command naming paths that exist nowhere here (``/var/lib/kafka/data``, ``...``-shortened paths) is illustrative and
skipped, and the test says how many there are, so the pages cannot drift without a test turning red.
The pages' relative links must point at files (and headings) that exist, the README must show every command, and
docs/commands.md must name every option of every command.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .clirun import cli
from .conftest import PROJECT_ROOT, corpus_root

README = PROJECT_ROOT / "README.md"
PAGES = [README, *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples() -> list[tuple[str, list[str], str]]:
    """(command, expected output lines, ``page:line``) of every ``$`` line of every page."""
    found: list[tuple[str, list[str], str]] = []
    for page in PAGES:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            first_line = text[: m.start(1)].count("\n") + 1
            current: tuple[str, list[str], str] | None = None
            for i, line in enumerate(m.group(1).splitlines()):
                if line.startswith("$ "):
                    current = (line[2:], [], f"{page.relative_to(PROJECT_ROOT)}:{first_line + i}")
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


def test_the_pages_have_examples_and_most_run() -> None:
    ran = [c for c, _e, _n in EXAMPLES if c != "echo $?" and runnable(c)]
    skipped = [c for c, _e, _n in EXAMPLES if c != "echo $?" and not runnable(c)]
    in_readme = [c for c, _e, n in EXAMPLES if n.startswith("README.md:") and c != "echo $?" and runnable(c)]
    assert len(ran) >= 40 and len(skipped) <= 8 and len(in_readme) >= 15, skipped


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[n for _c, _e, n in EXAMPLES])
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
    assert pattern(expected).match(output), f"$ {command}\n--- {_line}:\n" + "\n".join(expected) + \
        f"\n--- got:\n{output}--- stderr:\n{proc.stderr}"
    following = EXAMPLES[index + 1] if index + 1 < len(EXAMPLES) else None
    if following is not None and following[0] == "echo $?":
        assert str(proc.returncode) == following[1][0].strip(), (command, proc.returncode)


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text()).splitlines():
        if m := re.match(r"#{1,6} (.*)", line):
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
    return {f"{base}-{i}" if i else base for base, n in seen.items() for i in range(n)}


def links() -> list[tuple[str, str, Path]]:
    """(``page``, link, page) of every relative link outside code blocks."""
    return [(str(page.relative_to(PROJECT_ROOT)), m.group(1), page) for page in PAGES
            for m in LINK.finditer(FENCE.sub("", page.read_text()))
            if not re.match(r"[a-z]+:", m.group(1))]


@pytest.mark.parametrize(("name", "link", "page"), links(), ids=[f"{n}->{x}" for n, x, _p in links()])
def test_relative_links_point_at_files_and_headings(name: str, link: str, page: Path) -> None:
    target, _, anchor = link.partition("#")
    path = (page.parent / target).resolve() if target else page
    assert path.exists(), f"{name}: {link}: no such file {path}"
    if anchor and path.suffix == ".md":
        assert anchor in anchors(path), f"{name}: {link}: no heading #{anchor} in {path.name} ({sorted(anchors(path))})"


def help_text(*command: str) -> str:
    proc = cli(*command, "--help", env={"COLUMNS": "200"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def commands() -> list[str]:
    """The commands ``kafkatool --help`` lists (a group's as ``group sub``)."""
    names = []
    for name in re.findall(r"^  ([a-z][\w-]*)  ", help_text().partition("Commands:")[2], re.M):
        group = help_text(name).partition("Commands:")[2]
        names += [f"{name} {sub}" for sub in re.findall(r"^  ([a-z][\w-]*)  ", group, re.M)] or [name]
    return names


COMMANDS = commands()


def test_the_readme_shows_every_command() -> None:
    blocks = "".join(re.findall(r"```(?:console|sh)\n(.*?)```", README.read_text(), re.S))
    assert len(COMMANDS) >= 16
    assert not [c for c in COMMANDS if f"kafkatool {c} " not in blocks]


@pytest.mark.parametrize("command", COMMANDS)
def test_commands_md_names_every_option(command: str) -> None:
    text = (PROJECT_ROOT / "docs" / "commands.md").read_text()
    section = re.search(rf"^## {re.escape(command)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, f"docs/commands.md has no section '## {command}'"
    options = set(re.findall(r"^  (?:-\w, )?(--[\w-]+)", help_text(*command.split()).partition("Options:")[2], re.M))
    assert options - {"--help"}, command
    assert not [o for o in sorted(options - {"--help"}) if f"`{o}" not in section.group(1)]
