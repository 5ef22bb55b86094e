#!/usr/bin/env python3
"""Serves a command scorer's `score(request)` over HTTP, for a `type: http` check: each POST
body is one request object, each response body its reply. Standard library only.

  python3 examples/scorers/serve_http.py examples/scorers/citations.py --port 8099
  # suite: {name: cites_sources, type: http, url: "http://127.0.0.1:8099/score",
  #         headers: {Authorization: "Bearer ${SCORER_TOKEN}"}, fields: [summary, sources],
  #         args: {answer: summary}}

With SCORER_TOKEN set in its environment, a request without `Authorization: Bearer <token>`
gets a 401.
"""

import argparse
import importlib.util
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def load(path):
    spec = importlib.util.spec_from_file_location("scorer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.score


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scorer", help="a Python file defining score(request) -> reply")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    score = load(args.scorer)
    token = os.environ.get("SCORER_TOKEN")
    # A command scorer is written for one request at a time: the threads take turns.
    one_at_a_time = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                return self.reply(401, {"error": "unauthorized"})
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length))
            except ValueError as e:
                return self.reply(400, {"error": f"the body is not JSON: {e}"})
            try:
                with one_at_a_time:
                    reply = score(request)
            except Exception as e:
                reply = {"score": None, "reason": f"scorer error: {type(e).__name__}: {e}"}
            self.reply(200, reply)

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_):
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
