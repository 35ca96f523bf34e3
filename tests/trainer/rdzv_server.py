#!/usr/bin/python3
"""A rendezvous store speaking the controller's API, for libtrainer's tests.

    PUT /<key>              body = value            -> 200
    GET /<key>?wait_ms=N    (N <= 60000)            -> 200 value, or 404
                                                       after N ms

Every request needs "Authorization: Bearer <token>" (401 otherwise).
Usage: rdzv_server.py TOKEN; prints the port it listens on (127.0.0.1),
then serves until killed or until stdin closes.
"""
import http.server
import re
import sys
import threading
import urllib.parse

KEY = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
MAX_VALUE = 65536

store = {}
cond = threading.Condition()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        self.wfile.write(body)

    def check(self):
        url = urllib.parse.urlsplit(self.path)
        # The store may sit under any prefix: the key is the last part.
        key = url.path.rsplit("/", 1)[-1]
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.reply(401, b"unauthorized")
            return None, None
        if not KEY.match(key):
            self.reply(400, b"bad key")
            return None, None
        return key, urllib.parse.parse_qs(url.query)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else b""
        key, _ = self.check()
        if key is None:
            return
        if n > MAX_VALUE:
            self.reply(413, b"too big")
            return
        with cond:
            store[key] = body
            cond.notify_all()
        self.reply(200)

    def do_GET(self):
        key, query = self.check()
        if key is None:
            return
        try:
            wait_ms = int(query.get("wait_ms", ["0"])[0])
        except ValueError:
            self.reply(400, b"bad wait_ms")
            return
        if wait_ms < 0 or wait_ms > 60000:
            self.reply(400, b"bad wait_ms")
            return
        with cond:
            cond.wait_for(lambda: key in store, timeout=wait_ms / 1000.0)
            value = store.get(key)
        if value is None:
            self.reply(404, b"not found")
        else:
            self.reply(200, value)


TOKEN = sys.argv[1] if len(sys.argv) > 1 else "secret"
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
# The test holds our stdin open; when it exits (even by crashing) we go.
sys.stdin.read()
