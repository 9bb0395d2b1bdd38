"""Eval vocabulary on top of the domain: models, sensors, scoring and interpretation."""
