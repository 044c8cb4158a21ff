#!/usr/bin/env python3
"""Start-up benchmark: a one-file command, the whole process timed, beside plutil and Python.

    startup.py SAVETOOL WORKDIR [--runs 40]

Writes a small binary plist (about 500 bytes, a puzzle game's preferences), then times, in
turns, `savetool convert FILE --to json` and `savetool --version` against `plutil -convert
xml1 -o - FILE` (when
plutil is installed) and a Python plistlib one-liner that prints the same file as JSON. Each run
is the wall clock of a whole process (no GNU time wrapper, no sync: start-up is CPU and loading,
and the wrapper would add its own). Prints the median and range of each, and the ratio to plutil.
"""
import argparse
import plistlib
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(command):
    start = time.perf_counter()
    status = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    if status != 0:
        sys.exit(f"startup.py: {' '.join(command)} failed ({status})")
    return (time.perf_counter() - start) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    save = work / "com.example.blocks.plist"
    prefs = {"gameSave": b'{"playerLevel": 14, "currentXP": 2380, "coinBalance": 1275, "unlockedThemes": ["classic", "neon"]}',
             "soundEnabled": True, "musicVolume": 0.8, "lastOpened": "2026-11-20T08:00:00Z",
             "achievements": {f"a{i}": i * 3 for i in range(20)}}
    save.write_bytes(plistlib.dumps(prefs, fmt=plistlib.FMT_BINARY))
    commands = {
        "savetool convert --to json": [args.savetool, "convert", str(save), "--to", "json"],
        "savetool --version": [args.savetool, "--version"],
        "python plistlib → json": [sys.executable, "-c", "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb')), default=str))", str(save)],
    }
    plutil = shutil.which("plutil")
    if plutil:
        commands["plutil -convert xml1"] = [plutil, "-convert", "xml1", "-o", "-", str(save)]
    times = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():  # in turns, so that a busy moment hits all alike
            times[name].append(timed(command))
    print(f"{save.stat().st_size}-byte binary plist; median of {args.runs} runs in turns (range)")
    print("| command | time | ÷ plutil |")
    print("|---|---|---|")
    reference = statistics.median(times["plutil -convert xml1"]) if plutil else None
    for name, values in times.items():
        median = statistics.median(values)
        ratio = f"{median / reference:.2f}×" if reference else "—"
        print(f"| {name} | {median:.1f} ms ({min(values):.1f}–{max(values):.1f}) | {ratio} |")


if __name__ == "__main__":
    main()
