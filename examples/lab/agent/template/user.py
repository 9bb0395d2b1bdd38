"""The simulated user (the experiment's `simulated_user`): wants the temperature in
Fahrenheit; asks for it once if the answer is in Celsius, gives up after that."""
import sys

prompt = sys.stdin.read()
last = prompt.split("ASSISTANT: ")[-1].split("\n\nWrite only")[0]
asked = prompt.count("Fahrenheit, please")
if "°F" in last:
    print("[DONE]")
elif asked:
    print("[GIVE UP]")
else:
    print("In Fahrenheit, please.")
