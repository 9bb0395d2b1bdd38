"""A Python tool for tests/runtimes/test_tool_loop.py (`function: runtimes.agent_tools:...`)."""


def fahrenheit(celsius: float) -> str:
    """Celsius in Fahrenheit, as the model reads it."""
    return f"{celsius * 9 / 5 + 32:g}"
