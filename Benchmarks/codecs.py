#!/usr/bin/env python3
"""Codec benchmark: savetool convert side by side with plutil -convert and Python's plistlib.

    codecs.py SAVETOOL WORKDIR [--runs N]

WORKDIR holds the inputs written by make_save.py. Each direction is run by each tool in the
same run, N times (median wall time kept); peak memory is the child's maximum resident set.
Prints a Markdown table of times, throughput, ratios to savetool and memory per input byte.
"""
import argparse
import shutil
import statistics
import sys
from pathlib import Path

from measure import measure

PLISTLIB_PEER = r'''
import base64, datetime, json, plistlib, sys
mode, source, target = sys.argv[1:4]
def typed(value):
    if isinstance(value, datetime.datetime):
        return {"$date": value.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if isinstance(value, bytes):
        return {"$data": base64.b64encode(value).decode()}
    if isinstance(value, plistlib.UID):
        return {"$uid": value.data}
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return value
def untyped(value):
    if isinstance(value, dict):
        if len(value) == 1:
            (key, item), = value.items()
            if key == "$date":
                return datetime.datetime.strptime(item, "%Y-%m-%dT%H:%M:%SZ")
            if key == "$data":
                return base64.b64decode(item)
        return {k: untyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untyped(v) for v in value]
    return value
with open(source, "rb") as f:
    if mode == "bplist->json":
        json.dump(typed(plistlib.load(f)), open(target, "w"), ensure_ascii=False, indent=2)
    elif mode == "json->bplist":
        plistlib.dump(untyped(json.load(f)), open(target, "wb"), fmt=plistlib.FMT_BINARY, sort_keys=False)
    elif mode == "xml->bplist":
        plistlib.dump(plistlib.load(f), open(target, "wb"), fmt=plistlib.FMT_BINARY, sort_keys=False)
    elif mode == "bplist->xml":
        plistlib.dump(plistlib.load(f), open(target, "wb"), fmt=plistlib.FMT_XML, sort_keys=False)
'''


def measure_tool(command):
    """Wall seconds and peak RSS (bytes) of one run; None when the tool fails."""
    run = measure(command)
    if run.status != 0:
        error = run.stderr.strip()
        return None, None, error.splitlines()[-1] if error else "failed"
    return run.elapsed, run.peak, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--runs", type=int, default=3, help="runs of savetool and plistlib (the median is kept)")
    parser.add_argument("--plutil-runs", type=int, default=1, help="runs of plutil, which takes minutes on a large save")
    args = parser.parse_args()
    work = Path(args.workdir)
    out = work / "out"
    out.mkdir(exist_ok=True)
    peer = work / "plistlib_peer.py"
    peer.write_text(PLISTLIB_PEER)
    plutil = shutil.which("plutil")
    python = sys.executable

    directions = [
        # name, input, savetool target, plutil format, note
        ("bplist→JSON", "save.bplist", ["--to", "json"], "json", "out.json"),
        ("bplist→JSON (no dates/data)", "plain.bplist", ["--to", "json"], "json", "out.json"),
        ("JSON→bplist", "save.json", ["--to", "bplist"], "binary1", "out.bplist"),
        ("XML→bplist", "save.plist", ["--to", "bplist"], "binary1", "out.bplist"),
        ("bplist→XML", "save.bplist", ["--to", "plist"], "xml1", "out.plist"),
    ]
    rows = []
    for name, source, target, plutil_format, output in directions:
        source_path = work / source
        size = source_path.stat().st_size
        mode = {"bplist→JSON": "bplist->json", "bplist→JSON (no dates/data)": "bplist->json", "JSON→bplist": "json->bplist",
                "XML→bplist": "xml->bplist", "bplist→XML": "bplist->xml"}[name]
        tools = {
            "savetool": [args.savetool, "convert", str(source_path), "-o", str(out / output)] + target,
            "plistlib": [python, str(peer), mode, str(source_path), str(out / ("py-" + output))],
        }
        if plutil:
            tools["plutil"] = [plutil, "-convert", plutil_format, "-o", str(out / ("pl-" + output)), str(source_path)]
        results = {}
        for tool, command in tools.items():
            times, peaks, failure = [], [], None
            for _ in range(args.plutil_runs if tool == "plutil" else args.runs):
                elapsed, peak, failure = measure_tool(command)
                if elapsed is None:
                    break
                times.append(elapsed)
                peaks.append(peak)
            results[tool] = (statistics.median(times), max(peaks)) if times else (None, failure)
            print(f"{name:32} {tool:9} " + (f"{results[tool][0]:7.2f} s  {results[tool][1] / 2**20:7.0f} MiB" if times else f"failed: {failure}"),
                  file=sys.stderr, flush=True)
        rows.append((name, size, results))

    print("| direction | input | savetool | MB/s | peak memory ÷ input | plistlib | savetool speed-up vs plistlib | plutil | vs plutil |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, size, results in rows:
        ours, our_peak = results["savetool"]
        def cell(tool):
            seconds, other = results.get(tool, (None, "not on this machine"))
            if seconds is None:
                return f"fails ({other})", "—"
            return f"{seconds:.2f} s", (f"{seconds / ours:.1f}×" if ours else "—")
        plistlib_cell, plistlib_ratio = cell("plistlib")
        plutil_cell, plutil_ratio = cell("plutil")
        if ours is None:
            print(f"| {name} | {size / 1e6:.1f} MB | fails | | | {plistlib_cell} | | {plutil_cell} | |")
            continue
        print(f"| {name} | {size / 1e6:.1f} MB | {ours:.2f} s | {size / 1e6 / ours:.0f} | {our_peak / size:.1f}× "
              f"| {plistlib_cell} | {plistlib_ratio} | {plutil_cell} | {plutil_ratio} |")


if __name__ == "__main__":
    main()
