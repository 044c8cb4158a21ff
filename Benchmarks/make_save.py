#!/usr/bin/env python3
"""Writes a large generated save for the codec benchmarks.

    make_save.py OUT_DIR [MEGABYTES]

OUT_DIR/save.bplist    records of strings, ints, reals, whole-second dates and data (binary plist)
OUT_DIR/save.plist     the same, as an XML plist
OUT_DIR/save.json      the same, as savetool's typed JSON
OUT_DIR/plain.bplist   the same records without dates and data, which plutil cannot put in JSON
"""
import base64
import datetime
import json
import plistlib
import random
import sys
from pathlib import Path

out = Path(sys.argv[1])
megabytes = float(sys.argv[2]) if len(sys.argv) > 2 else 50
out.mkdir(parents=True, exist_ok=True)
rng = random.Random(7)
names = ["Ana", "Besa", "Drita", "Zoë", "Lojtari é", "玩家", "Gjergj", "Teuta", "🎮 Pro", "Arbër"]
themes = ["classic", "neon", "forest", "ocean", "desert"]
reference = datetime.datetime(2001, 1, 1)


def record(index, plain):
    entry = {
        "id": index,
        "player": rng.choice(names) + " " + str(rng.randint(1, 9999)),
        "level": rng.randint(1, 200),
        "xp": rng.randint(0, 10**9),
        "ratio": rng.random(),
        "coins": rng.randint(-1000, 10**6),
        "theme": rng.choice(themes),
        "completed": rng.random() < 0.5,
        "scores": [rng.randint(0, 5000) for _ in range(rng.randint(2, 6))],
        "position": {"x": rng.uniform(-1e3, 1e3), "y": rng.uniform(-1e3, 1e3)},
    }
    if not plain:
        entry["savedAt"] = reference + datetime.timedelta(seconds=rng.randint(600_000_000, 800_000_000))
        entry["thumbnail"] = rng.randbytes(rng.choice([16, 32, 48]))
    return entry


def build(plain):
    records = []
    size = 0
    target = megabytes * 1e6
    while size < target:
        records.append(record(len(records), plain))
        size += 260 if not plain else 200
    return {"format": "bench.save", "version": 3, "records": records}


def typed(value):
    if isinstance(value, datetime.datetime):
        return {"$date": value.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if isinstance(value, bytes):
        return {"$data": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return value


save = build(plain=False)
(out / "save.bplist").write_bytes(plistlib.dumps(save, fmt=plistlib.FMT_BINARY, sort_keys=False))
(out / "save.plist").write_bytes(plistlib.dumps(save, fmt=plistlib.FMT_XML, sort_keys=False))
(out / "save.json").write_text(json.dumps(typed(save), ensure_ascii=False, indent=2))
(out / "plain.bplist").write_bytes(plistlib.dumps(build(plain=True), fmt=plistlib.FMT_BINARY, sort_keys=False))
for name in ["save.bplist", "save.plist", "save.json", "plain.bplist"]:
    print(f"{name}: {(out / name).stat().st_size / 1e6:.1f} MB")
