#!/usr/bin/env python3
"""Bundle benchmark: savetool export/import side by side with GNU tar, same compression.

    bundles.py SAVETOOL WORKDIR [--megabytes 300] [--files 2000] [--runs 3]

Makes a save tree of about MEGABYTES in FILES files (JSON text and binary plists, which
compress like real saves), then times in one run: savetool export vs tar -czf, and with zstd
vs tar --zstd; savetool import vs tar -xzf (and zstd) into an empty directory. savetool and
its peers take turns, RUNS rounds; median and range of the wall times; peak memory is the
child's maximum resident set. Prints a Markdown table.
"""
import argparse
import json
import os
import plistlib
import random
import shutil
import statistics
import sys
from pathlib import Path

from measure import measure


def make_tree(root, megabytes, files):
    rng = random.Random(11)
    per_file = int(megabytes * 1e6 / files)
    names = ["Ana", "Besa", "Drita", "Zoë", "玩家", "Gjergj", "Teuta"]
    for index in range(files):
        folder = root / f"slot-{index % 40:02d}" / ("Documents" if index % 2 else "Library/Preferences")
        folder.mkdir(parents=True, exist_ok=True)
        if index % 2:
            records = []
            size = 0
            while size < per_file:
                record = {"player": rng.choice(names), "round": rng.randint(1, 99), "score": rng.random() * 1000,
                          "moves": [rng.randint(0, 80) for _ in range(12)], "note": os.urandom(24).hex()}
                records.append(record)
                size += 140
            (folder / f"save-{index}.json").write_text(json.dumps({"schemaVersion": 3, "records": records}))
        else:
            blob = {"level": index, "payload": os.urandom(per_file // 2), "names": [rng.choice(names) for _ in range(per_file // 14)]}
            (folder / f"prefs-{index}.plist").write_bytes(plistlib.dumps(blob, fmt=plistlib.FMT_BINARY))


def measure_tool(command, cwd=None, env=None):
    run = measure(command, cwd=cwd, env=env)
    if run.status != 0:
        sys.exit(f"{' '.join(command)} failed: {run.stderr}")
    return run.elapsed, run.peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--megabytes", type=float, default=300)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    savetool = os.path.abspath(args.savetool)
    work = Path(args.workdir).resolve()
    tree = work / "tree"
    if not tree.exists():
        make_tree(tree, args.megabytes, args.files)
    size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file())
    count = sum(1 for f in tree.rglob("*") if f.is_file())
    # A large manifest is spooled to TMPDIR: kept on the same file system as the work.
    (work / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ, SOURCE_DATE_EPOCH="1763712000", TMPDIR=str(work / "tmp"))

    def turns(*tools):
        """Runs each (name, make_command, prepare) in turn, RUNS rounds: a slow minute of this
        machine falls on every tool alike. Returns (median, peak, fastest, slowest) per tool."""
        times = [[] for _ in tools]
        peaks = [[] for _ in tools]
        for _ in range(args.runs):
            for index, (name, make_command, prepare) in enumerate(tools):
                if prepare:
                    prepare()
                elapsed, peak = measure_tool(make_command(), cwd=work, env=env)
                times[index].append(elapsed)
                peaks[index].append(peak)
        results = []
        for (name, _, _), runs, peak in zip(tools, times, peaks):
            result = (statistics.median(runs), max(peak), min(runs), max(runs))
            print(f"{name:34} {result[0]:7.2f} s ({result[2]:.2f}-{result[3]:.2f}) {result[1] / 2**20:7.0f} MiB", file=sys.stderr, flush=True)
            results.append(result)
        return results

    def fresh(path):
        def prepare():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
        return prepare

    rows = []
    for label, extension, tar_flag in [("gzip", "tar.gz", "-z"), ("zstd", "tar.zst", "--zstd")]:
        bundle, tarball = work / f"bundle.{extension}", work / f"plain.{extension}"
        export, tar_create = turns(
            (f"savetool export ({label})", lambda: [savetool, "export", str(tree), "-o", str(bundle), "-q"], None),
            (f"tar -c ({label})", lambda: ["tar", tar_flag, "-cf", str(tarball), "-C", str(tree), "."], None))
        target = work / "restored"
        # savetool flushes what it restored before it reports; `sync` after tar is the fair peer.
        restore, tar_extract, tar_synced = turns(
            (f"savetool import ({label})", lambda: [savetool, "import", str(bundle), "--into", str(target / "saves"), "-q"], fresh(target)),
            (f"tar -x ({label})", lambda: ["tar", tar_flag, "-xf", str(tarball), "-C", str(target)], fresh(target)),
            (f"tar -x && sync ({label})", lambda: ["sh", "-c", f"tar {tar_flag} -xf {tarball} -C {target} && sync"], fresh(target)))
        rows.append((f"export, {label}", export, tar_create, bundle.stat().st_size, tarball.stat().st_size))
        rows.append((f"import, {label}", restore, tar_extract, None, None))
        rows.append((f"import, {label}, against tar -x && sync", restore, tar_synced, None, None))

    # Daily backups: a first create against tar -czf, and a second create of the unchanged tree.
    repo = work / "repo"
    tar_gzip_path = work / "plain.tar.gz"
    first, tar_gzip = turns(
        ("savetool backup create (first)", lambda: [savetool, "backup", "create", str(tree), "--repo", str(repo), "--date", "2026-11-21", "-q"], fresh(repo)),
        ("tar -czf", lambda: ["tar", "-z", "-cf", str(tar_gzip_path), "-C", str(tree), "."], None))
    (second,) = turns(("savetool backup create (unchanged)", lambda: [savetool, "backup", "create", str(tree), "--repo", str(repo), "--date", "2026-11-21", "-q"], None))
    # Verify re-reads every byte and checks every checksum; tar's nearest is reading the archive through.
    verify, tar_read = turns(
        ("savetool backup verify", lambda: [savetool, "backup", "verify", "--repo", str(repo), "-q"], None),
        ("tar -xzO (read through)", lambda: ["sh", "-c", f"tar -xzOf {tar_gzip_path} > /dev/null"], None))
    # List verifies every backup it lists.
    (listing,) = turns(("savetool backup list", lambda: [savetool, "backup", "list", "--repo", str(repo), "-q"], None))

    def shown(result):
        return f"{result[0]:.2f} s ({result[2]:.2f}–{result[3]:.2f})"

    print(f"{count} files, {size / 1e6:.0f} MB; median (range) of {args.runs} runs, the tools in turns\n")
    print("| operation | savetool | GNU tar | savetool ÷ tar (time) | savetool peak memory | tar peak memory | archive size (savetool / tar) |")
    print("|---|---|---|---|---|---|---|")
    for name, ours, theirs, our_size, their_size in rows:
        sizes = f"{our_size / 1e6:.1f} MB / {their_size / 1e6:.1f} MB" if our_size else ""
        print(f"| {name} | {shown(ours)} | {shown(theirs)} | {ours[0] / theirs[0]:.2f}× | {ours[1] / 2**20:.0f} MiB | {theirs[1] / 2**20:.1f} MiB | {sizes} |")
    print(f"| backup create, first | {shown(first)} | {shown(tar_gzip)} (tar -czf) | {first[0] / tar_gzip[0]:.2f}× | {first[1] / 2**20:.0f} MiB | {tar_gzip[1] / 2**20:.1f} MiB | |")
    print(f"| backup create, unchanged | {shown(second)} | — | {second[0] / first[0]:.0%} of the first | {second[1] / 2**20:.0f} MiB | | |")
    print(f"| backup verify | {shown(verify)} | {shown(tar_read)} (tar -xzO) | {verify[0] / tar_read[0]:.2f}× | {verify[1] / 2**20:.0f} MiB | {tar_read[1] / 2**20:.1f} MiB | |")
    print(f"| backup list | {shown(listing)} | — | | {listing[1] / 2**20:.0f} MiB | | |")


if __name__ == "__main__":
    main()
