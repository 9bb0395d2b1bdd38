"""ix: experiments on stochastic subjects, with statistics that are right at small N."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ix-lab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
