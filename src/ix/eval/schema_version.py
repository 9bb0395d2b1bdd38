"""The version of every JSON file and output ix writes (summary, report, ...): MAJOR.MINOR.

Its own module, so that a reader can name it without importing the schemas themselves
(`ix.eval.schemas`: some sixty types, built at import)."""

SCHEMA_VERSION = "2.6"
