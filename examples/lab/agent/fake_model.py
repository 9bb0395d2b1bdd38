"""A scripted stand-in for the Anthropic Messages API, for the offline agent example.

    python3 fake_model.py PORT_FILE     # serves on 127.0.0.1, a free port written to PORT_FILE

`scripts/example` starts it and points the example's `anthropic` subjects at it
(ANTHROPIC_BASE_URL). It plays a weather assistant with two tools: it looks the city up,
then converts to Fahrenheit when the user asks for it, or when its system prompt does (it
forgets that for a third of the cities, drawn from the city's name). Its
answers are a script, not a model: the run shows how ix measures an agent, not how Claude
would do.
"""

import hashlib
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def turn_results(messages: list[dict]) -> list[str]:
    """The tool results sent back since the user's last message."""
    out: list[str] = []
    for m in messages:
        content = m.get("content")
        if m.get("role") != "user" or not isinstance(content, list):
            continue
        results = [b.get("content", "") for b in content if b.get("type") == "tool_result"]
        out = out + results if results else []
    return out


def answer(body: dict) -> dict:
    messages = body["messages"]
    said = json.dumps(messages)
    city = re.search(r"warm is it in ([A-Z][a-z]+)", said).group(1)
    system = body.get("system", "")
    # told to answer in Fahrenheit, it still forgets for a third of the cities
    forgets = hashlib.sha256(city.encode()).digest()[0] % 3 == 0
    wants_f = ("Fahrenheit" in system and not forgets) or "Fahrenheit, please" in said
    results = turn_results(messages)
    if not results:
        return {"type": "tool_use", "id": f"toolu_{len(messages)}_0", "name": "lookup",
                "input": {"city": city}}
    if len(results) == 1 and wants_f:
        celsius = json.loads(results[0])["celsius"]
        return {"type": "tool_use", "id": f"toolu_{len(messages)}_1", "name": "convert",
                "input": {"celsius": celsius}}
    if len(results) == 2:
        return {"type": "text", "text": f"It is {results[1]} °F in {city}."}
    return {"type": "text", "text": f"It is {json.loads(results[0])['celsius']} °C in {city}."}


class Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # headers and body at once, not 40 ms apart
    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        block = answer(body)
        reply = json.dumps({
            "id": "msg_example", "type": "message", "role": "assistant",
            "model": body["model"], "content": [block],
            "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
            "usage": {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 24}})
        data = reply.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1], "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()
