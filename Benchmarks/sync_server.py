"""The peer for `savetool serve` in the benchmark: the same API's push, written plainly with
Python's standard library, doing the same work per push.

    python3 Benchmarks/sync_server.py <store dir> <port>

A push with `If-None-Match: *` stores version 1; `If-Match: "B"` on the head stores the next
version; an older B is merged three ways with the head by the puzzle game's rules (the plist's
`launchCount` and the embedded GameSaveData's `coins` add both sides' changes, lists are a
union, `player` compares level then XP, numbers under `levelProgress` and `statistics` take the
larger, the rest the pushing device's). Each version is created exclusively and flushed with its
folder before the answer, as savetool does: a 200 means durable.
"""
import json
import os
import plistlib
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORE = sys.argv[1]
PORT = int(sys.argv[2])
locks = {}
locks_lock = threading.Lock()
heads = {}


def slot_lock(key):
    with locks_lock:
        return locks.setdefault(key, threading.Lock())


def version_path(folder, number):
    return os.path.join(folder, "v%010d" % number)


def read_version(folder, number):
    with open(version_path(folder, number), "rb") as f:
        raw = f.read()
    newline = raw.index(b"\n")
    return json.loads(raw[:newline]), raw[newline + 1:]


def create_version(folder, number, record, body):
    temporary = os.path.join(folder, ".tmp-%d-%d" % (threading.get_ident(), number))
    fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, json.dumps(record).encode() + b"\n" + body)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, version_path(folder, number))  # fails when the version exists
    finally:
        os.unlink(temporary)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def merge_value(path, base, local, remote):
    if local == remote and not (path in ("/coins", "/launchCount") and base is not None and base != local):
        return local
    if base == local:
        return remote
    if base == remote:
        return local
    if path in ("/coins", "/launchCount") and all(isinstance(v, (int, float)) for v in (base, local, remote)):
        return local + remote - base
    if path == "/player":
        return max(local, remote, key=lambda p: (p.get("level", 0), p.get("xp", 0)))
    if isinstance(local, dict) and isinstance(remote, dict):
        merged = {}
        for key in list(local) + [k for k in remote if k not in local]:
            b = base.get(key) if isinstance(base, dict) else None
            if key in local and key in remote:
                merged[key] = merge_value(path + "/" + key, b, local[key], remote[key])
            else:
                merged[key] = local.get(key, remote.get(key))
        return merged
    if isinstance(local, list) and isinstance(remote, list):
        return local + [item for item in remote if item not in local]
    if isinstance(local, (int, float)) and isinstance(remote, (int, float)) and (path.startswith("/levelProgress") or path.startswith("/statistics")):
        return max(local, remote)
    return local


def merge(base, local, remote):
    documents = [plistlib.loads(b) for b in (base, local, remote)]
    games = [json.loads(d["gameSave"]) for d in documents]
    merged_game = merge_value("", games[0], games[1], games[2])
    outer = merge_value("", {k: v for k, v in documents[0].items() if k != "gameSave"},
                        {k: v for k, v in documents[1].items() if k != "gameSave"},
                        {k: v for k, v in documents[2].items() if k != "gameSave"})
    outer["gameSave"] = json.dumps(merged_game, separators=(",", ":")).encode()
    return plistlib.dumps(outer, fmt=plistlib.FMT_BINARY)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without this, Nagle's algorithm and delayed
    # ACKs hold every answer back 40 ms.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", version=None):
        self.send_response(status)
        if version is not None:
            self.send_header("ETag", '"%d"' % version)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        length = int(self.headers.get("Content-Length", "0"))
        if length > 16 << 20:
            return self.answer(413)
        body = self.rfile.read(length)
        parts = self.path.split("/slots/", 1)
        if len(parts) != 2 or ".." in self.path:
            return self.answer(400)
        folder = os.path.join(STORE, parts[0].replace("/", "~"), parts[1].replace("/", "~"))
        try:
            plistlib.loads(body)  # the body must be a save
        except Exception:
            return self.answer(422)
        with slot_lock(folder):
            head = heads.get(folder)
            if head is None:
                os.makedirs(folder, exist_ok=True)
                head = max([int(n[1:]) for n in os.listdir(folder) if n.startswith("v")] or [0])
            device = self.headers.get("Device-Id")
            if self.headers.get("If-None-Match") == "*":
                if head:
                    return self.answer(412)
                stored, how, number = body, "first", 1
            else:
                base = int(self.headers.get("If-Match", '"-1"').strip('"'))
                if base < 1 or base > head:
                    return self.answer(412)
                number = head + 1
                if base == head:
                    stored, how = body, "fastForward"
                else:
                    _, base_bytes = read_version(folder, base)
                    _, head_bytes = read_version(folder, head)
                    stored, how = merge(base_bytes, body, head_bytes), "merged"
            create_version(folder, number, {"version": number, "how": how, "device": device}, stored)
            heads[folder] = number
        self.answer(200, stored, number)


ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print("listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
