"""One measured run of a command: wall time and the command's own peak memory.

Peak memory comes from GNU time (`/usr/bin/time -f %M`, Debian package `time`). Reading
`ru_maxrss` from `wait4` in the benchmark itself is wrong on Linux: the forked child is charged
with the benchmark's own resident size before it execs the tool, so every figure would include
the Python process that generated the inputs.
"""
import os
import shutil
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


REMOVED_MARK = ".removed-at"


def settle_after_removing(work, folders):
    """Removes `folders`, flushes, and notes in `work` when, so that a next run can wait that out.

    On ext4 without a journal, creating files within 60 s of removing many (360 s while the
    inode table holding them is dirty, which a run's own new files make it) makes the kernel skip
    each recently freed inode one by one (`recently_deleted`, up to 16% of a run's samples in
    `perf`): whichever tool ran after a removal was slowed up to tenfold."""
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    os.sync()
    (work / REMOVED_MARK).write_text(str(time.time()))


def wait_for_removals_to_settle(work):
    """Waits until a removal noted in `work` is 361 s old (see above)."""
    mark = work / REMOVED_MARK
    if mark.exists():
        left = 361 - (time.time() - float(mark.read_text()))
        if left > 0:
            print(f"waiting {left:.0f} s for the last run's removals to settle", file=sys.stderr)
            time.sleep(left)
