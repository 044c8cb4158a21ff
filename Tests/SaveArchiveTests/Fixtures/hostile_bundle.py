#!/usr/bin/env python3
"""Builds one hostile (or, for "good", correct) save bundle for the import tests.

    hostile_bundle.py CASE OUTPUT.tar.gz

Each case breaks one rule of the bundle format; the manifest is otherwise consistent, so that
the case tests that one rule.
"""
import hashlib
import io
import json
import sys
import tarfile
import unicodedata

case, output = sys.argv[1], sys.argv[2]
GOOD = b'{"round": 2}\n'


def manifest(files, fmt="savetool.bundle/1"):
    return json.dumps({"format": fmt, "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test", "source": "x",
                       "files": [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "mode": "0644",
                                  "modifiedAt": "2026-11-21T08:00:00Z"} for p, d in files]}).encode()


def add(tar, name, data=b"", kind=tarfile.REGTYPE, size=None, **extra):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if size is None else size
    info.mode = 0o644
    for key, value in extra.items():
        setattr(info, key, value)
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


class Zeros(io.RawIOBase):
    def __init__(self, size):
        self.left = size
    def readable(self):
        return True
    def readinto(self, buffer):
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


with tarfile.open(output, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=1) as tar:
    files = [("save.json", GOOD)]
    if case == "good":
        files = [("save.json", GOOD), ("Library/é.plist", b"bplist00")]
        add(tar, "manifest.json", manifest(files))
        for path, data in files:
            add(tar, "files/" + path, data)
    elif case in ("dotdot", "absolute"):
        path = "../escaped.json" if case == "dotdot" else "/tmp/savetool-absolute-escape.json"
        add(tar, "manifest.json", manifest([(path, GOOD)]))
        add(tar, "files/" + path if case == "dotdot" else path, GOOD)
    elif case == "dotdot-entry-only":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/../../escaped.json", GOOD)
    elif case == "symlink":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", kind=tarfile.SYMTYPE, linkname="/etc/passwd")
    elif case == "write-through-symlink":
        add(tar, "manifest.json", manifest([("dir/save.json", GOOD)]))
        add(tar, "files/dir", kind=tarfile.SYMTYPE, linkname="/tmp")
        add(tar, "files/dir/save.json", GOOD)
    elif case == "hardlink":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", kind=tarfile.LNKTYPE, linkname="manifest.json")
    elif case == "fifo":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", kind=tarfile.FIFOTYPE)
    elif case == "device":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", kind=tarfile.CHRTYPE, devmajor=1, devminor=3)
    elif case == "duplicate":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", GOOD)
        add(tar, "files/save.json", GOOD)
    elif case == "nfc-nfd":
        name = "Lojtari é.json"
        nfc, nfd = unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)
        add(tar, "manifest.json", manifest([(nfc, GOOD), (nfd, b"other\n")]))
        add(tar, "files/" + nfc, GOOD)
        add(tar, "files/" + nfd, b"other\n")
    elif case == "nfc-nfd-folders":
        # Not hostile: two folders whose names differ only in normalisation (two folders on
        # Linux), one file in each, the NFD one's listed first (byte order).
        nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
        files = sorted([(nfc + "/a.json", GOOD), (nfd + "/b.json", b"other\n")], key=lambda f: f[0].encode())
        add(tar, "manifest.json", manifest(files))
        for path, data in files:
            add(tar, "files/" + path, data)
    elif case == "bigger-than-declared":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", GOOD + b"and a lot more than the manifest says" * 100)
    elif case == "not-listed":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", GOOD)
        add(tar, "files/extra.json", GOOD)
    elif case == "missing":
        add(tar, "manifest.json", manifest(files + [("second.json", GOOD)]))
        add(tar, "files/save.json", GOOD)
    elif case == "checksum":
        add(tar, "manifest.json", manifest(files))
        add(tar, "files/save.json", GOOD.replace(b"2", b"3"))
    elif case == "future-format":
        add(tar, "manifest.json", manifest(files, fmt="savetool.bundle/3"))
        add(tar, "files/save.json", GOOD)
    elif case == "manifest-not-first":
        add(tar, "files/save.json", GOOD)
        add(tar, "manifest.json", manifest(files))
    elif case == "zeros-bomb":
        size = 1 << 30
        digest = hashlib.sha256()
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            digest.update(chunk)
        body = json.dumps({"format": "savetool.bundle/1", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test", "source": "x",
                           "files": [{"path": "zeros", "size": size, "sha256": digest.hexdigest(), "mode": "0644"}]}).encode()
        add(tar, "manifest.json", body)
        info = tarfile.TarInfo("files/zeros")
        info.size = size
        tar.addfile(info, io.BufferedReader(Zeros(size)))
    elif case in ("late-manifest-fault", "unordered-late"):
        # 3,000 files, more than the import lands before the manifest's reader is done with it.
        # late-manifest-fault: the first file's bytes differ from its checksum, and the last
        # entry's mode cannot be read: the manifest's fault is the one reported.
        # unordered-late (not hostile): the last two entries swapped, out of export's byte order.
        many = [(f"f{i:04}", b"%d\n" % i) for i in range(3000)]
        if case == "unordered-late":
            many[-1], many[-2] = many[-2], many[-1]
        entries = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"} for p, d in many]
        if case == "late-manifest-fault":
            entries[-1]["mode"] = "9999"
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "files": entries}).encode())
        for index, (path, data) in enumerate(many):
            add(tar, "files/" + path, b"changed\n" if case == "late-manifest-fault" and index == 0 else data)
    elif case == "many-without-totals":
        # Not hostile: 3,000 files of 100 bytes, as export writes them but with no "totals" (a
        # bundle written before export declared them), for the limits checked while it streams.
        many = [(f"f{i:04}", b"a" * 100) for i in range(3000)]
        entries = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"} for p, d in many]
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "files": entries}).encode())
        for path, data in many:
            add(tar, "files/" + path, data)
    elif case == "sizes-overflow":
        # Two files whose declared sizes add up past 2^63 (the second's bytes are 8): their sum
        # trapped, a crash rather than a refusal.
        entries = [{"path": "a.json", "size": 9223372036854775807, "sha256": hashlib.sha256(b"").hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"},
                   {"path": "b.json", "size": 8, "sha256": hashlib.sha256(b'{"b": 1}').hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"}]
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "files": entries}).encode())
        add(tar, "files/a.json", b"")
        add(tar, "files/b.json", b'{"b": 1}')
    elif case == "totals-huge-entries":
        # A few hundred bytes that declare 4e15 entries: refused by the entry limit, before any
        # arithmetic on them (the room they would take overflows 64 bits).
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "totals": {"entries": 4000000000000000, "files": 0, "bytes": 0},
                                              "files": []}).encode())
    elif case in ("totals-too-few", "totals-too-many", "totals-malformed"):
        # 3,000 files whose header's totals are not what they list: fewer entries (the stream
        # of entries stops at the declared count, before the last 2,000 are read), more bytes
        # (found only once all are read), or a total that is not a number.
        many = [(f"f{i:04}", b"%d\n" % i) for i in range(3000)]
        entries = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"} for p, d in many]
        totals = {"entries": 3000, "files": 3000, "bytes": sum(len(d) for _, d in many)}
        if case == "totals-too-few":
            totals.update(entries=1000, files=1000)
        elif case == "totals-too-many":
            totals["bytes"] += 1
        else:
            totals["bytes"] = "lots"
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "totals": totals, "files": entries}).encode())
        for path, data in many:
            add(tar, "files/" + path, data)
    elif case == "hardlink-out":
        # A hard link whose target climbs out, listed (format 2) and in the archive alike, after
        # 600 files that the import may land before it reads the manifest through.
        many = [(f"f{i:04}", b"%d\n" % i) for i in range(600)]
        entries = [{"path": p, "size": len(d), "sha256": hashlib.sha256(d).hexdigest(), "mode": "0644",
                    "modifiedAt": "2026-11-21T08:00:00Z"} for p, d in many]
        entries.append({"path": "z-link", "type": "hardlink", "target": "../../../../../../etc/hostname", "mode": "0644",
                        "modifiedAt": "2026-11-21T08:00:00Z"})
        add(tar, "manifest.json", json.dumps({"format": "savetool.bundle/2", "createdAt": "2026-11-21T08:00:00Z", "createdBy": "test",
                                              "source": "x", "files": entries}).encode())
        for path, data in many:
            add(tar, "files/" + path, data)
        add(tar, "files/z-link", kind=tarfile.LNKTYPE, linkname="files/../../../../../../etc/hostname")
    elif case == "many-entries":
        many = [(f"f{i}", b"") for i in range(100_000)]
        add(tar, "manifest.json", manifest(many))
        for path, data in many:
            add(tar, "files/" + path, data)
    else:
        sys.exit(f"unknown case {case}")
