"""ix: experiments on stochastic subjects, with statistics that are right at small N."""

__version__ = "0.1.0"

__all__ = ["__version__"]
