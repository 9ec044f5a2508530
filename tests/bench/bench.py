#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later OR BSD-2-Clause
"""make bench: what dirahead gains, what it costs, and that it does no harm, side by side.

Every workload runs in three modes in one invocation: off (no daemon), daemon (one diraheadd for
all daemon cells, shipped defaults) and explicit (`diraheadctl prefetch DIR` started together with
the tool: the reference the daemon should approach).  Cells are medians of several runs with min
and max; ratios are between modes of this run only.  Needs root (FUSE, loop devices, BPF).

Phases, mirrored so that the cells most sensitive to drift (warm cache, per-call overhead) run
close together in time:
  A (no daemon):  cold slowfs, cold local, warm, fstatat loop      -> off and explicit
  B (daemon):     fstatat loop, warm, cold local, cold slowfs       -> daemon
Cold means a fresh slowfs mount, or a remount of the loop filesystem (direct-I/O loop device,
buffers flushed), before every run.  See README.md "Benchmarks" for how to read the output.
"""

import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
PYWALK = ("import os,sys\n"
          "for r, ds, fs in os.walk(sys.argv[1]):\n"
          "    for f in fs: os.stat(os.path.join(r, f), follow_symlinks=False)\n")
TOOL_ENV = dict(os.environ, LC_ALL="C", TZ="UTC")
RESULTS = os.path.join(TOP, "tests", "bench", "results")


def log(msg):
    print(msg, flush=True)


def die(msg):
    raise RuntimeError(msg)


# ---------------------------------------------------------------------------------------------
# Cleanup: every resource registers its release here; all run (last first) on any exit,
# including Ctrl-C and SIGTERM, with those signals blocked so the cleanup itself is not cut short.

class Cleanup:
    def __init__(self):
        self.stack = []
        self.children = set()   # tool processes in flight, killed first

    def push(self, fn, desc):
        self.stack.append((fn, desc))

    def run(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        for p in list(self.children):
            try:
                p.kill()
                p.wait(timeout=5)
            except Exception:
                pass
        while self.stack:
            fn, desc = self.stack.pop()
            try:
                fn()
            except Exception as e:  # keep going: later items may still be releasable
                print(f"bench: cleanup of {desc} failed: {e}", file=sys.stderr)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


CLEAN = Cleanup()


def sh(cmd, check=True, timeout=600, quiet=True):
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE if quiet else None,
                       stderr=subprocess.STDOUT if quiet else None,
                       timeout=timeout, text=True)
    if check and r.returncode != 0:
        die(f"{' '.join(cmd)} exited {r.returncode}: {(r.stdout or '').strip()[-2000:]}")
    return r


def mounted(path):
    """True if path is a mount point (reads mountinfo; never touches the path itself, so a
    dead FUSE server cannot hang the check)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def unix_connect(path, line, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall((line + "\n").encode())
    except OSError:
        s.close()
        raise
    return s


def daemon_request(path, line, timeout=10):
    """diraheadd's control protocol: one command, the reply runs until the daemon closes."""
    s = unix_connect(path, line, timeout)
    chunks = []
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
    finally:
        s.close()
    return b"".join(chunks).decode(errors="replace")


def slowfs_request(path, line, timeout=10):
    """slowfs's control protocol: output lines, then a status line OK or ERR ... ."""
    s = unix_connect(path, line, timeout)
    buf = b""
    try:
        while not (buf == b"OK\n" or buf.endswith(b"\nOK\n") or re.search(rb"(^|\n)ERR[^\n]*\n$", buf)):
            b = s.recv(65536)
            if not b:
                break
            buf += b
    finally:
        s.close()
    return buf.decode(errors="replace")


# ---------------------------------------------------------------------------------------------
# slowfs (tests/slowfs): one mount at a time, fresh for every cold run

class Slowfs:
    def __init__(self, build, backing, mnt, latency_us, workdir):
        self.build, self.backing, self.mnt, self.lat = build, backing, mnt, latency_us
        self.sock = os.path.join(workdir, "slowfs.sock")
        self.logpath = os.path.join(workdir, "slowfs.log")
        self.proc = None
        CLEAN.push(self.unmount, f"slowfs on {mnt}")

    def mount(self):
        os.makedirs(self.mnt, exist_ok=True)
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        logf = open(self.logpath, "a")
        # A session of its own: the terminal's Ctrl-C must not unmount it under a running tool.
        self.proc = subprocess.Popen(
            [os.path.join(self.build, "slowfs"), "--control", self.sock, "--latency-us",
             str(self.lat), self.backing, self.mnt],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + 10
        while not (os.path.exists(self.sock) and mounted(self.mnt)):
            if self.proc.poll() is not None:
                die(f"slowfs exited with {self.proc.returncode}: {open(self.logpath).read()[-2000:]}")
            if time.monotonic() > deadline:
                die(f"slowfs did not mount {self.mnt}: {open(self.logpath).read()[-2000:]}")
            time.sleep(0.01)
        os.stat(self.mnt)  # waits for FUSE INIT; caches the root's attributes
        self.ctl("reset")

    def unmount(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            self.ctl("release", timeout=2)
        except Exception:
            pass
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if mounted(self.mnt):
            subprocess.run(["fusermount3", "-uz", self.mnt], stderr=subprocess.DEVNULL)
            if mounted(self.mnt):
                subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        if p.poll() is None:
            p.kill()
            p.wait()

    def ctl(self, cmd, timeout=10):
        out = slowfs_request(self.sock, cmd, timeout)
        lines = out.splitlines()
        if not lines or lines[-1] != "OK":
            die(f"slowfs control '{cmd}': {out.strip()}")
        return lines[:-1]

    def stats(self):
        return dict(line.split("=", 1) for line in self.ctl("stats") if "=" in line)


# ---------------------------------------------------------------------------------------------
# ext4 / xfs on a loop device with direct I/O: the page cache of the image file stays out of it,
# so a remount (plus a flush of the device's buffers) makes the next access really cold.

class LoopFs:
    def __init__(self, fstype, img, mnt, size_gib):
        self.fstype, self.img, self.mnt = fstype, img, mnt
        self.dev = None
        with open(img, "wb") as f:
            f.truncate(size_gib << 30)
        CLEAN.push(self.close, f"{fstype} on {mnt}")
        self.dev = sh(["losetup", "--direct-io=on", "--find", "--show", img]).stdout.strip()
        if self.fstype == "ext4":
            # No lazy init: ext4lazyinit would zero inode tables in the background after every
            # mount for minutes, slowing whichever runs come first (the "off" ones).
            sh(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.dev])
        else:
            sh(["mkfs.xfs", "-q", "-f", self.dev])
        os.makedirs(mnt, exist_ok=True)
        sh(["mount", "-t", fstype, self.dev, mnt])

    def umount(self):
        for _ in range(100):
            if not mounted(self.mnt):
                return
            if subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.1)  # something (a daemon scan) may still hold it for a moment
        die(f"cannot unmount {self.mnt}")

    def remount(self):
        os.sync()
        self.umount()
        sh(["blockdev", "--flushbufs", self.dev])
        sh(["mount", "-t", self.fstype, self.dev, self.mnt])

    def close(self):
        if self.dev is None:
            return
        if mounted(self.mnt):
            if subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL).returncode:
                subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        subprocess.run(["losetup", "-d", self.dev], stderr=subprocess.DEVNULL)
        self.dev = None


# ---------------------------------------------------------------------------------------------
# diraheadd under test

class Daemon:
    def __init__(self, build, workdir, settings=()):
        self.build = build
        self.settings = settings
        self.conf = os.path.join(workdir, "dirahead.conf")
        self.sock = os.path.join(workdir, "diraheadd.sock")
        self.logpath = os.path.join(workdir, "diraheadd.log")
        self.proc = None
        self.exit_status = None

    def start(self):
        # Shipped defaults, except no metrics listener (a second instance may hold the port)
        # and one log line per scan (the per-cell scan counts and end reasons come from it).
        conf = {"daemon": {"log_level": "info"}, "metrics": {"address": ""}}
        for kv in self.settings:  # --set SECTION.KEY=VALUE, for experiments
            k, v = kv.split("=", 1)
            sec, key = k.split(".", 1)
            conf.setdefault(sec, {})[key] = v
        with open(self.conf, "w") as f:
            for sec, kv in conf.items():
                f.write(f"[{sec}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items()))
        logf = open(self.logpath, "a")
        CLEAN.push(self.stop, "diraheadd")
        self.proc = subprocess.Popen(
            [os.path.join(self.build, "diraheadd"), "--config", self.conf, "--socket", self.sock],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                die(f"diraheadd exited {self.proc.returncode}: {open(self.logpath).read()[-2000:]}")
            try:
                if self.request("status").get("attached"):
                    return
            except (OSError, ValueError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                die(f"diraheadd did not attach: {open(self.logpath).read()[-2000:]}")
            time.sleep(0.05)

    def request(self, cmd):
        out = daemon_request(self.sock, cmd)
        if not out.startswith("ok\n"):
            die(f"diraheadd {cmd}: {out.strip()}")
        return json.loads(out[3:])

    def stats(self):
        return self.request("stats")

    def scans(self):
        return self.request("scans")

    @property
    def pid(self):
        return self.proc.pid

    def cpu_seconds(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def status_kib(self, key):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def reset_peak_rss(self):
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")  # 5: reset VmHWM to the current RSS

    def switches(self):
        """Context switches per thread (io_uring workers come and go: compare per thread)."""
        n = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/status") as f:
                    n[tid] = sum(int(line.split()[1]) for line in f if line.startswith(
                        ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
            except (FileNotFoundError, ProcessLookupError):
                pass
        return n

    def wait_quiet(self, pids, timeout=30):
        """Until no scan of ours (of a process in pids) is left, then briefly until nothing
        is in flight (requests of scans just cancelled; other processes' scans may keep some in
        flight for long, so that wait is short)."""
        deadline = time.monotonic() + timeout
        while any(s.get("pid") in pids for s in self.scans()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        deadline = time.monotonic() + 2
        while self.stats().get("requests_in_flight", 0) and time.monotonic() < deadline:
            time.sleep(0.02)
        return True

    def bpf_programs(self):
        """run_time_ns/run_cnt of the BPF programs this daemon holds (found through its fds'
        fdinfo, since Debian's bpftool does not list owner pids); names from bpftool."""
        progs = {}
        for fd in os.listdir(f"/proc/{self.pid}/fdinfo"):
            try:
                with open(f"/proc/{self.pid}/fdinfo/{fd}") as f:
                    info = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            info = {k.strip(): v.strip() for k, v in info.items()}
            if "prog_id" in info and "run_cnt" in info and "link_type" not in info:
                progs[int(info["prog_id"])] = {"id": int(info["prog_id"]),
                                               "run_time_ns": int(info["run_time_ns"]),
                                               "run_cnt": int(info["run_cnt"])}
        for pid_ in progs:
            r = sh(["bpftool", "prog", "show", "id", str(pid_), "--json"], check=False)
            try:
                progs[pid_]["name"] = json.loads(r.stdout)["name"]
            except (ValueError, KeyError):
                progs[pid_]["name"] = f"id{pid_}"
        return sorted(progs.values(), key=lambda p: p["name"])

    def stop(self):
        p, self.proc = self.proc, None
        if p is None:
            return
        p.terminate()
        try:
            self.exit_status = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            self.exit_status = p.wait()


SCAN_END_RE = re.compile(r"scan end: pid (\d+) \((.*?)\) (.*): (\w+), (\d+) prefetched, (\d+) errors, "
                         r"(\d+) hits, (\d+) misses")
SCAN_RE = re.compile(r"scan: pid (\d+) \((.*?)\) (.*), \w+ order")


class DaemonLog:
    """The scans a cell caused, from the daemon's log lines (those of our tools' pids, so scans
    of other processes on the machine are counted apart).  The daemon rate-limits these lines,
    so they serve to attribute scans and their end reasons, not to count entries."""

    def __init__(self, path):
        self.path, self.pos = path, 0

    def mark(self):
        self.pos = os.path.getsize(self.path) if os.path.exists(self.path) else 0

    def since_mark(self, pids):
        with open(self.path, errors="replace") as f:
            f.seek(self.pos)
            text = f.read()
        r = {"scans": 0, "other_scans": 0, "prefetched": 0, "hits": 0, "misses": 0, "ends": {},
             "suppressed": 0}
        for line in text.splitlines():
            m = re.search(r"(\d+) log messages suppressed", line)
            if m:  # the daemon's rate limit (200 per 5 s): the counts here are then incomplete
                r["suppressed"] += int(m.group(1))
                continue
            m = SCAN_END_RE.search(line)
            if m:
                if int(m.group(1)) in pids:
                    r["prefetched"] += int(m.group(5))
                    r["hits"] += int(m.group(7))
                    r["misses"] += int(m.group(8))
                    r["ends"][m.group(4)] = r["ends"].get(m.group(4), 0) + 1
                continue
            m = SCAN_RE.search(line)
            if m:
                r["scans" if int(m.group(1)) in pids else "other_scans"] += 1
        return r


# ---------------------------------------------------------------------------------------------
# datasets: files created in random order (so readdir, inode and name order all differ)

def make_flat(d, n, rng):
    os.makedirs(d)
    names = [f"f{i:06d}" for i in range(1, n + 1)]
    rng.shuffle(names)
    for name in names:
        os.close(os.open(os.path.join(d, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))


def make_tree(d, ndirs, nfiles, rng):
    os.makedirs(d)
    dirs = [f"d{j:04d}" for j in range(ndirs)]
    rng.shuffle(dirs)
    for x in dirs:
        os.mkdir(os.path.join(d, x))
    files = [(j, i) for j in range(ndirs) for i in range(nfiles)]
    rng.shuffle(files)
    for j, i in files:
        os.close(os.open(os.path.join(d, f"d{j:04d}", f"f{i:04d}"),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))


def make_copy(d, src):
    sh(["cp", "-a", src, d])


def count_entries(d):
    n = 0
    for _, ds, fs in os.walk(d):
        n += len(ds) + len(fs)
    return n


# ---------------------------------------------------------------------------------------------
# workloads

STAT_TOOLS = ["ls_l", "ls_lU", "du", "find_ls", "rsync", "tar", "pywalk"]
TREE_TOOLS = ["find_ls", "du", "rsync", "tar", "pywalk"]
LIST_TOOLS = ["ls", "ls_f", "find_name"]
LABEL = {"ls_l": "ls -l", "ls_lU": "ls -lU", "du": "du -s", "find_ls": "find -ls",
         "rsync": "rsync -an", "tar": "tar cf /dev/null", "pywalk": "os.walk+stat",
         "ls": "ls", "ls_f": "ls -f", "find_name": "find -name x",
         "fstatat_scan": "fstatat x1M (listed dir)", "fstatat_plain": "fstatat x1M (no listing)"}


def tool_argv(tool, d, scratch):
    return {
        "ls_l": ["ls", "-l", d],
        "ls_lU": ["ls", "-lU", d],
        "du": ["du", "-s", d],
        "find_ls": ["find", d, "-ls"],
        "rsync": ["rsync", "-an", d + "/", os.path.join(scratch, "rsync-dst") + "/"],
        "tar": ["tar", "cf", "/dev/null", d],
        "pywalk": [PY, "-c", PYWALK, d],
        "ls": ["ls", d],
        "ls_f": ["ls", "-f", d],
        "find_name": ["find", d, "-name", "x"],
    }[tool]


# ---------------------------------------------------------------------------------------------
# the plan: scenarios x workloads x modes

def plan(quick):
    """Scenarios.  Each: id, fs, latency_us (slowfs), layout, cache, tools, modes, runs."""
    S = []
    if quick:
        S += [
            dict(id="slowfs-500us-dir5k", fs="slowfs", lat=500, layout="dir5k", cache="cold",
                 tools=["ls_l"], runs=3),
            dict(id="slowfs-500us-dir5k-harm", fs="slowfs", lat=500, layout="dir5k", cache="cold",
                 tools=LIST_TOOLS, runs=5, harm=True),
            dict(id="slowfs-200us-tree50x50", fs="slowfs", lat=200, layout="tree50x50",
                 cache="cold", tools=["find_ls", "du"], runs=1),
            dict(id="ext4-cold-dir20k", fs="ext4", layout="dir20k", cache="cold",
                 tools=["ls_l"], runs=3),
            dict(id="ext4-warm-dir20k", fs="ext4", layout="dir20k", cache="warm",
                 tools=["ls_l"], runs=3),
        ]
        fst = dict(id="fstatat-loop", calls=1_000_000, runs=3)
    else:
        for lat in (200, 500, 1000):
            tag = f"{lat}us" if lat < 1000 else "1ms"
            if lat == 500:  # the headline target's scenario
                S.append(dict(id=f"slowfs-{tag}-dir5k", fs="slowfs", lat=lat, layout="dir5k",
                              cache="cold", tools=["ls_l", "ls_lU"], runs=5))
                continue
            S += [
                dict(id=f"slowfs-{tag}-dir5k", fs="slowfs", lat=lat, layout="dir5k",
                     cache="cold", tools=STAT_TOOLS, runs=3),
                # 50,000 entries: the big-directory (and daemon RSS) scenario; at 1 ms an off
                # run takes a minute, so fewer tools there
                dict(id=f"slowfs-{tag}-dir50k", fs="slowfs", lat=lat, layout="dir50k",
                     cache="cold", tools=["ls_l", "find_ls", "du"] if lat < 1000 else ["ls_l"],
                     runs=3),
                dict(id=f"slowfs-{tag}-tree200x50", fs="slowfs", lat=lat, layout="tree200x50",
                     cache="cold", tools=TREE_TOOLS, runs=3),
                dict(id=f"slowfs-{tag}-usrinclude", fs="slowfs", lat=lat, layout="usrinclude",
                     cache="cold", tools=TREE_TOOLS if lat < 1000 else ["find_ls", "du", "tar"],
                     runs=3),
            ]
        S.append(dict(id="slowfs-1ms-dir5k-harm", fs="slowfs", lat=1000, layout="dir5k",
                      cache="cold", tools=LIST_TOOLS, runs=5, harm=True))
        for fs in ("ext4", "xfs"):
            S += [
                dict(id=f"{fs}-cold-dir100k", fs=fs, layout="dir100k", cache="cold",
                     tools=STAT_TOOLS, runs=3),
                dict(id=f"{fs}-cold-tree500x100", fs=fs, layout="tree500x100", cache="cold",
                     tools=TREE_TOOLS, runs=3),
                dict(id=f"{fs}-cold-dir100k-harm", fs=fs, layout="dir100k", cache="cold",
                     tools=LIST_TOOLS, runs=5, harm=True),
                dict(id=f"{fs}-warm-dir100k", fs=fs, layout="dir100k", cache="warm",
                     tools=STAT_TOOLS, runs=5),
                dict(id=f"{fs}-warm-tree500x100", fs=fs, layout="tree500x100", cache="warm",
                     tools=TREE_TOOLS, runs=3),
            ]
        fst = dict(id="fstatat-loop", calls=1_000_000, runs=5)
    for s in S:
        s.setdefault("harm", False)
        s["modes"] = ["off", "daemon"] if s["harm"] or s["cache"] == "warm" else \
            ["off", "explicit", "daemon"]
    return S, fst


LAYOUTS = {
    "dir5k": ("flat", 5000), "dir20k": ("flat", 20000), "dir50k": ("flat", 50000),
    "dir100k": ("flat", 100000), "tree50x50": ("tree", 50, 50), "tree200x50": ("tree", 200, 50),
    "tree500x100": ("tree", 500, 100), "usrinclude": ("copy", "/usr/include"),
}


def make_layout(d, layout, rng):
    kind = LAYOUTS[layout]
    if kind[0] == "flat":
        make_flat(d, kind[1], rng)
    elif kind[0] == "tree":
        make_tree(d, kind[1], kind[2], rng)
    else:
        make_copy(d, kind[1])


def is_tree(layout):
    return LAYOUTS[layout][0] != "flat"


# ---------------------------------------------------------------------------------------------

def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


class Bench:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build)
        self.scenarios, self.fst = plan(args.quick)
        if args.only:
            rx = re.compile(args.only)
            self.scenarios = [s for s in self.scenarios if rx.search(s["id"])]
        if args.runs:
            for s in self.scenarios:
                s["runs"] = args.runs
            self.fst["runs"] = args.runs
        self.scratch = tempfile.mkdtemp(prefix="dirahead-bench.", dir=args.tmpdir)
        CLEAN.push(lambda: shutil.rmtree(self.scratch, ignore_errors=True), "scratch directory")
        self.pids = set()       # every tool and diraheadctl process we started
        self.cell_pids = set()  # those of the current cell
        self.rng = random.Random(5)
        self.loops = {}
        self.slowfs = None
        self.daemon = None
        self.dlog = None
        self.cells = {}         # (scenario id, tool) -> cell
        self.fstat_cells = {}
        self.rss = {}           # scenario id -> peak RSS (KiB) while its daemon cells ran
        self.cpu = {}
        self.warnings = []
        self.timing = {}
        self.nentries = {}
        self.stats_enabled = None
        self.idle = {}

    # -- setup --------------------------------------------------------------------------------
    def setup(self):
        t0 = time.monotonic()
        layouts = {"slowfs": set(), "ext4": set(), "xfs": set()}
        for s in self.scenarios:
            layouts[s["fs"]].add(s["layout"])
        back = os.path.join(self.scratch, "back")
        os.makedirs(back)
        for lay in sorted(layouts["slowfs"]):
            log(f"setup: slowfs backing {lay}")
            make_layout(os.path.join(back, lay), lay, self.rng)
        for fs in ("ext4", "xfs"):
            if not layouts[fs]:
                continue
            log(f"setup: {fs} on a direct-I/O loop device: {', '.join(sorted(layouts[fs]))}")
            lf = LoopFs(fs, os.path.join(self.scratch, f"{fs}.img"),
                        os.path.join(self.scratch, fs), 8)
            for lay in sorted(layouts[fs]):
                make_layout(os.path.join(lf.mnt, lay), lay, self.rng)
            lf.remount()
            self.loops[fs] = lf
        os.makedirs(os.path.join(self.scratch, "mnt"))
        # The per-call overhead works on cached files on the root filesystem.
        self.fst_dir = os.path.join(self.scratch, "fstat")
        make_flat(self.fst_dir, 1000, self.rng)
        self.timing["setup_s"] = time.monotonic() - t0

    def target_dir(self, s):
        if s["fs"] == "slowfs":
            return os.path.join(self.scratch, "mnt", s["layout"])
        return os.path.join(self.loops[s["fs"]].mnt, s["layout"])

    # -- one run ------------------------------------------------------------------------------
    def prepare_cold(self, s):
        if s["fs"] == "slowfs":
            if self.slowfs is None or self.slowfs.lat != s["lat"]:
                if self.slowfs:
                    self.slowfs.unmount()
                self.slowfs = Slowfs(self.build, os.path.join(self.scratch, "back"),
                                     os.path.join(self.scratch, "mnt"), s["lat"], self.scratch)
            else:
                self.slowfs.unmount()
            self.slowfs.mount()
        else:
            self.loops[s["fs"]].remount()

    def run_once(self, s, tool, mode):
        """Runs the tool once; returns a dict with its wall time and, on slowfs, lookups."""
        d = self.target_dir(s)
        argv = tool_argv(tool, d, self.scratch)
        exp = None
        others = other_daemons(self.daemon)
        t0 = time.perf_counter()
        if mode == "explicit":
            cmd = [os.path.join(self.build, "diraheadctl"), "prefetch", "-q"]
            if is_tree(s["layout"]):
                cmd.append("-r")
            exp = subprocess.Popen(cmd + [d], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
            CLEAN.children.add(exp)
            self.pids.add(exp.pid)
            self.cell_pids.add(exp.pid)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=TOOL_ENV)
        CLEAN.children.add(p)
        self.pids.add(p.pid)
        self.cell_pids.add(p.pid)
        try:
            _, err = p.communicate(timeout=self.a.timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            die(f"{' '.join(argv)} took longer than {self.a.timeout} s")
        t1 = time.perf_counter()
        CLEAN.children.discard(p)
        r = {"s": t1 - t0}
        others = sorted(set(others + other_daemons(self.daemon)))
        if others:
            r["others"] = others
        if p.returncode != 0:
            die(f"{' '.join(argv)} exited {p.returncode}: {err.decode(errors='replace')[-500:]}")
        if exp:
            _, err = exp.communicate(timeout=300)
            CLEAN.children.discard(exp)
            r["explicit_s"] = time.perf_counter() - t0
            if exp.returncode != 0:
                die(f"diraheadctl prefetch exited {exp.returncode}: {err.decode(errors='replace')}")
        if s["fs"] == "slowfs":
            st = self.slowfs.stats()
            own = int(st.get(f"pid.{p.pid}.lookup", 0))
            r["app_lookups"] = own
            # Only an off run has no io_uring workers of ours, whose lookups slowfs may count
            # under a worker's thread id once the worker has exited: there, anything but the
            # tool is someone else's (another diraheadd).
            if mode == "off":
                r["foreign_lookups"] = int(st.get("total.lookup", 0)) - own
        if self.daemon and mode == "daemon":
            if not self.daemon.wait_quiet(self.pids):
                self.warn(f"{s['id']} {tool}: the daemon still had scans 30 s after the run")
        return r

    def warn(self, msg):
        self.warnings.append(msg)
        log(f"WARNING: {msg}")

    def cell(self, s, tool):
        key = (s["id"], tool)
        if key not in self.cells:
            self.cells[key] = {"scenario": s["id"], "fs": s["fs"], "latency_us": s.get("lat"),
                               "layout": s["layout"], "cache": s["cache"], "harm": s["harm"],
                               "workload": tool, "modes": {}}
        return self.cells[key]

    def record(self, s, tool, mode, runs):
        c = self.cell(s, tool)
        m = summary([r["s"] for r in runs])
        m["runs"] = runs
        if "app_lookups" in runs[0]:
            m["app_lookups"] = statistics.median(r["app_lookups"] for r in runs)
        if "foreign_lookups" in runs[0]:
            m["foreign_lookups"] = max(r["foreign_lookups"] for r in runs)
            if m["foreign_lookups"] > self.entries(s) // 100:
                c["contaminated"] = True
                self.warn(f"{s['id']} {tool} {mode}: {m['foreign_lookups']} lookups by other "
                          f"processes (another diraheadd?); this cell is not clean")
        others = sorted(set(o for r in runs for o in r.get("others", [])))
        if others:
            c["contaminated"] = True
            self.warn(f"{s['id']} {tool} {mode}: other diraheadd running: {'; '.join(others)}")
        c["modes"][mode] = m
        return m

    def entries(self, s):
        if s["layout"] not in self.nentries:
            self.nentries[s["layout"]] = count_entries(self.target_dir(s)) if s["fs"] != "slowfs" \
                else count_entries(os.path.join(self.scratch, "back", s["layout"]))
        return self.nentries[s["layout"]]

    def run_cell(self, s, tool, modes, warmup=True):
        runs = {m: [] for m in modes}
        if s["cache"] == "warm" and warmup:
            self.run_once(s, tool, modes[0])  # warm-up, not counted
        for i in range(s["runs"]):
            # alternate the order of the modes from run to run, against drift
            for mode in (modes if i % 2 == 0 else modes[::-1]):
                if s["cache"] == "cold":
                    self.prepare_cold(s)
                runs[mode].append(self.run_once(s, tool, mode))
        for mode in modes:
            m = self.record(s, tool, mode, runs[mode])
            log(f"  {s['id']:28} {LABEL[tool]:18} {mode:8} median {m['median']:8.3f} s "
                f"[{m['min']:.3f}-{m['max']:.3f}]")

    def fstatat(self, mode):
        exe = os.path.join(self.build, "tests", "bench", "fstatat-loop")
        for kind in ("scan", "plain"):
            xs = []
            for _ in range(self.fst["runs"]):
                r = sh([exe, "-n", str(self.fst["calls"]), "-m", kind, self.fst_dir])
                xs.append(float(re.search(r"ns_per_call=([\d.]+)", r.stdout).group(1)))
            m = summary(xs)
            self.fstat_cells.setdefault(kind, {})[mode] = m
            log(f"  fstatat-loop {kind:6} {mode:8} median {m['median']:8.1f} ns/call "
                f"[{m['min']:.1f}-{m['max']:.1f}]")

    # -- phases -------------------------------------------------------------------------------
    def groups(self):
        cold_slow = [s for s in self.scenarios if s["fs"] == "slowfs"]
        cold_local = [s for s in self.scenarios if s["fs"] != "slowfs" and s["cache"] == "cold"]
        warm = [s for s in self.scenarios if s["cache"] == "warm"]
        return cold_slow, cold_local, warm

    def phase_a(self):
        t0 = time.monotonic()
        cold_slow, cold_local, warm = self.groups()
        log("phase A: no daemon (off, explicit)")
        for s in cold_slow + cold_local + warm:
            modes = [m for m in s["modes"] if m != "daemon"]
            for tool in s["tools"]:
                self.run_cell(s, tool, modes)
        if self.slowfs:
            self.slowfs.unmount()
        self.fstatat("off")
        self.timing["phase_a_s"] = time.monotonic() - t0

    def phase_b(self):
        t0 = time.monotonic()
        cold_slow, cold_local, warm = self.groups()
        log("phase B: one diraheadd for every daemon cell")
        self.daemon = Daemon(self.build, self.scratch, self.a.set or ())
        self.daemon.start()
        self.dlog = DaemonLog(self.daemon.logpath)
        self.idle = {"start": self.idle_cpu()}
        self.cpu["startup_s"] = self.daemon.cpu_seconds()
        self.fstatat("daemon")
        for s in warm + cold_local + cold_slow:
            if s["cache"] == "cold" and self.stats_enabled is None:
                # BPF run-time accounting costs a little per program run: on only for the cold
                # cells, never while overhead is measured.
                self.enable_bpf_stats()
            self.daemon.reset_peak_rss()
            cpu0 = self.daemon.cpu_seconds()
            for tool in s["tools"]:
                if s["cache"] == "warm":
                    self.run_once(s, tool, "daemon")  # warm-up outside the cell's statistics
                self.daemon.wait_quiet(self.pids)
                st0 = self.daemon.stats()
                self.dlog.mark()
                self.cell_pids = set()
                self.run_cell(s, tool, ["daemon"], warmup=False)
                st1 = self.daemon.stats()
                self.cell(s, tool)["daemon_stats"] = self.stats_delta(st0, st1)
            self.rss[s["id"]] = self.daemon.status_kib("VmHWM")
            self.cpu[s["id"]] = self.daemon.cpu_seconds() - cpu0
        if self.slowfs:
            self.slowfs.unmount()
        self.daemon.wait_quiet(self.pids)
        self.idle["end"] = self.idle_cpu()
        self.bpf = self.daemon.bpf_programs()
        self.restore_bpf_stats()
        self.daemon_total = self.daemon.stats()
        self.cpu["total_s"] = self.daemon.cpu_seconds()
        self.rss_now = self.daemon.status_kib("VmRSS")
        self.daemon.stop()
        if self.daemon.exit_status != 0:
            self.warn(f"diraheadd exited {self.daemon.exit_status} on SIGTERM")
        self.timing["phase_b_s"] = time.monotonic() - t0

    def stats_delta(self, a, b):
        d = {k: b.get(k, 0) - a.get(k, 0) for k in
             ("entries_prefetched", "hits", "late", "misses", "scans_started", "scans_confirmed")}
        d["errors"] = sum(b.get("errors", {}).values()) - sum(a.get("errors", {}).values())
        judged = d["hits"] + d["late"] + d["misses"]
        d["hit_ratio"] = d["hits"] / judged if judged else None
        d["late_ratio"] = d["late"] / judged if judged else None
        # Wasted: fetched, but the application's stat did not find it fetched or in flight.
        d["wasted"] = max(0, d["entries_prefetched"] - d["hits"] - d["late"])
        d["log"] = self.dlog.since_mark(self.cell_pids)
        return d

    def idle_cpu(self):
        """CPU and context switches of the daemon while nothing of ours runs.  Scans of other
        processes on the machine (other tests, another user's ls -l) are real work, not idle
        cost: they are counted and reported next to the figure."""
        secs = self.a.idle_seconds
        self.daemon.wait_quiet(self.pids)
        self.dlog.mark()
        st0 = self.daemon.stats()
        c0, w0 = self.daemon.cpu_seconds(), self.daemon.switches()
        time.sleep(secs)
        w1 = self.daemon.switches()
        r = {"seconds": secs, "cpu_s": round(self.daemon.cpu_seconds() - c0, 3),
             "wakeups": sum(v - w0.get(t, 0) for t, v in w1.items())}
        st1 = self.daemon.stats()
        r["scans_by_others"] = self.dlog.since_mark(self.pids)["other_scans"]
        r["bpf_events"] = st1.get("bpf_events", 0) - st0.get("bpf_events", 0)
        if r["scans_by_others"] or r["bpf_events"]:
            self.warn(f"idle window: the daemon saw {r['bpf_events']} BPF events and "
                      f"{r['scans_by_others']} scans from other processes on the machine")
        return r

    def enable_bpf_stats(self):
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            self.stats_enabled = f.read().strip()
        CLEAN.push(self.restore_bpf_stats, "kernel.bpf_stats_enabled")
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")

    def restore_bpf_stats(self):
        if self.stats_enabled is not None:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(self.stats_enabled)

    def run(self):
        t0 = time.monotonic()
        others = other_daemons()
        if others:
            self.warn("other diraheadd instances are running (they prefetch for the 'off' runs "
                      "too): " + "; ".join(others))
        self.other_daemons_at_start = others
        self.setup()
        self.phase_a()
        self.phase_b()
        self.other_daemons_at_end = other_daemons()
        self.timing["total_s"] = time.monotonic() - t0


def other_daemons(mine=None):
    """diraheadd processes other than ours (their detectors see our tools too)."""
    skip = str(mine.pid) if mine and mine.proc else None
    r = subprocess.run(["pgrep", "-a", "diraheadd"], stdout=subprocess.PIPE, text=True)
    return [line for line in r.stdout.splitlines() if line.strip() and line.split()[0] != skip]


# ---------------------------------------------------------------------------------------------
# results: ratios, targets, tables, JSON, chart

def ratios(c):
    m = c["modes"]
    r = {}
    if "off" in m and "daemon" in m:
        r["off_daemon"] = m["off"]["median"] / m["daemon"]["median"]
        r["daemon_off"] = m["daemon"]["median"] / m["off"]["median"]
    if "off" in m and "explicit" in m:
        r["off_explicit"] = m["off"]["median"] / m["explicit"]["median"]
    if "off_daemon" in r and "off_explicit" in r:
        # the daemon's speedup as a fraction of explicit's (= t_explicit / t_daemon)
        r["fraction_of_explicit"] = r["off_daemon"] / r["off_explicit"]
    return r


def targets(b):
    T = []
    cells = list(b.cells.values())

    def add(name, met, detail):
        T.append({"target": name, "met": met, "detail": detail})

    def find(pred):
        return [c for c in cells if pred(c)]

    # 1. headline: slowfs 500 us (or the nearest), ls -l, 5,000 files
    cand = find(lambda c: c["fs"] == "slowfs" and c["layout"] == "dir5k" and
                c["workload"] == "ls_l" and not c["harm"])
    if cand:
        c = min(cand, key=lambda c: abs(c["latency_us"] - 500))
        r = c["ratios"]
        met = r.get("off_daemon", 0) >= 5 and r.get("fraction_of_explicit", 0) >= 0.85
        add("slowfs ls -l 5,000 files: >= 5x faster than off and >= 85% of explicit's speedup",
            met, f"{c['scenario']}: {r.get('off_daemon', 0):.1f}x, explicit "
                 f"{r.get('off_explicit', 0):.1f}x, fraction {r.get('fraction_of_explicit', 0):.0%}")
    # 2. slowfs trees
    cand = find(lambda c: c["fs"] == "slowfs" and is_tree(c["layout"]) and not c["harm"])
    if cand:
        worst = min(cand, key=lambda c: c["ratios"].get("off_daemon", 0))
        add("slowfs tree workloads (find, du, rsync, tar, os.walk): >= 2x",
            all(c["ratios"].get("off_daemon", 0) >= 2 for c in cand),
            f"{len(cand)} cells, slowest {worst['ratios'].get('off_daemon', 0):.2f}x "
            f"({worst['scenario']} {LABEL[worst['workload']]}), median "
            f"{statistics.median(c['ratios'].get('off_daemon', 0) for c in cand):.2f}x")
    # 3. local ext4 cold ls -l
    cand = find(lambda c: c["fs"] == "ext4" and c["cache"] == "cold" and c["workload"] == "ls_l"
                and not c["harm"])
    for c in cand:
        add(f"local ext4 cold ls -l ({c['layout']}): >= 1.2x", c["ratios"].get("off_daemon", 0) >= 1.2,
            f"{c['ratios'].get('off_daemon', 0):.2f}x (explicit {c['ratios'].get('off_explicit', 0):.2f}x)")
    # 4. warm ls -l and the fstatat loop
    cand = find(lambda c: c["cache"] == "warm" and c["workload"] == "ls_l" and c["fs"] == "ext4")
    for c in cand:
        add(f"warm ext4 ls -l ({c['layout']}): daemon/off <= 1.03",
            c["ratios"].get("daemon_off", 9) <= 1.03, f"{c['ratios'].get('daemon_off', 0):.3f}")
    for kind, m in b.fstat_cells.items():
        if "off" in m and "daemon" in m:
            ov = m["daemon"]["median"] / m["off"]["median"] - 1
            m["overhead"] = ov
            add(f"fstatat loop overhead ({'listed directory' if kind == 'scan' else 'no listing'}): <= 5%",
                ov <= 0.05, f"{m['off']['median']:.1f} -> {m['daemon']['median']:.1f} ns/call, {ov:+.1%}")
    # 5. harm
    cand = find(lambda c: c["harm"])
    if cand:
        # The daemon's counters are exact but count every process on the machine; its log
        # attributes scans to our tools' pids.  Prefetches with no scan of ours in a complete
        # log were someone else's.
        pre = sum(c.get("daemon_stats", {}).get("entries_prefetched", 0) for c in cand)
        lg = [c.get("daemon_stats", {}).get("log", {}) for c in cand]
        scans = sum(x.get("scans", 0) for x in lg)
        if pre and not scans and not any(x.get("suppressed") for x in lg) and \
                any(x.get("other_scans") for x in lg):
            pre = 0
        worst = max(c["ratios"].get("daemon_off", 0) for c in cand)
        # These runs take 10-300 ms: allow 10% or 5 ms of noise.
        slow = [c for c in cand if c["ratios"].get("daemon_off", 0) > 1.10 and
                c["modes"]["daemon"]["median"] - c["modes"]["off"]["median"] > 0.005]
        add("harm: zero prefetched entries for listing-only workloads (ls, ls -f, find -name x), "
            "ratio ~1.0 (daemon/off <= 1.10, or within 5 ms)",
            pre == 0 and scans == 0 and not slow,
            f"{len(cand)} cells: {scans} scans, {pre} entries prefetched; daemon/off "
            f"{min(c['ratios'].get('daemon_off', 0) for c in cand):.2f}-{worst:.2f}")
    # 6. RSS and idle CPU
    big = {k: v for k, v in b.rss.items() if "50k" in k}
    if big:
        peak = max(big.values())
        add("daemon peak RSS <= 32 MiB during the 50,000-entry scenarios", peak <= 32 * 1024,
            f"{peak / 1024:.1f} MiB (VmHWM, reset before each scenario)")
    if getattr(b, "idle", None):
        cpu = sum(v["cpu_s"] for v in b.idle.values())
        wk = sum(v["wakeups"] for v in b.idle.values())
        ev = sum(v["bpf_events"] for v in b.idle.values())
        secs = sum(v["seconds"] for v in b.idle.values())
        add("idle daemon CPU zero", cpu == 0,
            f"{cpu:.2f} s CPU, {wk} context switches in {secs:.0f} s idle (after start and at the end)"
            + (f"; {ev} BPF events from other processes meanwhile" if ev else ""))
    return T


def fmt_t(m):
    if not m:
        return ""
    return f"{m['median']:.3f} ({m['min']:.3f}-{m['max']:.3f})"


def fmt_x(x):
    return "" if x is None else f"{x:.2f}x"


def markdown(b, T, meta):
    L = []
    L.append("# dirahead benchmark results")
    L.append("")
    L.append(f"{meta['date']} · kernel {meta['kernel']} · {meta['cpus']} CPUs · "
             f"commit {meta['commit']} · {'QUICK' if meta['quick'] else 'full'} run in "
             f"{meta['timing']['total_s'] / 60:.1f} min · `{meta['command']}`")
    L.append("")
    L.append("Times in seconds: median (min-max) of the runs. off = no daemon; explicit = "
             "`diraheadctl prefetch` started with the tool; daemon = diraheadd with the shipped "
             "defaults. off/daemon and off/explicit are speedups; of expl. = the daemon's speedup as "
             "a fraction of explicit's (t_explicit / t_daemon). prefetched, hit %, late %, wasted: "
             "the daemon's counters over the cell's daemon runs, all runs together (hit % = hits / "
             "(hits + late + misses), late % = found in flight, both sampled per progress event; "
             "wasted = prefetched - hits - late; scans of other processes meanwhile count too). "
             "app lookups (slowfs only): LOOKUPs the tool itself sent, median per run (off sends "
             "them all). † = another diraheadd ran, or other processes sent lookups, during the "
             "cell (see Warnings).")
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | result | figures |")
    L.append("|---|---|---|")
    for t in T:
        L.append(f"| {t['target']} | {'MET' if t['met'] else '**NOT MET**'} | {t['detail']} |")
    L.append("")
    L.append("## Cells")
    L.append("")
    L.append("| scenario | workload | runs | off | explicit | daemon | off/daemon | off/explicit | "
             "of expl. | prefetched | hit % | late % | wasted | app lookups off / daemon |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in b.cells.values():
        m, r, ds = c["modes"], c["ratios"], c.get("daemon_stats", {})
        ours = ds.get("entries_prefetched", "")
        hr, lr = ds.get("hit_ratio"), ds.get("late_ratio")
        lk = ""
        if "app_lookups" in m.get("off", {}):
            lk = f"{m['off']['app_lookups']:.0f} / {m.get('daemon', {}).get('app_lookups', float('nan')):.0f}"
        runs = max(x["n"] for x in m.values())
        L.append(f"| {c['scenario']}{' †' if c.get('contaminated') else ''} | {LABEL[c['workload']]} | {runs} | {fmt_t(m.get('off'))} | "
                 f"{fmt_t(m.get('explicit'))} | {fmt_t(m.get('daemon'))} | {fmt_x(r.get('off_daemon'))} | "
                 f"{fmt_x(r.get('off_explicit'))} | "
                 f"{'' if r.get('fraction_of_explicit') is None else format(r['fraction_of_explicit'], '.0%')} | "
                 f"{ours} | {'' if hr is None else format(hr, '.0%')} | "
                 f"{'' if lr is None else format(lr, '.0%')} | "
                 f"{ds.get('wasted', '')} | {lk} |")
    L.append("")
    L.append("## Per-call overhead (fstatat on 1,000 cached files, 1,000,000 calls)")
    L.append("")
    L.append("| loop | off ns/call | daemon ns/call | overhead |")
    L.append("|---|---|---|---|")
    for kind, m in b.fstat_cells.items():
        f = lambda x: f"{x['median']:.1f} ({x['min']:.1f}-{x['max']:.1f})" if x else ""
        ov = m.get("overhead")
        L.append(f"| {LABEL['fstatat_' + kind]} | {f(m.get('off'))} | {f(m.get('daemon'))} | "
                 f"{'' if ov is None else format(ov, '+.1%')} |")
    L.append("")
    L.append("## The daemon")
    L.append("")
    d = meta["daemon"]
    L.append(f"- CPU: {d['cpu']['total_s']:.2f} s over phase B ({meta['timing']['phase_b_s']:.0f} s); "
             f"{d['cpu']['startup_s']:.2f} s of it at start (BPF load and attach).")
    L.append("- Idle: " + "; ".join(f"{k}: {v['cpu_s']:.2f} s CPU, {v['wakeups']} context switches, "
                                    f"{v['bpf_events']} BPF events in {v['seconds']:.0f} s"
                                    for k, v in d["idle"].items()) + ".")
    L.append("- Peak RSS (VmHWM, reset before each scenario): " +
             ", ".join(f"{k} {v / 1024:.1f} MiB" for k, v in d["peak_rss_kib"].items()) +
             f"; RSS at the end {d['rss_end_kib'] / 1024:.1f} MiB.")
    tot = d["stats"]
    judged = tot.get("hits", 0) + tot.get("late", 0) + tot.get("misses", 0)
    L.append(f"- Totals: {tot.get('scans_started', 0)} scans started, {tot.get('entries_prefetched', 0)} "
             f"entries prefetched, {tot.get('hits', 0)} hits, {tot.get('late', 0)} late, "
             f"{tot.get('misses', 0)} misses (hit ratio "
             f"{(tot.get('hits', 0) / judged if judged else 0):.1%}), wasted "
             f"{max(0, tot.get('entries_prefetched', 0) - tot.get('hits', 0) - tot.get('late', 0))}, "
             f"scans ended: " + ", ".join(f"{k} {v}" for k, v in tot.get("scans_ended", {}).items() if v) +
             (", skipped: " + ", ".join(f"{k} {v}" for k, v in tot.get("skips", {}).items() if v)
              if any(tot.get("skips", {}).values()) else "") + ".")
    L.append("- BPF programs (average run time while kernel.bpf_stats_enabled=1, cold cells only): " +
             ", ".join(f"{p['name']} {p['run_time_ns'] / p['run_cnt']:.0f} ns x {p['run_cnt']}"
                       if p["run_cnt"] else f"{p['name']} not run" for p in d["bpf"]) + ".")
    L.append("")
    if meta["warnings"]:
        L.append("## Warnings")
        L.append("")
        for w in meta["warnings"]:
            L.append(f"- {w}")
        L.append("")
    L.append(f"Timing: setup {meta['timing']['setup_s']:.0f} s, phase A {meta['timing']['phase_a_s']:.0f} s, "
             f"phase B {meta['timing']['phase_b_s']:.0f} s.")
    L.append("")
    return "\n".join(L)


def chart(b, out_png, gp):
    rows = [c for c in b.cells.values() if "off_daemon" in c["ratios"] and not c["harm"]]
    if not rows or not shutil.which("gnuplot"):
        return False
    dat = os.path.join(b.scratch, "speedup.dat")
    lo = min([c["ratios"]["off_daemon"] for c in rows] +
             [c["ratios"].get("off_explicit", 1) for c in rows] + [1])
    with open(dat, "w") as f:
        for c in rows:
            lbl = f"{c['scenario']} {LABEL[c['workload']]}"
            f.write(f"{lbl}\t{c['ratios']['off_daemon']:.4f}\t"
                    f"{c['ratios'].get('off_explicit', float('nan')):.4f}\n")
    r = subprocess.run(["gnuplot", "-e", f"datafile='{dat}'; outfile='{out_png}'; rows={len(rows)}; "
                                   f"xmin={min(0.5, lo * 0.8):.3f}", gp],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        log(f"gnuplot failed: {r.stdout}")
        return False
    return True


def git_commit():
    r = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    dirty = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    return (r.stdout.strip() or "unknown") + ("+changes" if dirty else "")


def report(b, args, started):
    for c in b.cells.values():
        c["ratios"] = ratios(c)
    T = targets(b)
    meta = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"), "kernel": platform.release(),
        "cpus": os.cpu_count(), "commit": git_commit(), "quick": args.quick,
        "command": "make bench" + (" QUICK=1" if args.quick else ""),
        "timing": b.timing, "warnings": b.warnings, "daemon_settings": args.set or [],
        "other_diraheadd": {"start": b.other_daemons_at_start, "end": b.other_daemons_at_end},
        "daemon": {"cpu": b.cpu, "idle": b.idle, "peak_rss_kib": b.rss, "rss_end_kib": b.rss_now,
                   "stats": b.daemon_total, "bpf": b.bpf},
    }
    md = markdown(b, T, meta)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "latest.md"), "w") as f:
        f.write(md)
    data = {"meta": meta, "targets": T,
            "cells": [dict(c, workload_label=LABEL[c["workload"]]) for c in b.cells.values()],
            "fstatat": {"calls": b.fst["calls"], "files": 1000, **b.fstat_cells},
            "scenarios": b.scenarios}
    with open(os.path.join(args.out, "latest.json"), "w") as f:
        json.dump(data, f, indent=1, default=str)
        f.write("\n")
    png = chart(b, os.path.join(args.out, "latest.png"), os.path.join(TOP, "tests", "bench", "speedup.gp"))
    if os.path.abspath(args.out) != RESULTS and b.daemon and os.path.exists(b.daemon.logpath):
        # for investigations; the committed results do not carry it
        shutil.copy(b.daemon.logpath, os.path.join(args.out, "diraheadd.log"))
    print()
    print(md)
    print(f"written: {args.out}/latest.md, latest.json" + (", latest.png" if png else " (no chart)"))
    met = sum(t["met"] for t in T)
    print(f"targets: {met} of {len(T)} met; {b.timing['total_s'] / 60:.1f} min")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few scenarios, small, few runs (< 3 min)")
    ap.add_argument("--build", default=os.path.join(TOP, "build"), help="the build directory")
    ap.add_argument("--out", help="results directory (default: tests/bench/results, or "
                                  "BUILD/bench with --quick)")
    ap.add_argument("--only", help="only scenarios whose id matches this regular expression")
    ap.add_argument("--runs", type=int, help="runs per cell (default: per scenario, 3-5)")
    ap.add_argument("--idle-seconds", type=float, help="idle CPU window (default 10, quick 3)")
    ap.add_argument("--timeout", type=float, default=600, help="limit of one tool run, seconds")
    ap.add_argument("--tmpdir", default="/var/tmp", help="where the scratch directory goes")
    ap.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE",
                    help="a daemon setting other than the shipped default (experiments; the "
                         "results then do not describe the defaults)")
    args = ap.parse_args()
    if args.out is None:
        args.out = os.path.join(args.build, "bench") if args.quick else RESULTS
    if args.idle_seconds is None:
        args.idle_seconds = 3 if args.quick else 10
    if os.geteuid() != 0:
        print("bench: needs root (FUSE mounts, loop devices, BPF)", file=sys.stderr)
        return 2
    for exe in ("diraheadd", "diraheadctl", "slowfs", "slowfsctl", "tests/bench/fstatat-loop"):
        if not os.access(os.path.join(args.build, exe), os.X_OK):
            print(f"bench: {args.build}/{exe} missing: run make bench (or make all)", file=sys.stderr)
            return 2

    def on_signal(signum, frame):
        raise SystemExit(128 + signum)
    # Ctrl-C even when started from a shell that made background jobs ignore SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    started = datetime.datetime.now(datetime.timezone.utc)
    b = None
    try:
        b = Bench(args)
        b.run()
        report(b, args, started)
        return 0
    except KeyboardInterrupt:
        print("\nbench: interrupted, cleaning up", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"bench: {e}", file=sys.stderr)
        if b and b.daemon and os.path.exists(b.daemon.logpath):
            print("--- diraheadd log (tail)", file=sys.stderr)
            print("".join(open(b.daemon.logpath, errors="replace").readlines()[-20:]), file=sys.stderr)
        return 1
    finally:
        CLEAN.run()


if __name__ == "__main__":
    sys.exit(main())
