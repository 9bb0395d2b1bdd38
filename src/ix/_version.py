"""The version of ix, in a leaf module every layer may import (`ix` itself imports the API)."""

__version__ = "0.1.0"
