"""The ``kafkatool`` command: assembles the command groups (their exit codes: :mod:`kafkatool.cli.exits`).

Heavy modules are imported inside the commands, so ``kafkatool --help`` starts fast.
"""

from __future__ import annotations

import gc
import sys

import typer

from .commands import LazyGroup, group, lazy_command, lazy_group
from .exits import EXIT_OK


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("kafkatool")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from .. import __version__ as v
        sys.stdout.write(f"kafkatool {v}\n")
        raise typer.Exit(EXIT_OK)


class _Kafkatool(LazyGroup):
    """The ``kafkatool`` command: its commands in the order ``--help`` lists them."""

    lazy = {
        "dump": lazy_command("dump_cmd", "dump", "EXAMPLES"),
        "verify": lazy_command("verify_cmd", "verify", "EXAMPLES"),
        "overview": lazy_command("overview_cmd", "overview", "EXAMPLES"),
        "locate": lazy_command("locate_cmd", "locate", "EXAMPLES"),
        "replicas": lazy_command("replicas_cmd", "replicas", "REPLICAS_EXAMPLES"),
        "truncation": lazy_command("replicas_cmd", "truncation", "TRUNCATION_EXAMPLES"),
        "epochs": lazy_command("replicas_cmd", "epochs", "EPOCHS_EXAMPLES"),
        "repair": lazy_command("repair_cmd", "repair", "EXAMPLES"),
        "offsets": lazy_command("internal_cmd", "offsets", "OFFSETS_EXAMPLES"),
        "groups": lazy_command("internal_cmd", "groups", "GROUPS_EXAMPLES"),
        "partition-for": lazy_command("internal_cmd", "partition_for", "PARTITION_FOR_EXAMPLES"),
        "txn-state": lazy_command("internal_cmd", "txn_state", "TXN_STATE_EXAMPLES"),
        "share-state": lazy_command("internal_cmd", "share_state", "SHARE_STATE_EXAMPLES"),
        "tiered": lazy_command("internal_cmd", "tiered", "TIERED_EXAMPLES"),
        "metadata": lazy_command("internal_cmd", "metadata", "METADATA_EXAMPLES"),
        "schemas": lazy_command("schemas_cmd", "schemas", "EXAMPLES"),
        "delivery": lazy_command("delivery_cmd", "delivery", "EXAMPLES"),
        "producers": lazy_command("producers_cmd", "producers", "PRODUCERS_EXAMPLES"),
        "txns": lazy_command("producers_cmd", "txns", "TXNS_EXAMPLES"),
        "spark": lazy_group("spark_cmd", "app"),
    }


app = group(
    "kafkatool",
    "Inspect and repair Apache Kafka log directories offline, straight from broker disks: no broker, no JVM.\n\n"
    "Exit codes: 0 clean, 1 findings, 2 usage error or nothing Kafka under a path, 3 I/O error; "
    "70 internal error (a bug in kafkatool), 130 interrupted (Ctrl-C), 141 output pipe closed.",
    _Kafkatool,
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show kafkatool's version and exit."),
) -> None:
    """Inspect and repair Apache Kafka log directories offline: no broker, no JVM."""


def main() -> None:
    # gc.freeze(): the objects alive now (the modules imported) are never traversed by the cyclic collector again,
    # in this run's collections nor in the one the interpreter makes at exit (~15 ms with typer loaded), which
    # also skips what the command leaves: the process exits next and the OS takes the memory back.
    gc.freeze()
    gc.enable()  # kafkatool.cli.main() turned it off while this module was imported
    try:
        app(prog_name="kafkatool")
    finally:
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    main()
