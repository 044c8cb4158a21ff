#!/usr/bin/env python3
"""Merge benchmark: savetool merge of two device trees against a Python script with the same rules.

    merge.py SAVETOOL WORKDIR [--files 10000] [--runs 3]

Generates three trees (a base and two devices that each changed it) of FILES blocks.gamesave
saves (~1 KB of JSON each, 100 to a folder), then times in one run, the tools taking turns:
`savetool merge --kind blocks.gamesave --base … -o OUT` and a Python script that merges each
pair three ways by the rules of Formats/blocks.gamesave/merge.json (json.load, the rules,
json.dump, ending with os.sync() as savetool flushes before it puts the result in place). The
two outputs are compared value by value after the first run.
"""
import argparse
import json
import random
import shutil
import statistics
import sys
from pathlib import Path

from measure import measure

PEER = r'''
import json, os, sys
base_root, local_root, remote_root, target = sys.argv[1:5]

def compare(a, b):
    return (a > b) - (a < b)

def merge(path, b, l, r, three_way=True):
    """The rules of blocks.gamesave: three ways, most specific path first."""
    counter = path == "/coins" or (path.startswith("/statistics/") and path != "/statistics/bestCombo")
    # A change both sides made alike is one change, but for a counter (both earnings happened),
    # so a dictionary changed alike is looked into for its counters.
    if l == r and (l == b or not (counter or isinstance(l, dict))):
        return l
    if b == l:
        return r
    if b == r:
        return l
    if counter:
        if isinstance(b, (int, float)):
            return b + (l - b) + (r - b)
        if path == "/coins":
            raise SystemExit(f"conflict at {path}")
        return max(l, r)
    if path in ("/unlockedThemes", "/achievements"):
        return l + [x for x in r if x not in l]
    if path == "/settings":
        return l
    if path in ("/lastSaved", "/lastPlayed", "/statistics/bestCombo") or (
            path.startswith("/levelProgress/") and path.count("/") == 3):
        return max(l, r)
    if path == "/player":
        group = lambda p: (p.get("level"), p.get("xp"))
        return l if compare(group(l), group(r)) >= 0 else r
    if isinstance(l, dict) and isinstance(r, dict):
        out = {}
        for key in list(l) + [k for k in r if k not in l]:
            bb = b.get(key) if isinstance(b, dict) else None
            if key in l and key in r:
                out[key] = merge(path + "/" + key, bb, l[key], r[key])
            elif (key in l and l[key] == bb) or (key in r and r[key] == bb):
                continue  # removed on one side, unchanged on the other
            elif bb is None:
                out[key] = l[key] if key in l else r[key]
            else:
                raise SystemExit(f"conflict at {path}/{key}")
        return out
    raise SystemExit(f"conflict at {path}")

for folder, _, files in os.walk(local_root):
    for name in files:
        relative = os.path.relpath(os.path.join(folder, name), local_root)
        sides = []
        for root in (base_root, local_root, remote_root):
            with open(os.path.join(root, relative), encoding="utf-8") as f:
                sides.append(json.load(f))
        merged = merge("", *sides)
        out = os.path.join(target, relative)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            json.dump(merged, f, ensure_ascii=False, indent=2)
os.sync()
'''

THEMES = ["classic", "neon", "ocean", "desert", "lava", "forest", "candy", "night"]


def save(rng):
    levels = {str(i): {"stars": rng.randint(0, 3), "bestScore": rng.randint(0, 5000), "completed": rng.random() < 0.7}
              for i in range(1, rng.randint(3, 9))}
    return {
        "saveVersion": 2,
        "player": {"level": rng.randint(1, 40), "xp": rng.randint(0, 90000)},
        "coins": rng.randint(0, 2000),
        "unlockedThemes": rng.sample(THEMES, rng.randint(1, 4)),
        "levelProgress": levels,
        "achievements": ["first_clear"],
        "statistics": {"gamesPlayed": rng.randint(0, 500), "linesCleared": rng.randint(0, 9000),
                       "bestCombo": rng.randint(0, 12), "totalPlayTime": float(rng.randint(0, 300000))},
        "settings": {"soundEnabled": True, "hapticsEnabled": False, "theme": "classic"},
        "lastSaved": "2026-11-20T22:41:07Z",
        "lastPlayed": "2026-11-20T22:10:00Z",
    }


def played(document, rng, device):
    """What a device does to a save in a day: coins, XP, a level, a theme, statistics."""
    changed = json.loads(json.dumps(document))
    changed["coins"] += rng.randint(-50, 120)
    changed["player"]["xp"] += rng.randint(0, 900)
    if rng.random() < 0.2:
        changed["player"]["level"] += 1
    level = rng.choice(list(changed["levelProgress"]))
    changed["levelProgress"][level]["bestScore"] += rng.randint(0, 300)
    if rng.random() < 0.3:
        changed["unlockedThemes"].append(f"{device}-{rng.randint(0, 3)}")
    changed["statistics"]["gamesPlayed"] += rng.randint(1, 5)
    changed["statistics"]["totalPlayTime"] += float(rng.randint(60, 900))
    changed["lastSaved"] = f"2026-11-21T{rng.randint(10, 23)}:{rng.randint(10, 59)}:00Z"
    if device == "tablet" and rng.random() < 0.1:
        changed["settings"]["theme"] = "night"
    return changed


def generate(work, count):
    rng = random.Random(7)
    for tree in ("base", "phone", "tablet"):
        shutil.rmtree(work / tree, ignore_errors=True)
    for index in range(count):
        relative = Path(f"device-{index // 100:03d}") / f"save-{index:05d}.json"
        base = save(rng)
        for tree, document in (("base", base), ("phone", played(base, rng, "phone")), ("tablet", played(base, rng, "tablet"))):
            path = work / tree / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")


def load_tree(root):
    return {str(p.relative_to(root)): json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.json"))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "peer.py").write_text(PEER)
    if not (work / "count").exists() or (work / "count").read_text() != str(args.files):
        generate(work, args.files)
        (work / "count").write_text(str(args.files))
    savetool_out, python_out = work / "merged-savetool", work / "merged-python"

    def savetool():
        shutil.rmtree(savetool_out, ignore_errors=True)
        return measure([args.savetool, "merge", "--kind", "blocks.gamesave", "--base", str(work / "base"),
                        "--local", str(work / "phone"), "--remote", str(work / "tablet"), "-o", str(savetool_out), "--quiet"])

    def python():
        shutil.rmtree(python_out, ignore_errors=True)
        return measure([sys.executable, str(work / "peer.py"), str(work / "base"), str(work / "phone"), str(work / "tablet"), str(python_out)])

    results = {"savetool": [], "python": []}
    for run in range(args.runs):
        for name, tool in (("savetool", savetool), ("python", python)):
            outcome = tool()
            if outcome.status != 0:
                sys.exit(f"{name} failed ({outcome.status}): {outcome.stderr[-2000:]}")
            results[name].append(outcome)
        if run == 0:
            ours, theirs = load_tree(savetool_out), load_tree(python_out)
            different = [path for path in theirs if ours.get(path) != theirs[path]]
            if different or len(ours) != len(theirs):
                sys.exit(f"the outputs differ: {len(different)} files, first {different[:3]}")
            print(f"outputs identical as values: {len(ours)} files")

    print(f"{args.files} pairs with a base; median of {args.runs} runs (range)")
    print("| tool | time | pairs/s | peak memory |")
    print("|---|---|---|---|")
    medians = {}
    for name, runs in results.items():
        times = [r.elapsed for r in runs]
        medians[name] = statistics.median(times)
        peak = max(r.peak for r in runs) / 2**20
        print(f"| {name} | {medians[name]:.2f} s ({min(times):.2f}–{max(times):.2f}) | {args.files / medians[name]:,.0f} | {peak:.0f} MiB |")
    print(f"savetool is {medians['python'] / medians['savetool']:.2f}× the Python script")


if __name__ == "__main__":
    main()
