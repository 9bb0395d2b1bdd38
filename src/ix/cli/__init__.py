"""The `ix` command line. `main` is the console script: `ix --version` is answered here,
before typer is imported; a running `ix serve` takes the command if there is one
(`ix.cli.warm`); everything else goes to the command tree of `ix.cli.main`."""

import gc
import sys

from ix._version import __version__
from ix.cli.warm import forwarded


def main() -> None:
    """The `ix` console script."""
    if sys.argv[1:] == ["--version"]:  # as the root's eager --version answers it, faster
        sys.stdout.write(f"ix {__version__}\n")
        return
    code = forwarded(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    run_here()


def run_here() -> None:
    """The command of `sys.argv`, in this process (`ix serve`'s children start here)."""
    # No collection while the command's modules import: they make only objects that live as
    # long as the process, and collections between imports walked them over and over (~40 ms
    # of a report). The root callback of `ix.cli.main` freezes them and turns the collector
    # on before the command itself runs.
    gc.disable()
    from ix.cli.main import main as run  # typer and the command tree: deferred, not needed above

    try:
        run()
    finally:
        # The process ends here, and the interpreter's exit runs a last collection over every
        # object the command made or imported (0.1-0.15 s once numpy and scipy are in). Frozen,
        # they are still freed as the modules are torn down, by their reference counts; only
        # what sits in a reference cycle is left to the operating system.
        gc.freeze()
