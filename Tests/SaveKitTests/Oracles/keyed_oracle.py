#!/usr/bin/env python3
"""Differential oracle for savetool's view of keyed archives (NSKeyedArchiver).

Runs in the test environment scripts/setup makes (.tools/oracles), with bpylist2 and
nska-deserialize from PyPI, pinned there.

    keyed_oracle.py generate DIR COUNT SEED
        Writes COUNT archives k<i>.archive, each of a random object graph archived by bpylist2:
        objects of a few classes, arrays, sets, dictionaries with string and integer keys,
        dates, data, unicode strings, numbers, bools, None, shared objects and cycles. Beside
        each, k<i>.expected.json: what nska-deserialize reads from it.
    keyed_oracle.py check DIR COUNT
        For each i, compares with k<i>.expected.json what nska-deserialize reads from
        k<i>.fresh.archive (savetool's new archive of its view) and what savetool's view
        k<i>.view.json becomes once put in nska-deserialize's terms (classes dropped, shared
        objects copied, a reference that closes a cycle left out, null as ""). Prints one line
        per mismatch; exit 1 if any.
    keyed_oracle.py large PATH MEGABYTES
        Writes one archive of about MEGABYTES (many players with items), for the benchmark.
"""
import base64
import datetime
import json
import random
import sys
from pathlib import Path

import nska_deserialize
from bpylist2 import archiver
from bpylist2.archive_types import timestamp

CLASSES = ["Player", "Item", "Guild", "Quest", "GKSavedGame"]
KEYS = ["name", "level", "xp", "items", "guild", "friend", "owner", "count", "kind", "note", "tags", "stats",
        "lastPlayed", "blob", "ratio", "done", "Zoë", "玩家", "🎮", "a.b", "NS.custom"]


class Obj:
    """An object of the app's own class: its fields are archived as encodeObject:forKey: would."""

    def __init__(self, fields):
        self.fields = fields

    @staticmethod
    def encode_archive(obj, archive):
        for key, value in obj.fields.items():
            archive.encode(key, value)


CLASS_TYPES = {name: type(name, (Obj,), {}) for name in CLASSES}
archiver.update_class_map(CLASS_TYPES)


def random_string(rng):
    alphabet = "abcdefghijklmnopqrstuvwxyz ABC0123456789éßŽё中文😀🎮\u0301&<>'\""
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16)))


def random_scalar(rng):
    choice = rng.random()
    if choice < 0.25:
        return rng.randint(-2**40, 2**40)
    if choice < 0.35:
        return rng.uniform(-1e6, 1e6)
    if choice < 0.45:
        return rng.random() < 0.5
    if choice < 0.75:
        return random_string(rng)
    if choice < 0.85:
        return timestamp(rng.randint(0, 2_000_000_000) / 4)
    if choice < 0.95:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 12)))
    return None


def random_value(rng, depth, pool):
    if depth > 4 or rng.random() < 0.45:
        return random_scalar(rng)
    choice = rng.random()
    if pool and choice < 0.05:
        return rng.choice(pool)  # shared, and maybe an ancestor: a cycle
    if choice < 0.35:
        return [random_value(rng, depth + 1, pool) for _ in range(rng.randint(0, 4)) if True] or [1]
    if choice < 0.45:
        return {rng.randint(0, 10_000) for _ in range(rng.randint(1, 4))}
    if choice < 0.6:
        keys = [rng.choice(KEYS) if rng.random() < 0.8 else rng.randint(0, 99) for _ in range(rng.randint(0, 4))]
        return {key: random_value(rng, depth + 1, pool) for key in keys}
    return random_object(rng, depth + 1, pool)


def random_object(rng, depth, pool):
    obj = CLASS_TYPES[rng.choice(CLASSES)]({})
    pool.append(obj)
    for key in rng.sample(KEYS, rng.randint(1, 5)):
        obj.fields[key] = random_value(rng, depth, pool)
    return obj


def cyclic(root):
    """Whether the graph from `root` comes back to an object on its own path."""
    def visit(value, path):
        if isinstance(value, Obj):
            if id(value) in path:
                return True
            return any(visit(item, path | {id(value)}) for item in value.fields.values())
        if isinstance(value, (list, set)):
            return any(visit(item, path) for item in value)
        if isinstance(value, dict):
            return any(visit(item, path) for item in value.values())
        return False
    return visit(root, frozenset())


def plain(value):
    """nska-deserialize's answer as typed JSON, with its dates and data spelled as savetool spells them."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(item) for item in value]
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return {"$seconds": (value - datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds()}
    if isinstance(value, (bytes, bytearray)):
        return {"$data": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, float) and value == int(value) and abs(value) < 2**53:
        return {"$real": value}
    return value


def nska(path):
    return plain(nska_deserialize.deserialize_plist(str(path), format=dict))


def as_nska(view):
    """savetool's view in nska-deserialize's terms."""
    ids = {}

    def collect(value):
        if isinstance(value, dict):
            if "$id" in value:
                ids[value["$id"]] = value
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(view)
    dropped = object()

    def convert(value, stack):
        if isinstance(value, dict):
            if set(value) == {"$ref"}:
                target = ids[value["$ref"]]
                return dropped if value["$ref"] in stack else convert(target, stack)
            if set(value) == {"$date"}:
                return {"$seconds": seconds(value["$date"])}
            if set(value) == {"$data"}:
                return value
            if set(value) == {"$real"}:
                return value
            inner = stack | ({value["$id"]} if "$id" in value else set())
            if "$items" in value:
                items = [convert(item, inner) for item in value["$items"]]
                return [item for item in items if item is not dropped]
            if "$pairs" in value:
                out = {}
                for key, item in value["$pairs"]:
                    converted = convert(item, inner)
                    if converted is not dropped:
                        out[str(convert(key, inner))] = converted
                return out
            out = {}
            for key, item in value.items():
                if key in ("$class", "$id"):
                    continue
                converted = convert(item, inner)
                if converted is not dropped:
                    out[key[1:] if key.startswith("$$") else key] = converted
            return out
        if isinstance(value, list):
            items = [convert(item, stack) for item in value]
            return [item for item in items if item is not dropped]
        if value is None:
            return ""
        if isinstance(value, float) and value == int(value) and abs(value) < 2**53:
            return {"$real": value}
        return value

    return convert(view, set())


def seconds(text):
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds()


def same(a, b):
    """Equal, with sets compared as sets (NSSet has no order) and times to the microsecond."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) == {"$seconds"} and set(b) == {"$seconds"}:
            return abs(a["$seconds"] - b["$seconds"]) < 1e-5
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if all(same(x, y) for x, y in zip(a, b)):
            return True
        rest = list(b)
        for x in a:
            match = next((i for i, y in enumerate(rest) if same(x, y)), None)
            if match is None:
                return False
            rest.pop(match)
        return True
    return type(a) is type(b) and a == b


def main():
    command, directory = sys.argv[1], Path(sys.argv[2])
    if command == "generate":
        count, seed = int(sys.argv[3]), int(sys.argv[4])
        rng = random.Random(seed)
        for index in range(count):
            root = random_object(rng, 0, [])
            path = directory / f"k{index}.archive"
            path.write_bytes(archiver.archive(root))
            expected = {"cyclic": cyclic(root), "value": nska(path)}
            (directory / f"k{index}.expected.json").write_text(json.dumps(expected, ensure_ascii=False))
        print(f"generated {count} archives")
    elif command == "check":
        count = int(sys.argv[3])
        mismatches = 0
        for index in range(count):
            recorded = json.loads((directory / f"k{index}.expected.json").read_text())
            expected = recorded["value"]
            view = json.loads((directory / f"k{index}.view.json").read_text())
            # nska-deserialize cuts a cycle only once it meets an object a second time on one
            # path, and the root is not on its path: it copies the root once more first. The
            # views of cyclic graphs are therefore compared by savetool's own archive below.
            if not recorded["cyclic"] and not same(as_nska(view.get("root")), expected):
                mismatches += 1
                print(f"k{index}: savetool's view differs from nska-deserialize")
            fresh = nska(directory / f"k{index}.fresh.archive")
            if not same(fresh, expected):
                mismatches += 1
                print(f"k{index}: savetool's new archive reads differently in nska-deserialize")
        cyclic_count = sum(json.loads((directory / f"k{i}.expected.json").read_text())["cyclic"] for i in range(count))
        print(f"checked {count} archives ({cyclic_count} with cycles): {mismatches} mismatches")
        sys.exit(1 if mismatches else 0)
    elif command == "large":
        megabytes = float(sys.argv[3])
        rng = random.Random(7)
        players = []
        root = CLASS_TYPES["GKSavedGame"]({"players": players, "note": "benchmark"})
        while True:
            for _ in range(200):
                items = [CLASS_TYPES["Item"]({"kind": random_string(rng), "count": rng.randint(1, 99), "ratio": rng.random()}) for _ in range(8)]
                players.append(CLASS_TYPES["Player"]({"name": random_string(rng), "level": rng.randint(1, 80), "xp": rng.randint(0, 10**6),
                                                      "lastPlayed": timestamp(rng.randint(0, 2_000_000_000) / 4), "items": items,
                                                      "stats": {"wins": rng.randint(0, 999), "losses": rng.randint(0, 999)}}))
            data = archiver.archive(root)
            if len(data) >= megabytes * 1_000_000:
                break
        directory.write_bytes(data)
        print(f"wrote {len(data)} bytes, {len(players)} players")


if __name__ == "__main__":
    main()
