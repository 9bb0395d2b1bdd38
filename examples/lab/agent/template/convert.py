"""The `convert` tool: {"celsius": N} on stdin, Fahrenheit out."""
import json
import sys

print(f"{json.load(sys.stdin)['celsius'] * 9 / 5 + 32:g}")
