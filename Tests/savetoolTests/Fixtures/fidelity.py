"""Builds a save folder holding every case a backup must keep, and compares two folders by lstat.

    fidelity.py make DIR        the tree (run as root: it gives some files to other owners)
    fidelity.py compare A B     one JSON line per difference, then {"compared": N}

Compared for every entry but the top folder: type, mode, size, nanosecond modification time
(for links too), owner, extended attributes (user.*), symbolic link targets, content, which
entries share an inode, and allocated blocks (a sparse file must stay sparse).
"""
import hashlib, json, os, socket, stat, sys


def make(root):
    os.makedirs(root)
    def write(path, data=b"", mode=0o644, mtime_ns=None):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        os.chmod(full, mode)
        if mtime_ns is not None:
            os.utime(full, ns=(mtime_ns, mtime_ns))
        return full
    write("Documents/current_tournament.json", b'{"schemaVersion": 3}\n', mtime_ns=1_700_000_000_123_456_789)
    write("Documents/private.json", b'{"token": "x"}', mode=0o600)
    write("tools/helper", b"#!/bin/sh\n", mode=0o4755)           # setuid: dropped on import, with a warning
    write("tools/group", b"#!/bin/sh\n", mode=0o2755)            # setgid: likewise
    first = write("shared/a.json", b'{"shared": true}')
    os.link(first, os.path.join(root, "shared/b.json"))          # one file, two names
    os.symlink("../Documents/current_tournament.json", os.path.join(root, "shared/link.json"))
    os.symlink("Documents", os.path.join(root, "docs"))          # a link to a folder, kept as a link
    tagged = write("Documents/tagged.json", b"{}")
    os.setxattr(tagged, "user.origin", b"cloud")
    os.setxattr(os.path.join(root, "Documents"), "user.folder", b"yes")
    shipped = write("Documents/shipped.json", b"{}")              # read-only, with an attribute its owner set first
    os.setxattr(shipped, "user.origin", b"store")
    os.chmod(shipped, 0o444)
    with open(os.path.join(root, "sparse.bin"), "wb") as f:      # 64 MiB, almost all hole
        f.seek(64 << 20)
        f.write(b"end")
    for path, mode in [("private", 0o700), ("group", 0o750), ("readonly", 0o555), ("tmp", 0o1777), ("empty", 0o755)]:
        full = os.path.join(root, "folders", path)
        os.makedirs(full)
        if path == "readonly":
            write("folders/readonly/inside.json", b"{}")
        os.chmod(full, mode)
    # Names that are not UTF-8 (files from a Latin-1 system), kept byte for byte, as tar keeps them.
    latin = write(os.fsdecode(b"Documents/caf\xe9.json"), b'{"latin": 1}')
    os.link(latin, os.path.join(root, os.fsdecode(b"shared/caf\xe9-hard.json")))
    os.symlink(os.fsdecode(b"../Documents/caf\xe9.json"), os.path.join(root, os.fsdecode(b"shared/caf\xe9-link.json")))
    os.makedirs(os.path.join(root, os.fsdecode(b"legacy\xff")))
    os.mkfifo(os.path.join(root, "pipe"))                        # skipped with a warning, as tar does
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.path.join(root, "sock"))
    server.close()
    if os.geteuid() == 0:
        os.chown(os.path.join(root, "Documents/private.json"), 1234, 5678)
        os.lchown(os.path.join(root, "shared/link.json"), 1234, 5678)
        os.chown(os.path.join(root, "folders/group"), 4321, 8765)
    # Folder times last, after everything inside them is made.
    for folder, _, _ in sorted(os.walk(root), key=lambda w: -w[0].count("/")):
        if folder != root:
            os.utime(folder, ns=(1_600_000_000_987_654_321, 1_600_000_000_987_654_321), follow_symlinks=False)


def record(root):
    entries, inodes = {}, {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            info = os.lstat(full)
            entry = {"type": stat.S_IFMT(info.st_mode), "mode": oct(stat.S_IMODE(info.st_mode)), "mtime": info.st_mtime_ns,
                     "owner": [info.st_uid, info.st_gid]}
            if stat.S_ISLNK(info.st_mode):
                entry["target"] = os.readlink(full)
            else:
                entry["xattrs"] = {k: os.getxattr(full, k).hex() for k in sorted(os.listxattr(full)) if k.startswith("user.")}
            if stat.S_ISREG(info.st_mode):
                entry["size"] = info.st_size
                entry["sha256"] = hashlib.sha256(open(full, "rb").read()).hexdigest()
                entry["blocks"] = info.st_blocks
                entry["inode group"] = inodes.setdefault((info.st_dev, info.st_ino), rel)
            entries[rel] = entry
    return entries


def compare(a, b):
    left, right = record(a), record(b)
    for path in sorted(set(left) | set(right)):
        if path not in right:
            print(json.dumps({"path": path, "field": "missing"}))
            continue
        if path not in left:
            print(json.dumps({"path": path, "field": "extra"}))
            continue
        for field in sorted(set(left[path]) | set(right[path])):
            x, y = left[path].get(field), right[path].get(field)
            if field == "blocks":
                # Sparse stays sparse: no more than a few blocks more than the original.
                if y > x + 64:
                    print(json.dumps({"path": path, "field": field, "from": x, "to": y}))
            elif x != y:
                print(json.dumps({"path": path, "field": field, "from": x, "to": y}))
    print(json.dumps({"compared": len(left)}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
