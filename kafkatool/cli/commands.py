"""The command classes the CLI is built with: typer's, with plain help and cheap option parsing.

typer 0.29 renders help through rich (which pulls in markdown_it and pygments) and converts every option value
through a pydantic TypeAdapter, importing pydantic on every run: together about ten times the cost of starting
Python. kafkatool's options are plain (text, integers with a lower bound, paths, flags, lists of those), so:

- help is click's plain formatter, with metavars people read (``PATHS...``, ``text|jsonl``, ``INTEGER``,
  ``PATH``) instead of typer's ``{paths}...`` and ``<list[Path]>``, and the examples printed as written (they
  are already cut between shell words, with backslash continuations, to paste as they stand);
- a plain option is converted by a few lines of Python; anything else still goes through typer;
- a group builds a command only when it is used (:class:`LazyGroup`): typer builds one by reading its function's
  signature and evaluating its annotations, which for all of kafkatool's commands cost more than starting Python
  (the command modules do without ``from __future__ import annotations``, so typer finds the annotations evaluated
  rather than compiling each from its string).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, get_args, get_origin

import typer
from typer import _click
from typer._click.shell_completion import CompletionItem
from typer._coercion import RuntimeParam
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info, get_group
from typer.models import CommandInfo

from .exits import command

_PLAIN = (str, int, float, Path, bool)
_BOOL = {"1": True, "true": True, "yes": True, "y": True, "on": True, "0": False, "false": False, "no": False,
         "n": False, "off": False}
_METAVAR = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "PATH"}
_MARKUP = re.compile(r"\[/?(?:bold|italic|dim)\]")


def _element(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is list else annotation


class _PlainParam(RuntimeParam):
    """Converts text, integers (with typer's ``min``/``max``), numbers, paths, booleans and lists of them."""

    def _coerce_value(self, value: Any, param: Any, ctx: _click.Context) -> Any:
        if get_origin(self.annotation) is list:
            return [self._one(_element(self.annotation), v, param, ctx) for v in value]
        return self._one(self.annotation, value, param, ctx)

    def _one(self, kind: type, value: Any, param: Any, ctx: _click.Context) -> Any:
        if kind in (str, Path):
            return kind(value)
        if kind is bool:
            if isinstance(value, bool):
                return value
            if str(value).strip().lower() not in _BOOL:
                raise _click.exceptions.BadParameter(f"{value!r} is not a valid boolean.", ctx=ctx, param=param)
            return _BOOL[str(value).strip().lower()]
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise _click.exceptions.BadParameter(
                f"{value!r} is not a valid {'integer' if kind is int else 'number'}.", ctx=ctx, param=param
            ) from None
        low, high = self.parameter_info.min, self.parameter_info.max
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = " and ".join(x for x in (low is not None and f"x>={low}", high is not None and f"x<={high}")
                                  if x)
            raise _click.exceptions.BadParameter(f"{number} is not in the range {bounds}.", ctx=ctx, param=param)
        return number


def _is_plain(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or descriptor.is_file or descriptor.is_choice:
        return False
    info = descriptor.parameter_info
    if info.parser is not None or getattr(info, "exists", False) or getattr(info, "resolve_path", False):
        return False
    return _element(descriptor.annotation) in _PLAIN


def _plain_options(command: _click.Command, ctx: _click.Context) -> None:
    """Give each plain parameter (``--help`` included) the cheap converter before typer builds its pydantic one."""
    for param in command.get_params(ctx):
        if getattr(param, "_runtime_param", False) is None and _is_plain(param):
            descriptor = param.type_descriptor
            param._runtime_param = _PlainParam(parameter_info=descriptor.parameter_info,
                                               annotation=descriptor.annotation)


def metavar(param: Any) -> str:
    """What a person types for ``param``: its declared metavar, else ``PATHS...`` for an argument named
    paths, else the kind of value (``TEXT``, ``INTEGER``, ``PATH``)."""
    many = param.nargs != 1
    if param.metavar:
        name = param.metavar
    elif param.param_type_name == "argument":
        name = param.name.upper()
    else:
        descriptor = getattr(param, "type_descriptor", None)
        kind = _element(descriptor.annotation) if descriptor is not None else str
        name = _METAVAR.get(kind, "TEXT")
    many = many and param.param_type_name == "argument" and not name.endswith("...")
    return name + ("..." if many else "")


def _usage_pieces(command: _click.Command, ctx: _click.Context) -> list[str]:
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if param.param_type_name == "argument":
            pieces.append(metavar(param) if param.required else f"[{metavar(param)}]")
    return pieces


def _format_params(command: _click.Command, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
    args, opts = [], []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        if param.param_type_name == "argument":
            args.append((metavar(param), record[1]))
        else:
            names = ", ".join(sorted(param.opts, key=len))
            if param.secondary_opts:
                names += " / " + ", ".join(param.secondary_opts)
            if not (param.is_flag or param.count):
                names += " " + metavar(param)
            opts.append((names, record[1]))
    for title, rows in (("Arguments", args), ("Options", opts)):
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows, col_max=32)


def _format_epilog(command: _click.Command, formatter: _click.HelpFormatter) -> None:
    """The epilog as written: a heading line, then the examples line by line, never re-wrapped."""
    if not command.epilog:
        return
    for block in _MARKUP.sub("", command.epilog).strip("\n").split("\n\n"):
        lines = block.splitlines()
        formatter.write_paragraph()
        if len(lines) == 1 and not lines[0].startswith(" "):
            formatter.write_text(lines[0].rstrip(":") + ":")  # a heading, as click writes "Options:"
            continue
        for line in lines:
            formatter.write(f"{'':>{formatter.current_indent}}{line}\n" if line.strip() else "\n")


def first_sentence(help_text: str) -> str:
    """A command's short help: the first sentence of its help, whole (click cuts it at 45 characters with ``...``)."""
    text = help_text.split("\n\n")[0]
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text


class _Plain:
    """What commands and groups share: plain help (metavars, options, epilog, a whole first sentence) and plain
    option conversion. Mixed in before typer's class, whose methods it overrides."""

    def format_epilog(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        _format_epilog(self, formatter)  # type: ignore[arg-type]

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help or first_sentence(self.help or "")  # type: ignore[attr-defined]

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        _plain_options(self, ctx)  # type: ignore[arg-type]
        return super().parse_args(ctx, args)  # type: ignore[misc]


class Command(_Plain, TyperCommand):
    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        return _usage_pieces(self, ctx)

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        _format_params(self, ctx, formatter)


class Group(_Plain, TyperGroup):
    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        return [*_usage_pieces(self, ctx), self.subcommand_metavar]

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        _format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)


class LazyCommand(NamedTuple):
    """A command a :class:`LazyGroup` lists by name and short help, and builds only when it is used."""

    short_help: Callable[[], str]
    build: Callable[[], _click.Command]


class _Commands(MutableMapping[str, _click.Command]):
    """A group's commands by name: every name known up front, each command built on first access."""

    def __init__(self, lazy: Mapping[str, LazyCommand]) -> None:
        self.lazy, self.built = lazy, dict[str, _click.Command]()

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self.built:
            self.built[name] = self.lazy[name].build()
        return self.built[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("a lazy group's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self.lazy), **dict.fromkeys(self.built)})

    def __len__(self) -> int:
        return len(self.lazy.keys() | self.built.keys())

    def short_help(self, name: str) -> str:
        return self.built[name].get_short_help_str() if name in self.built else self.lazy[name].short_help()


class LazyGroup(Group):
    """A group whose commands (``lazy``, set by a subclass) are built only when one runs, completes its options
    or shows its own help; the group's help and the completion of command names show their short help alone."""

    lazy: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands(self.lazy)

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)  # typer's own reads .items(), which would build every command

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        assert isinstance(self.commands, _Commands)
        rows = [(name, self.commands.short_help(name)) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def shell_complete(self, ctx: _click.Context, incomplete: str) -> list[CompletionItem]:
        assert isinstance(self.commands, _Commands)
        names = [CompletionItem(name, help=self.commands.short_help(name)) for name in self.list_commands(ctx)
                 if name.startswith(incomplete)]
        # then the group's own options: click's Command.shell_complete, past TyperGroup's (which builds every command)
        return names + super(TyperGroup, self).shell_complete(ctx, incomplete)


def paste_ready(examples: str, width: int = 76) -> str:
    """Examples whose long commands continue on the next line with a backslash, cut between shell words, so
    the help renderer never wraps one mid-word at 80 columns and each can be pasted as it stands."""
    out: list[str] = []
    for line in examples.splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        if len(line) <= width or line.lstrip().startswith("#"):
            out.append(line)
            continue
        words, current = _shell_words(line.strip()), indent
        for word in words:
            if current.strip() and len(current) + 1 + len(word) > width - 2:
                out.append(current + " \\")
                current = indent + "    "
            current += ("" if not current.strip() else " ") + word
        out.append(current)
    return "\n".join(out)


def _shell_words(text: str) -> list[str]:
    """``text`` split at spaces outside quotes (the quotes kept: the words are pasted back as they were)."""
    words, current, quote = [], "", None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if current:
                words.append(current)
            current = ""
            continue
        current += ch
    if current:
        words.append(current)
    return words


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph one line, for the terminal to wrap at its own width (the help
    renderer keeps hard line breaks, which cut sentences in two at any width but the source's)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def lazy_command(module: str, function: str, examples: str) -> LazyCommand:
    """The command ``function`` of ``kafkatool.cli.<module>``, with its ``examples`` under its help; the module is
    imported when the command is listed (its short help) or built, never before."""

    def load() -> tuple[Callable[..., int], str]:
        commands = importlib.import_module(f"{__package__}.{module}")
        return getattr(commands, function), getattr(commands, examples)

    def build() -> TyperCommand:
        fn, text = load()
        callback = command(fn)
        callback.__doc__ = reflow(fn.__doc__ or "")
        # named after its function, as typer's @app.command() names it: partition_for is partition-for
        info = CommandInfo(cls=Command, callback=callback, epilog=paste_ready(text))
        return get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)

    return LazyCommand(lambda: first_sentence(reflow(load()[0].__doc__ or "")), build)


def lazy_group(module: str, app: str) -> LazyCommand:
    """The typer group ``app`` of ``kafkatool.cli.<module>``, imported only when it is listed or used."""

    def load() -> typer.Typer:
        return getattr(importlib.import_module(f"{__package__}.{module}"), app)

    return LazyCommand(lambda: first_sentence(load().info.help), lambda: get_group(load()))


def group(name: str, help_text: str, cls: type[LazyGroup], **settings: Any) -> typer.Typer:
    """A typer app for a :class:`LazyGroup`: plain help (``-h`` too), no completion commands, no rich tracebacks
    (errors are :func:`kafkatool.cli.exits.command`'s one line)."""
    return typer.Typer(name=name, help=help_text, cls=cls, no_args_is_help=True, rich_markup_mode=None,
                       context_settings={"help_option_names": ["-h", "--help"]}, pretty_exceptions_enable=False,
                       **settings)
