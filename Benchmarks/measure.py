"""One measured run of a command: wall time and the command's own peak memory.

Peak memory comes from GNU time (`/usr/bin/time -f %M`, Debian package `time`). Reading
`ru_maxrss` from `wait4` in the benchmark itself is wrong on Linux: the forked child is charged
with the benchmark's own resident size before it execs the tool, so every figure would include
the Python process that generated the inputs.
"""
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
if GNU_TIME is None:
    sys.exit("benchmarks: GNU time is needed to measure peak memory (apt-get install -y time)")


@dataclass
class Run:
    elapsed: float
    peak: int  # bytes; 0 when GNU time could not tell
    status: int
    stdout: str
    stderr: str


def measure(command, cwd=None, env=None, keep_stdout=False):
    # Every run starts with nothing waiting to be written: a tool that flushes to disk (savetool
    # does, before its atomic renames) would otherwise also wait for what the previous run left.
    os.sync()
    with tempfile.NamedTemporaryFile("r") as peak_file:
        wrapped = [GNU_TIME, "-f", "%M", "-o", peak_file.name, *command]
        start = time.perf_counter()
        process = subprocess.run(wrapped, cwd=cwd, env=env, stdout=subprocess.PIPE if keep_stdout else subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        text = peak_file.read().strip().splitlines()
    # GNU time writes "Command exited with non-zero status N" before the figure when the command fails.
    peak = int(text[-1]) * 1024 if text and text[-1].isdigit() else 0
    return Run(elapsed, peak, process.returncode, (process.stdout or b"").decode(errors="replace"),
               process.stderr.decode(errors="replace"))
