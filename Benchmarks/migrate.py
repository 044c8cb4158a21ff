#!/usr/bin/env python3
"""Migration benchmark: savetool migrate against a Python script doing the same migration.

    migrate.py SAVETOOL WORKDIR [--counts 10000 100000]

Generates COUNT version-1 Kape tournaments (~2 KB each, 100 to a folder), then times in one
run `savetool migrate DIR --out OUT` and a Python peer that loads, transforms (v1 → v3, the
same rules as Formats/kape.tournament) and dumps each file with the json module, once as is and
once ending with a sync as savetool does.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import time
import sys
from pathlib import Path

from measure import measure, settle_after_removing, wait_for_removals_to_settle

PEER = r'''
import json, os, sys
source, target = sys.argv[1], sys.argv[2]
for folder, _, files in os.walk(source):
    for name in files:
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            save = json.load(f)
        scores = save.pop("scores")
        if any(key not in save["players"] for key in scores):
            raise SystemExit(f"{path}: a score for a name not in players")
        save["players"] = [{"name": n, "score": scores.get(n, 0)} for n in save["players"]]
        save["schemaVersion"] = 3
        # Renamed keys keep their places, as savetool keeps them.
        renames = {"roundIndex": "round", "currentPlayerIndex": "activePlayerIndex"}
        save = {renames.get(key, key): value for key, value in save.items()}
        total = save.get("totalRounds")
        finished = isinstance(total, (int, float)) and save["round"] >= total
        save.setdefault("status", "finished" if finished else "playing")
        out = os.path.join(target, os.path.relpath(path, source))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(save, f, ensure_ascii=False, indent=2)
if "--sync" in sys.argv:
    os.sync()  # what savetool does once at the end of --out: everything on disk before it reports
'''

NAMES = ["Ana", "Besa", "Drita", "Zoë", "Lojtari é", "玩家", "Gjergj", "Teuta", "Arbër", "Erion", "Flutura", "Genti", "Hana", "Ilir", "Jeta"]


def generate(directory, count):
    rng = random.Random(count)
    for index in range(count):
        players = rng.sample(NAMES, rng.randint(6, 12))
        save = {"players": players, "scores": {p: rng.randint(0, 50) for p in players if rng.random() < 0.9},
                "roundIndex": rng.randint(0, 20), "currentPlayerIndex": rng.randint(0, len(players) - 1),
                "deckId": rng.choice(["classic", "party", "spicy"]), "usedCardIds": [rng.randint(1, 500) for _ in range(rng.randint(150, 230))]}
        if rng.random() < 0.5:
            save["totalRounds"] = rng.randint(5, 20)
        folder = directory / f"{index // 100:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"tournament-{index}.json").write_text(json.dumps(save, ensure_ascii=False, indent=2))


def measure_tool(command):
    run = measure(command, keep_stdout=True)
    if run.status != 0:
        sys.exit(f"{' '.join(command)} failed: {(run.stdout + run.stderr)[-500:]}")
    return run.elapsed, run.peak, run.stdout + run.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--counts", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool (the median is kept)")
    args = parser.parse_args()
    work = Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    wait_for_removals_to_settle(work)
    peer = work / "peer.py"
    peer.write_text(PEER)
    rows = []
    for count in args.counts:
        source = work / f"v1-2kb-{count}"
        if not source.exists():
            generate(source, count)
        size = sum(f.stat().st_size for f in source.rglob("*.json"))
        # Read once before the first timed run, so that no tool pays for reading from the disk
        # what the runs after it find in memory.
        for f in source.rglob("*.json"):
            f.read_bytes()
        tools = [
            ("savetool", lambda t: [args.savetool, "migrate", str(source), "--out", str(t)]),
            ("python", lambda t: [sys.executable, str(peer), str(source), str(t)]),
            ("python + sync", lambda t: [sys.executable, str(peer), str(source), str(t), "--sync"]),
        ]
        times = {name: [] for name, _ in tools}
        peaks = {name: 0 for name, _ in tools}
        # The tools take turns, run after run, so that they share the disk's good and bad moments.
        # Each run writes a folder of its own, and none is removed until every count is done: on
        # ext4 without a journal, creating files within 60 s of removing many (360 s while the
        # inode table is not yet written) makes the kernel skip the recently freed inodes one by
        # one (`recently_deleted`, 16% of a run's samples in `perf`), which slowed whichever
        # tool ran after a removal up to tenfold.
        for run in range(args.runs):
            for name, command in tools:
                target = work / f"out-{name.replace(' + ', '-')}-{count}-{run}"
                shutil.rmtree(target, ignore_errors=True)
                elapsed, peak, output = measure_tool(command(target))
                times[name].append(elapsed)
                peaks[name] = max(peaks[name], peak)
                print(f"{count:7d} {name:14} {elapsed:7.2f} s {count / elapsed:8.0f} files/s {peak / 2**20:6.0f} MiB  {output.strip().splitlines()[-1] if output.strip() else ''}",
                      file=sys.stderr, flush=True)
        for name, _ in tools:
            rows.append((count, size, name, statistics.median(times[name]), min(times[name]), max(times[name]), peaks[name]))
    settle_after_removing(work, [work / f"out-{name.replace(' + ', '-')}-{count}-{run}"
                                 for count in args.counts for run in range(args.runs) for name in ("savetool", "python", "python + sync")])
    print(f"median of {args.runs} runs (range in brackets)")
    print()
    print("| files | total size | tool | time | files/s | peak memory |")
    print("|---|---|---|---|---|---|")
    for count, size, name, median, fastest, slowest, peak in rows:
        print(f"| {count:,} | {size / 1e6:.0f} MB | {name} | {median:.2f} s ({fastest:.2f}–{slowest:.2f}) | {count / median:,.0f} | {peak / 2**20:.0f} MiB |")

if __name__ == "__main__":
    main()
