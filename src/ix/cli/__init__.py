"""The `ix` command line. `main` is the console script: `ix --version` is answered here,
before typer is imported; everything else goes to the command tree of `ix.cli.main`."""

import gc
import sys

from ix._version import __version__


def main() -> None:
    """The `ix` console script."""
    if sys.argv[1:] == ["--version"]:  # as the root's eager --version answers it, faster
        sys.stdout.write(f"ix {__version__}\n")
        return
    # No collection while the command's modules import: they make only objects that live as
    # long as the process, and collections between imports walked them over and over (~40 ms
    # of a report). The root callback of `ix.cli.main` freezes them and turns the collector
    # on before the command itself runs.
    gc.disable()
    from ix.cli.main import main as run  # typer and the command tree: deferred, not needed above

    run()
