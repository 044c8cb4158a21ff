#!/usr/bin/env python3
"""Differential oracle for savetool's plist codecs, built on Python's plistlib.

    plistlib_oracle.py generate DIR COUNT SEED
        Writes COUNT random documents per format, each with the value plistlib reads from it:
          b<i>.bplist + b<i>.json   binary plists (UIDs, control characters, fractional dates)
          x<i>.plist  + x<i>.json   XML plists (what XML 1.0 and plistlib's XML writer can hold)
        The .json files are savetool's typed JSON; dates are given as {"$date": seconds since 2001}.
    plistlib_oracle.py check DIR COUNT
        Reads the b<i>.out.bplist and x<i>.out.plist files savetool wrote back, compares each
        value with the original (types, key order, bits of reals), and compares file sizes
        with plistlib's. Prints one line per mismatch; exit 1 if any.
"""
import datetime
import json
import math
import pickle
import plistlib
import random
import struct
import sys
from pathlib import Path

REFERENCE = datetime.datetime(2001, 1, 1)
KEY_POOL = ["level", "xp", "coins", "name", "Ana", "Besa", "Zoë", "玩家", "🐍", "", "a/b", "~", "$date",
            "$dict", "CF$UID_like", "settings", "unlockedThemes", "gameSave", "lastPlayed", "score"]


def random_string(rng, binary):
    kind = rng.random()
    if kind < 0.4:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ABC0123456789") for _ in range(rng.randint(0, 24)))
    alphabet = ["é", "ß", "Ž", "ё", "中", "文", "😀", "🎮", "\u0301", "\t", "\n", "&", "<", ">", "'", '"', "x"]
    if binary:
        alphabet += ["\x00", "\x01", "\x1f", "\r", "\u2028", "\ufeff"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))


def random_date(rng, binary):
    seconds = rng.randint(-3_000_000_000, 3_000_000_000)
    micro = rng.randint(0, 999_999) if binary and rng.random() < 0.5 else 0
    return REFERENCE + datetime.timedelta(seconds=seconds, microseconds=micro)


def random_int(rng):
    bound = rng.choice([1, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1])
    choice = rng.random()
    if choice < 0.1:
        return bound
    if choice < 0.3:
        return -rng.randint(0, min(bound, 2**63))
    return rng.randint(0, bound)


def random_real(rng):
    choice = rng.random()
    if choice < 0.05:
        return rng.choice([math.inf, -math.inf, math.nan, -0.0, 0.0, 5e-324, 1.7976931348623157e308])
    if choice < 0.5:
        return struct.unpack(">d", struct.pack(">Q", rng.getrandbits(64)))[0] if rng.random() < 0.3 else rng.uniform(-1e6, 1e6)
    return float(rng.randint(-1000, 1000)) / rng.choice([1, 2, 4, 10, 3])


def random_scalar(rng, binary):
    kind = rng.randrange(8 if binary else 7)
    if kind == 0:
        return rng.random() < 0.5
    if kind == 1:
        return random_int(rng)
    if kind == 2:
        value = random_real(rng)
        return 0.5 if math.isnan(value) and not binary and rng.random() < 0.5 else value
    if kind == 3:
        return random_string(rng, binary)
    if kind == 4:
        return random_date(rng, binary)
    if kind == 5:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 3, 16, 57, 200])))
    if kind == 6:
        return random_string(rng, binary)
    return plistlib.UID(rng.choice([0, 1, 255, 256, 65535, 2**32, 2**40]))


def random_value(rng, binary, depth=0):
    if depth >= 5 or rng.random() < 0.35 + 0.1 * depth:
        return random_scalar(rng, binary)
    if rng.random() < 0.5:
        return [random_value(rng, binary, depth + 1) for _ in range(rng.randint(0, 8))]
    result = {}
    for _ in range(rng.randint(0, 8)):
        key = rng.choice(KEY_POOL) if rng.random() < 0.6 else random_string(rng, binary)
        result[key] = random_value(rng, binary, depth + 1)
    return result


def typed(value):
    """The value in savetool's typed JSON, as a JSON-able Python object."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return {"$real": "nan"}
        if math.isinf(value):
            return {"$real": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.datetime):
        return {"$date": (value - REFERENCE).total_seconds()}
    if isinstance(value, bytes):
        import base64
        return {"$data": base64.b64encode(value).decode()}
    if isinstance(value, plistlib.UID):
        return {"$uid": value.data}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, dict):
        converted = {key: typed(item) for key, item in value.items()}
        if len(converted) == 1 and next(iter(converted)) in ("$date", "$data", "$uid", "$real", "$dict"):
            return {"$dict": converted}
        return converted
    raise TypeError(type(value))


def same(a, b, path="/"):
    """Strict comparison: types, key order, real bits (NaN equals NaN)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, float):
        if math.isnan(a) and math.isnan(b):
            return None
        return None if struct.pack(">d", a) == struct.pack(">d", b) else f"{path}: {a!r} became {b!r}"
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            return f"{path}: keys {list(a.keys())!r} became {list(b.keys())!r}"
        for key in a:
            problem = same(a[key], b[key], f"{path}{key}/")
            if problem:
                return problem
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} elements became {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            problem = same(x, y, f"{path}{index}/")
            if problem:
                return problem
        return None
    return None if a == b else f"{path}: {a!r} became {b!r}"


def generate(directory, count, seed):
    rng = random.Random(seed)
    directory = Path(directory)
    originals = {}
    for index in range(count):
        for prefix, binary, fmt, suffix in (("b", True, plistlib.FMT_BINARY, "bplist"), ("x", False, plistlib.FMT_XML, "plist")):
            value = random_value(rng, binary)
            if not isinstance(value, (dict, list)) and rng.random() < 0.7:
                value = {"value": value}
            data = plistlib.dumps(value, fmt=fmt, sort_keys=False)
            # What plistlib reads from its own file, which is not always what it was given:
            # its binary writer shares 0.0 and -0.0 as one object, since 0.0 == -0.0 in Python.
            value = plistlib.loads(data)
            (directory / f"{prefix}{index}.{suffix}").write_bytes(data)
            (directory / f"{prefix}{index}.json").write_text(json.dumps(typed(value), ensure_ascii=False))
            originals[f"{prefix}{index}"] = (value, len(data))
    (directory / "originals.pickle").write_bytes(pickle.dumps(originals))


def check(directory, count):
    directory = Path(directory)
    originals = pickle.loads((directory / "originals.pickle").read_bytes())
    problems = 0
    larger = 0
    for index in range(count):
        for prefix, suffix in (("b", "bplist"), ("x", "plist")):
            name = f"{prefix}{index}"
            value, plistlib_size = originals[name]
            written = (directory / f"{name}.out.{suffix}").read_bytes()
            try:
                back = plistlib.loads(written)
            except Exception as error:  # noqa: BLE001 - any failure is a finding
                print(f"{name}.out.{suffix}: plistlib cannot read it: {error}")
                problems += 1
                continue
            problem = same(value, back)
            if problem:
                print(f"{name}.out.{suffix}: {problem}")
                problems += 1
            if prefix == "b" and len(written) > plistlib_size:
                print(f"{name}.out.{suffix}: {len(written)} bytes, plistlib wrote {plistlib_size}")
                larger += 1
    print(f"checked {2 * count} files: {problems} mismatches, {larger} larger than plistlib's")
    return 1 if problems or larger else 0


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], int(sys.argv[3])))
    else:
        sys.exit(__doc__)
