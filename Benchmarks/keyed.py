"""Resolving a keyed archive (NSKeyedArchiver) to JSON: savetool convert against nska-deserialize.

    python3 Benchmarks/keyed.py <savetool> <work dir> [--megabytes 20] [--runs 3]

The archive (many players with items, dates and dictionaries) is written by bpylist2 through
Tests/SaveKitTests/Oracles/keyed_oracle.py, in the Python environment scripts/setup makes
(.tools/oracles), on a tmpfs when there is one. Both tools write JSON to a file; runs take turns.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from measure import measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".tools/oracles/bin/python")
NSKA_TO_JSON = """
import base64, datetime, json, sys
import nska_deserialize
def plain(value):
    if isinstance(value, datetime.datetime): return value.isoformat()
    if isinstance(value, (bytes, bytearray)): return base64.b64encode(value).decode()
    raise TypeError(type(value))
with open(sys.argv[2], "w") as out:
    json.dump(nska_deserialize.deserialize_plist(sys.argv[1], format=dict), out, default=plain, ensure_ascii=False)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("work")
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not os.access(PYTHON, os.X_OK):
        sys.exit("bench: the Python oracles are not installed: run scripts/setup")
    os.makedirs(args.work, exist_ok=True)
    base = "/dev/shm" if os.path.isdir("/dev/shm") else args.work
    folder = tempfile.mkdtemp(prefix="savetool-keyed-bench-", dir=base)
    try:
        archive = os.path.join(folder, "game.archive")
        subprocess.run([PYTHON, os.path.join(ROOT, "Tests/SaveKitTests/Oracles/keyed_oracle.py"), "large", archive, str(args.megabytes)], check=True,
                       stdout=subprocess.DEVNULL)
        size = os.path.getsize(archive)
        tools = {
            "savetool": [args.savetool, "convert", archive, "--to", "json", "-o", os.path.join(folder, "savetool.json")],
            "nska-deserialize": [PYTHON, "-c", NSKA_TO_JSON, archive, os.path.join(folder, "nska.json")],
        }
        results = {name: [] for name in tools}
        for _ in range(args.runs):
            for name, command in tools.items():
                run = measure(command)
                if run.status != 0:
                    sys.exit(f"bench: {name} failed: {run.stderr[-500:]}")
                results[name].append(run)
        print(f"keyed archive: {size / 1e6:.1f} MB on {'tmpfs' if base == '/dev/shm' else 'disk'}, {args.runs} runs each, medians (range)")
        print()
        print("| tool | time | MB/s | peak memory |")
        print("|---|---|---|---|")
        medians = {}
        for name, runs in results.items():
            times = [run.elapsed for run in runs]
            medians[name] = statistics.median(times)
            peak = max(run.peak for run in runs) / 2**20
            print(f"| {name} | {medians[name]:.2f} s ({min(times):.2f}–{max(times):.2f}) | {size / 1e6 / medians[name]:.0f} | {peak:.0f} MiB |")
        print()
        print(f"savetool is {medians['nska-deserialize'] / medians['savetool']:.1f}× nska-deserialize")
    finally:
        subprocess.run(["rm", "-rf", folder])


if __name__ == "__main__":
    main()
