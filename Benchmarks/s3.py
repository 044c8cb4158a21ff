#!/usr/bin/env python3
"""S3 backup benchmark: `savetool backup create --repo s3://…` beside `restic backup` and beside
`tar -czf` piped into a plain upload, all against the same local S3-compatible server, in one run.

    s3.py SAVETOOL WORKDIR [--files 2000] [--megabytes 280] [--runs 3]

The server is moto's (installed by scripts/setup in .tools/moto), started on 127.0.0.1 for the
run, without signature checks (the tools sign; the server need not spend time checking). The
tree is the one of Benchmarks/bundles.py. Each run of each tool writes a fresh prefix, so every
savetool run is a first backup of the day. restic (Debian's) gets its repository initialised
before it is timed; the plain upload is boto3's `upload_fileobj` reading tar's output from a pipe.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bundles import make_tree
from measure import measure

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools/moto/bin"

UPLOAD = r'''
import boto3, sys
client = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench")
client.upload_fileobj(sys.stdin.buffer, sys.argv[2], sys.argv[3])
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("savetool")
    parser.add_argument("workdir")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=280)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not (TOOLS / "moto_server").exists():
        sys.exit("s3.py: moto's server is not installed; run scripts/setup")
    if not shutil.which("restic"):
        sys.exit("s3.py: restic is needed (apt-get install -y restic)")
    work = Path(args.workdir).resolve()
    tree = work / "tree"
    if not tree.exists():
        make_tree(tree, args.megabytes, args.files)
    (work / "upload.py").write_text(UPLOAD)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(TOOLS / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("s3.py: moto's server did not start")
                time.sleep(0.1)
        env = dict(os.environ, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                   AWS_ENDPOINT_URL=endpoint, RESTIC_PASSWORD="bench", TMPDIR=str(work))
        subprocess.run([str(TOOLS / "python"), "-c",
                        f"import boto3; boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='bench', aws_secret_access_key='bench').create_bucket(Bucket='bench')"],
                       check=True)
        results = {"savetool backup create": [], "tar -czf | upload": [], "savetool backup create --compression zstd": [], "restic backup": []}
        for run in range(args.runs):
            outcome = measure([args.savetool, "backup", "create", str(tree), "--repo", f"s3://bench/savetool-{run}", "-q"], env=env)
            if outcome.status != 0:
                sys.exit(f"savetool failed: {outcome.stderr}")
            results["savetool backup create"].append(outcome)
            outcome = measure(["sh", "-c", f"tar -czf - -C {tree} . | {TOOLS / 'python'} {work / 'upload.py'} {endpoint} bench tar-{run}.tar.gz"], env=env)
            if outcome.status != 0:
                sys.exit(f"tar | upload failed: {outcome.stderr}")
            results["tar -czf | upload"].append(outcome)
            outcome = measure([args.savetool, "backup", "create", str(tree), "--repo", f"s3://bench/zstd-{run}", "--compression", "zstd", "-q"], env=env)
            if outcome.status != 0:
                sys.exit(f"savetool (zstd) failed: {outcome.stderr}")
            results["savetool backup create --compression zstd"].append(outcome)
            repository = f"s3:{endpoint}/bench/restic-{run}"
            subprocess.run(["restic", "-r", repository, "init", "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
            outcome = measure(["restic", "-r", repository, "backup", "-q", str(tree)], env=env)
            if outcome.status != 0:
                sys.exit(f"restic failed: {outcome.stderr}")
            results["restic backup"].append(outcome)
        size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file())
        print(f"{args.files} files, {size / 1e6:.0f} MB; median of {args.runs} runs (range); moto's server on 127.0.0.1")
        print("| tool | time | peak memory |")
        print("|---|---|---|")
        medians = {}
        for name, runs in results.items():
            times = [r.elapsed for r in runs]
            medians[name] = statistics.median(times)
            print(f"| {name} | {medians[name]:.2f} s ({min(times):.2f}–{max(times):.2f}) | {max(r.peak for r in runs) / 2**20:.0f} MiB |")
        base = medians["tar -czf | upload"]
        print(f"savetool ÷ (tar + upload): {medians['savetool backup create'] / base:.2f}×; with zstd: {medians['savetool backup create --compression zstd'] / base:.2f}×; "
              f"restic ÷ (tar + upload): {medians['restic backup'] / base:.2f}×")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
