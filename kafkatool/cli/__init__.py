"""The ``kafkatool`` command line (typer, and rich for terminals): presentation only. See :mod:`kafkatool.cli.main`."""


def main() -> None:
    """The ``kafkatool`` command (the console script and ``python -m kafkatool``): :func:`kafkatool.cli.main.main`,
    with the cyclic garbage collector off while the CLI is imported. Importing typer makes objects that nearly all
    stay alive: the ~30 collections its allocations would trigger free a few hundred objects for ~3 ms of a run's
    start. :func:`kafkatool.cli.main.main` freezes what the imports made and turns the collector back on."""
    import gc

    gc.disable()
    from .main import main as run

    run()
