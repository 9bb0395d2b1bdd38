"""The `lookup` tool: the call's input ({"city": ...}) on stdin, the temperature out."""
import hashlib
import json
import sys

city = json.load(sys.stdin)["city"]
celsius = 5 + hashlib.sha256(city.encode()).digest()[0] % 25
print(json.dumps({"city": city, "celsius": celsius}))
