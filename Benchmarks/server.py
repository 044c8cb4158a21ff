"""`savetool serve` against a Python server doing the same pushes, under wrk.

    python3 Benchmarks/server.py <savetool> <work dir> [--seconds 10] [--slots 10000]

For 1, 16 and 64 devices (wrk threads, one connection each; Benchmarks/push.lua), each device
pushes a 4 KB puzzle-game save to a slot of its own: half fast-forwards, half pushes from a
stale base that the server merges three ways. Both servers flush every version before they
answer. Run on a folder of the work dir (disk) and on /dev/shm (tmpfs), servers in turns.
Then the peak memory of `savetool serve` after first pushes to --slots slots.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import plistlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measure import settle_after_removing, wait_for_removals_to_settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_saves(work):
    with open(os.path.join(ROOT, "samples/blocks-2026/Library/Preferences/com.example.blocks.plist"), "rb") as f:
        defaults = plistlib.load(f)
    game = json.loads(defaults["gameSave"])
    level = 4
    while True:
        game["levelProgress"][str(level)] = {"stars": level % 4, "bestScore": level * 131, "completed": level % 3 != 0}
        defaults["gameSave"] = json.dumps(game, separators=(",", ":")).encode()
        if len(plistlib.dumps(defaults, fmt=plistlib.FMT_BINARY)) >= 4096:
            break
        level += 1
    paths = []
    for name, extra in (("a", 0), ("b", 7)):
        game["coins"] = game.get("coins", 0) + extra
        defaults["gameSave"] = json.dumps(game, separators=(",", ":")).encode()
        path = os.path.join(work, "save-%s.plist" % name)
        with open(path, "wb") as f:
            f.write(plistlib.dumps(defaults, fmt=plistlib.FMT_BINARY))
        paths.append(path)
    return paths


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command):
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    port = int(re.search(r":(\d+)\s*$", line).group(1))
    return process, port


def peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run_wrk(port, devices, seconds, saves):
    env = dict(os.environ, SAVE_A=saves[0], SAVE_B=saves[1])
    out = subprocess.run(
        ["wrk", "-t%d" % devices, "-c%d" % devices, "-d%ds" % seconds, "--latency", "-s", os.path.join(ROOT, "Benchmarks/push.lua"),
         "http://127.0.0.1:%d" % port], env=env, capture_output=True, text=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rate, p99ms, int(bad.group(1)) if bad else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("work")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--slots", type=int, default=10000)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    saves = make_saves(args.work)
    print("save: %d bytes; wrk %ss per run" % (os.path.getsize(saves[0]), args.seconds))
    print()
    print("| store | devices | savetool pushes/s | p99 | peak | Python pushes/s | p99 | savetool ÷ Python |")
    print("|---|---|---|---|---|---|---|---|")
    places = [("disk", os.path.join(os.path.abspath(args.work), "stores"))]
    if os.path.isdir("/dev/shm"):
        places.append(("tmpfs", tempfile.mkdtemp(prefix="savetool-serve-bench-", dir="/dev/shm")))
    wait_for_removals_to_settle(Path(args.work))
    for place, folder in places:
        for devices in (1, 16, 64):
            results = {}
            for tool in ("savetool", "python"):
                # A store of its own per run, none removed before the place is done: on ext4
                # without a journal, creating files within 30 s of removing many makes the
                # kernel skip the recently freed inodes one by one (`recently_deleted` in
                # `perf`), which made whichever server ran after a removal pay for it.
                store = os.path.join(folder, "%s-%d" % (tool, devices))
                shutil.rmtree(store, ignore_errors=True)
                os.makedirs(store)
                if tool == "savetool":
                    command = [args.savetool, "--quiet", "serve", "--store", store, "--port", "0", "--max-connections", "256"]
                else:
                    command = [sys.executable, os.path.join(ROOT, "Benchmarks/sync_server.py"), store, "0"]
                process, port = start(command)
                try:
                    rate, p99, bad = run_wrk(port, devices, args.seconds, saves)
                    results[tool] = (rate, p99, bad, peak_kib(process.pid))
                finally:
                    process.terminate()
                    process.wait()
            (s_rate, s_p99, s_bad, s_peak), (p_rate, p_p99, p_bad, _) = results["savetool"], results["python"]
            note = "" if s_bad + p_bad == 0 else " (non-200: savetool %d, Python %d)" % (s_bad, p_bad)
            print("| %s | %d | %.0f | %.1f ms | %.0f MiB | %.0f | %.1f ms | %.2f×%s |" % (
                place, devices, s_rate, s_p99, s_peak / 1024, p_rate, p_p99, s_rate / p_rate if p_rate else 0, note), flush=True)
        if place == "disk":
            settle_after_removing(Path(args.work), [folder])  # see measure.py: the next run waits
        else:
            shutil.rmtree(folder, ignore_errors=True)

    # Memory with many slots: first pushes to --slots slots, then the server's peak.
    store = tempfile.mkdtemp(prefix="savetool-serve-slots-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    process, port = start([args.savetool, "--quiet", "serve", "--store", store, "--port", "0"])
    try:
        body = open(saves[0], "rb").read()

        def push_slots(worker):
            connection = http.client.HTTPConnection("127.0.0.1", port)
            for index in range(worker, args.slots, 8):
                connection.request("PUT", "/v1/spaces/bench/s%d/slots/Library/Preferences/s%d.plist" % (index % 8, index), body,
                                   {"If-None-Match": "*"})
                answer = connection.getresponse()
                answer.read()
                if answer.status != 200:
                    raise SystemExit("slot %d: %d" % (index, answer.status))

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(push_slots, range(8)))
        listed = subprocess.run(["curl", "-s", "http://127.0.0.1:%d/v1/spaces/bench/s0/slots" % port], capture_output=True, text=True).stdout
        print()
        print("%d slots pushed (%d listed in one space of 8): savetool serve's peak memory %.0f MiB" % (
            args.slots, len(json.loads(listed)), peak_kib(process.pid) / 1024))
    finally:
        process.terminate()
        process.wait()
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
