#!/usr/bin/env python3
"""bench/report.py: turn one benchmark run into JSON lines, tables and plots.

Usage: bench/report.py REPORT_DIR --accel NAME --git REV [--wall SECONDS]

REPORT_DIR/raw/ holds what the guest wrote (results.jsonl, env.json,
fio/*.json, guest.log).  This writes
  REPORT_DIR/results.jsonl  every measurement, one JSON object per line,
                            with kernel release, accelerator, git revision
                            and the parameters of the device it ran on
  REPORT_DIR/report.md      tables of ratios, targets, missing cells
  REPORT_DIR/plots/*.png    gnuplot plots (and their .dat/.gp sources)
Exit status: 0, or 1 if the raw results are unusable.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True	# no bench/__pycache__ from importing peer.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer as peerlib  # noqa: E402  (bench/peer.py: the peer's cells and verdicts)
import swiftreport  # noqa: E402  (bench/swiftreport.py: the Swift benchmark)

KiB, MiB = 1024, 1024 * 1024
# percentiles of the cdf_us arrays that alloclat and rawstore-bench print
CDF_PCT = [0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 100]


def pct_at(i, n):
    """Percentile of point i of an n-point cdf_us array."""
    return CDF_PCT[i] if n == len(CDF_PCT) else 100.0 * i / (n - 1)


def size_name(n):
    if not n:
        return "-"
    if n % MiB == 0:
        return "%d MiB" % (n // MiB)
    if n % KiB == 0 and n < MiB:
        return "%d KiB" % (n // KiB)
    if n >= 1024 * MiB:
        return "%.1f GiB" % (n / 1024 / MiB)
    if n >= MiB:
        return "%.1f MiB" % (n / MiB)
    return "%d B" % n


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def spread(vals):
    """(max - min) / median, in percent, over repetitions."""
    vals = [v for v in vals if v is not None]
    if len(vals) < 2:
        return None
    m = statistics.median(vals)
    return 100.0 * (max(vals) - min(vals)) / m if m else None


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if abs(v) >= 100:
        return "%.0f" % v
    return "%.*f" % (digits, v)


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt_ratio(r):
    return "-" if r is None else "%.2f×" % r


def load(raw):
    lines = []
    path = os.path.join(raw, "results.jsonl")
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as e:
                print("report: %s:%d: not JSON (%s): %s" % (path, n, e, line[:120]),
                      file=sys.stderr)
    return lines


def fio_result(raw, rec):
    """Flatten fio's JSON for one job into our fields."""
    with open(os.path.join(raw, rec["file"])) as f:
        j = json.load(f)
    job = j["jobs"][0]
    # the direction the job did (randread: "read"; the others write)
    w = job["read"] if job["read"].get("io_bytes") and not job["write"].get("io_bytes") \
        else job["write"]
    opts = job.get("job options", {})
    pct = w.get("clat_ns", {}).get("percentile", {})
    sync = job.get("sync", {}).get("lat_ns", {})
    spct = sync.get("percentile", {})

    def p(key):
        v = pct.get(key)
        if v is None:
            return None
        s = spct.get(key, 0) if spct else 0
        return (v + s) / 1e3

    bs = w["bw_bytes"] / w["iops"] if w.get("iops") else 0
    return {
        "ops_per_sec": w["iops"],
        "mb_per_sec": w["bw_bytes"] / 1e6,
        "p50_us": p("50.000000"),
        "p99_us": p("99.000000"),
        "p999_us": p("99.900000"),
        "size": int(round(bs)),
        "qd": int(opts.get("iodepth", j.get("global options", {}).get("iodepth", 1))),
        "cpu_us_per_op": ((job.get("usr_cpu", 0) + job.get("sys_cpu", 0)) / 100.0 *
                          job.get("job_runtime", 0) * 1e3 / max(1, w.get("total_ios", 1))),
        "fio_version": j.get("fio version"),
        "sync_p50_us": spct.get("50.000000", 0) / 1e3 if spct else None,
    }


def enrich(lines, raw, env, accel, git):
    out = []
    for rec in lines:
        rec = dict(rec)
        if rec.get("kind") == "fio":
            try:
                rec.update(fio_result(raw, rec))
                rec["status"] = "ok"
            except (OSError, KeyError, ValueError, IndexError) as e:
                rec["status"] = "missing"
                rec["why"] = "fio output unreadable: %s" % e
        rec.setdefault("status", "ok")
        rec["kernel"] = env.get("kernel")
        rec["accel"] = accel
        rec["git_rev"] = git
        if rec.get("disk") in env.get("disks", {}):
            rec["device"] = env["disks"][rec["disk"]]
        out.append(rec)
    return out


# --- cells ---------------------------------------------------------------

def obj_key(r):
    return (r["workload"], r.get("size", 0), r.get("qd", 1))


def cell_name(k):
    w, size, qd = k
    return "%s %s QD%d" % (w, size_name(size), qd)


WL_ORDER = {"create": 0, "overwrite": 1, "read": 2, "remove": 3, "reclaim": 4}


def sort_key(k):
    return (WL_ORDER.get(k[0], 9), k[1], k[2])


class Cell:
    def __init__(self):
        self.reps = []

    def add(self, r):
        self.reps.append(r)

    def m(self, field):
        return med([r.get(field) for r in self.reps])

    def sp(self, field):
        return spread([r.get(field) for r in self.reps])

    def cdf(self):
        """Median CDF over repetitions (pointwise)."""
        cdfs = [r["cdf_us"] for r in self.reps if r.get("cdf_us")]
        if not cdfs:
            return None
        return [statistics.median(c[i] for c in cdfs) for i in range(len(cdfs[0]))]


def backend_label(r):
    return "%s/%s" % (r["backend"], r["variant"])


# --- gnuplot ----------------------------------------------------------------

def gnuplot(plots, name, script, data):
    os.makedirs(plots, exist_ok=True)
    dat = os.path.join(plots, name + ".dat")
    gp = os.path.join(plots, name + ".gp")
    with open(dat, "w") as f:
        f.write(data)
    with open(gp, "w") as f:
        f.write("set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'\n")
        f.write("set output '%s.png'\n" % name)
        f.write(script.replace("DATA", "'%s.dat'" % name))
    r = subprocess.run(["gnuplot", name + ".gp"], cwd=plots, capture_output=True, text=True)
    if r.returncode:
        print("report: gnuplot %s failed: %s" % (name, r.stderr.strip()), file=sys.stderr)
        return None
    return "plots/%s.png" % name


def q(s):
    return '"%s"' % s.replace('"', "'")


# --- aging and sustained load -------------------------------------------------------

AGING_DEF = (
    "The *fragmentation score* is `1 - largest_free / free` from `rawstore_statfs()`: 0 when "
    "the free space is one extent, towards 1 when the largest free extent is a small part "
    "of it (the same score as the allocator micro-benchmark's `extset_frag_score()`). It "
    "is shown with the number of free extents and their mean size, which say how many "
    "pieces an allocation may need.")


def bytes_name(n):
    """Bytes for a table: MiB or KiB with a decimal where it matters."""
    if n is None:
        return "-"
    if n >= MiB:
        return "%.1f MiB" % (n / MiB)
    return "%.0f KiB" % (n / KiB)


def aging_section(recs, P, missing, plots):
    """Section 3a: fresh against aged store (rawstore-bench age:90)."""
    rs = [r for r in recs if r.get("section") == "aging"]
    if not rs:
        return
    fills, spaces, cells = {}, {}, {}
    for r in rs:
        b = backend_label(r)
        if r["status"] != "ok":
            cell = "all" if r.get("workload") == "(all)" else "%s %s" % (
                r.get("workload", ""), size_name(r.get("size", 0)))
            missing.append(("aging %s %s" % (b, cell), r.get("why", "")))
            continue
        if r.get("kind") == "aging":
            fills.setdefault(b, Cell()).add(r)
        elif r.get("kind") == "space":
            spaces.setdefault(b, {}).setdefault(r["when"], Cell()).add(r)
        elif r.get("kind") == "object" and r.get("phase") in ("fresh", "aged"):
            cells.setdefault(b, {}).setdefault(r["phase"], {}).setdefault(
                obj_key(r), Cell()).add(r)
    P("## 3a. Aging")
    P("")
    P("Each backend gets a store of a fixed size (`--store-size` at mkfs; for "
      "`prealloc-file` the store file's size), runs the object workloads on it fresh, is "
      "then filled to 90% of its data space by `age:90` and runs the same workloads again "
      "(`aged`). The fill writes objects of mixed sizes, log-uniform from 4 KiB to 4 MiB "
      "(ten octaves, as many objects in each; half of them end inside a 4 KiB block), up "
      "to 16 objects or 4 MiB per transaction, 4 transactions in flight, and after each "
      "create removes a random live object with a chance of 3 in 10, so later objects "
      "reuse the holes. Objects of 4 KiB or less are inline in RocksDB and take no device "
      "space. The workloads' own objects are removed after each cell, so every aged cell "
      "starts at 90% full.")
    P("")
    P(AGING_DEF)
    P("")
    if fills:
        P("| backend | store (data space) | objects created | removed | live | written | "
          "fill time | fill MB/s |")
        P("|---|---|---|---|---|---|---|---|")
        for b, c in sorted(fills.items()):
            fresh = spaces.get(b, {}).get("fresh")
            P("| %s | %s | %s | %s | %s | %s | %s s | %s |" % (
                b, size_name(fresh.m("data_size")) if fresh else "-",
                "%d" % c.m("objects_created"), "%d" % c.m("objects_removed"),
                "%d" % c.m("objects_live"), bytes_name(c.m("bytes_written")),
                fmt(c.m("seconds")), fmt(c.m("mb_per_sec"), 1)))
        P("")
    if spaces:
        P("| backend | when | used | free | free extents | mean free extent | largest free "
          "| fragmentation score |")
        P("|---|---|---|---|---|---|---|---|")
        whens = {"fresh": "before the fill", "aged": "after the fill",
                 "after": "after the aged workloads"}
        for b in sorted(spaces):
            for w in ("fresh", "aged", "after"):
                c = spaces[b].get(w)
                if not c:
                    continue
                sp = c.sp("frag_score")
                P("| %s | %s | %s%% | %s | %s | %s | %s | %.3f%s |" % (
                    b, whens[w], fmt(c.m("used_pct")), bytes_name(c.m("free")),
                    "%d" % c.m("free_extents"), bytes_name(c.m("mean_free_extent")),
                    bytes_name(c.m("largest_free")), c.m("frag_score"),
                    " (±%.0f%%)" % sp if sp is not None else ""))
        P("")
    if not cells:
        return
    P("### Fresh against aged, same store, same run")
    P("")
    P("| backend | cell | fresh ops/s | aged ops/s | aged / fresh | fresh p99 µs | "
      "aged p99 µs | p99 aged / fresh | extents per object fresh → aged |")
    P("|---|---|---|---|---|---|---|---|---|")
    data = "cell " + " ".join(q(b) for b in sorted(cells)) + "\n"
    rows = {}
    for b in sorted(cells):
        fr, ag = cells[b].get("fresh", {}), cells[b].get("aged", {})
        for k in sorted(set(fr) | set(ag), key=sort_key):
            f, a = fr.get(k), ag.get(k)
            rr = ratio(a.m("ops_per_sec"), f.m("ops_per_sec")) if f and a else None
            ext = "-"
            if f and a and f.m("extents_per_obj") is not None:
                ext = "%s → %s" % (fmt(f.m("extents_per_obj"), 2),
                                   fmt(a.m("extents_per_obj"), 2))
            P("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                b, cell_name(k), fmt(f.m("ops_per_sec")) if f else "-",
                fmt(a.m("ops_per_sec")) if a else "-", fmt_ratio(rr),
                fmt(f.m("p99_us")) if f else "-", fmt(a.m("p99_us")) if a else "-",
                fmt_ratio(ratio(a.m("p99_us"), f.m("p99_us"))) if f and a else "-", ext))
            rows.setdefault(k, {})[b] = rr
    P("")
    P("Ratios below 1.00× in ops/s (above 1.00× in p99) are what aging costs. Under TCG "
      "with one repetition a ratio within about ±30% of 1 is noise; the spread of the "
      "object cells in section 2 shows how much.")
    P("")
    bs = sorted(cells)
    if not any(v for row in rows.values() for v in row.values()):
        return
    for k in sorted(rows, key=sort_key):
        data += "%s %s\n" % (q(cell_name(k)), " ".join(
            "%.4f" % rows[k][b] if rows[k].get(b) else "NaN" for b in bs))
    png = gnuplot(plots, "aging-ratio", """
set title 'Aged store (90%% full, fragmented) against fresh: ops/s ratio (1 = no change)'
set style data histograms
set style histogram clustered gap 2
set style fill solid 0.8 border -1
set ylabel 'aged / fresh ops/s'
set yrange [0:*]
set xtics rotate by -30 scale 0 font ',9'
set key outside right top
set grid ytics
set bmargin 8
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot for [i=2:%d] DATA using i:xtic(1) title columnheader(i)
""" % (len(bs) + 1), data)
    if png:
        P("![aged against fresh](%s)" % png)
        P("")


def load_section(recs, P, missing, plots):
    """Section 3b: sustained load (rawstore-bench load:SECONDS). Returns its cells."""
    rs = [r for r in recs if r.get("section") == "load"]
    if not rs:
        return None
    cells = {}
    for r in rs:
        b = backend_label(r)
        if r["status"] != "ok":
            missing.append(("load %s all" % b, r.get("why", "")))
            cells.setdefault(b, None)
            continue
        if r.get("kind") == "load":
            if cells.get(b) is None:
                cells[b] = Cell()
            cells[b].add(r)
    P("## 3b. Sustained load")
    P("")
    P("`rawstore-bench load:SECONDS --threads N` on a fresh store: N client threads, each "
      "owning its own collection of 24 objects (every third one 64 KiB, the others 4 KiB), "
      "loop for a bounded time over: whole-object writes (30%), 4 KiB overwrites in place "
      "(15%), removes (10%), 4 KiB random reads (35%) and whole-object reads (10%); every "
      "write and remove is its own durable transaction submitted with `rawstore_submit()`, "
      "so N transactions are in flight; one more thread calls `rawstore_reclaim()` every "
      "0.5 s. Every read is compared with what its client wrote (a mismatch fails the "
      "cell). *ops/s* counts transactions and reads; *per second* is the spread of the "
      "one-second samples (min / median / max), so a stall shows as a low minimum.")
    P("")
    P("| backend | threads | seconds | ops/s | txns/s | reads/s | per second min / median "
      "/ max | txn p50 µs | txn p99 µs | txn p999 µs | read p50 µs | read p99 µs | "
      "flushes/txn | RocksDB syncs/txn | reclaims (punched) | RSS start → max | "
      "spread (ops/s) |")
    P("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for b, c in sorted(cells.items()):
        if c is None:
            continue
        sp = c.sp("ops_per_sec")
        P("| %s | %d | %s | **%s** | %s | %s | %s / %s / %s | %s | **%s** | %s | %s | %s | "
          "%s | %s | %s (%s) | %s → %s | %s |" % (
              b, c.reps[0]["threads"], fmt(c.m("seconds")), fmt(c.m("ops_per_sec")),
              fmt(c.m("txns_per_sec")), fmt(c.m("reads_per_sec")), fmt(c.m("per_sec_min")),
              fmt(c.m("per_sec_median")), fmt(c.m("per_sec_max")), fmt(c.m("p50_us")),
              fmt(c.m("p99_us")), fmt(c.m("p999_us")), fmt(c.m("read_p50_us")),
              fmt(c.m("read_p99_us")), fmt(c.m("flushes_per_txn"), 2),
              fmt(c.m("db_syncs_per_txn"), 2), fmt(c.m("reclaims")),
              size_name(int(c.m("bytes_punched"))) if c.m("bytes_punched") else "0",
              size_name(int(c.m("rss_start_kb")) * KiB), size_name(int(c.m("rss_max_kb")) * KiB),
              "-" if sp is None else "%.0f%%" % sp))
    P("")
    data = ""
    names = []
    for b, c in sorted(cells.items()):
        if c is None:
            continue
        for label, field in (("transactions", "cdf_us"), ("reads", "read_cdf_us")):
            cdfs = [r[field] for r in c.reps if r.get(field)]
            if not cdfs:
                continue
            cdf = [statistics.median(x[i] for x in cdfs) for i in range(len(cdfs[0]))]
            names.append("%s %s" % (b, label))
            data += "# %s %s\n" % (b, label)
            for i, v in enumerate(cdf):
                data += "%.3f %.1f\n" % (max(v, 1.0) / 1e3, pct_at(i, len(cdf)))
            data += "\n\n"
    if names:
        png = gnuplot(plots, "load-cdf", """
set title 'Sustained load: latency CDF of transactions and reads'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot %s
""" % ", ".join("DATA index %d using 1:2 with lines lw 2 title %s" % (i, q(n))
                for i, n in enumerate(names)), data)
        if png:
            P("![load latency CDF](%s)" % png)
            P("")
    data = ""
    names = []
    for b, c in sorted(cells.items()):
        if c is None:
            continue
        for r in c.reps:
            if not r.get("timeline"):
                continue
            names.append("%s rep %s" % (b, r.get("rep", 1)))
            data += "# %s\n" % names[-1]
            for i, v in enumerate(r["timeline"]):
                data += "%d %d\n" % (i + 1, v)
            data += "\n\n"
    if names:
        png = gnuplot(plots, "load-timeline", """
set title 'Sustained load: operations completed per second'
set xlabel 'second of the run'
set ylabel 'operations per second'
set yrange [0:*]
set key bottom right
set grid
plot %s
""" % ", ".join("DATA index %d using 1:2 with linespoints title %s" % (i, q(n))
                for i, n in enumerate(names)), data)
        if png:
            P("![load operations per second](%s)" % png)
            P("")
    return cells


# --- recovery: the replay of a full journal ring (issue 36) -----------------------

def recovery_section(recs, P, missing):
    """Section 3c: how long an open takes after a crash with a full ring."""
    rs = [r for r in recs if r.get("section") == "recovery"]
    if not rs:
        return
    cells = {}
    for r in rs:
        js = r.get("journal", "default")
        if r["status"] != "ok":
            missing.append(("recovery %s" % js, r.get("why", "")))
            continue
        if r.get("workload") == "recovery":
            cells.setdefault(js, Cell()).add(r)
    P("## 3c. Recovery: replay of a full journal ring")
    P("")
    P("`rawstore-bench recovery:4k` on the `bwz` disk: a child process creates 4 KiB "
      "objects until the device journal's ring holds all it can before its next trim "
      "(a trim comes once the ring is half full, so this is the most a replay can ever "
      "read), then exits without closing the store. The reopen that replays every "
      "record since RocksDB's trim point is timed, and a clean open of the same store "
      "after it (the part of an open that is not replay). Both opens are timed in the "
      "same boot; under TCG the replay's CPU work (record checks, RocksDB writes) is "
      "inflated like everything else.")
    P("")
    if not cells:
        P("No recovery cell ran (see the missing cells).")
        P("")
        return
    P("| journal | ring | creates in the ring | bytes replayed | records past the trim point "
      "| open after the crash, ms | clean open, ms | replay rate, MB/s |")
    P("|---|---|---|---|---|---|---|---|")
    for js, c in sorted(cells.items(), key=lambda kv: kv[1].m("journal_size") or 0):
        replay_ms = (c.m("open_ms") or 0) - (c.m("clean_open_ms") or 0)
        rate = c.m("replayed_bytes") / 1e3 / replay_ms if replay_ms > 0 else None
        P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "default (1/64 of the device)" if js == "default" else "`--journal-size %s`" % js,
            bytes_name(c.m("journal_size")), fmt(c.m("objects"), 0),
            bytes_name(c.m("replayed_bytes")), fmt(c.m("records_after_j"), 0),
            fmt_stat(stat_of(c, "open_ms"), 1), fmt_stat(stat_of(c, "clean_open_ms"), 1),
            fmt(rate, 1)))
    P("")


def stat_of(c, field):
    vals = [r.get(field) for r in c.reps if r.get(field) is not None]
    return peerlib.stats(vals) if vals else None


# --- metadata journal: device against rocksdb (issue 23) ---------------------------

BASE, JR = "blockdev/wz", "blockdev/wz-rocksdb"
FILES = ("files/ext4", "files/xfs")


def journals(bcells):
    """The journal names a backend's results report ("device", "rocksdb",
    "rocksdb-recycle"), sorted; empty for the files backend."""
    return sorted({r["journal"] for c in (bcells or {}).values() for r in c.reps
                   if r.get("journal")})


def journal_label(b, cells):
    """A backend's name with the journal its results ran with, if any."""
    j = journals(cells.get(b))
    return "%s (journal %s)" % (b, ", ".join(j)) if j else b


def files_verdicts(cells, keys):
    """Issue 23's guest target: blockdev (device journal) >= 1.0x files/ext4
    and files/xfs on every create and overwrite cell at QD16. One row per
    file system for the targets table: (met, what, detail)."""
    out = []
    for other in FILES:
        what = ("`blockdev` ≥ 1.0× `%s` on every create and overwrite cell at QD16 "
                "(issue 23)" % other)
        want = [k for k in keys if k[0] in ("create", "overwrite") and k[2] == 16 and
                (k in cells.get(BASE, {}) or k in cells.get(other, {}))]
        met, miss, unmeasured = [], [], []
        for k in want:
            bc, oc = cells.get(BASE, {}).get(k), cells.get(other, {}).get(k)
            rr = ratio(bc.m("ops_per_sec"), oc.m("ops_per_sec")) if bc and oc else None
            if rr is None:
                unmeasured.append(cell_name(k))
            elif rr >= 1.0:
                met.append(cell_name(k))
            else:
                miss.append("%s (%s)" % (cell_name(k), fmt_ratio(rr)))
        if not met and not miss:
            out.append((None, what, "not measured%s" % (
                ": " + ", ".join(unmeasured) if unmeasured else "")))
            continue
        detail = "%s: met on %d of %d cells" % (journal_label(BASE, cells), len(met),
                                                 len(met) + len(miss))
        if miss:
            detail += "; misses: " + ", ".join(miss)
        if unmeasured:
            detail += "; not measured: " + ", ".join(unmeasured)
        # a miss is not met; no miss but cells not measured: not checked
        out.append((False if miss else None if unmeasured else True, what, detail))
    return out


def journal_section(cells, keys, P):
    """Section 2a: the two metadata journal modes on the same disk, and
    blockdev against files at the depths of issue 23's target. Returns the
    target rows."""
    if not cells.get(BASE) and not cells.get(JR):
        return []
    ck = [k for k in keys if k[0] in ("create", "overwrite") and
          (k in cells.get(BASE, {}) or k in cells.get(JR, {}))]
    jd, jr = ", ".join(journals(cells.get(BASE))) or "?", \
        ", ".join(journals(cells.get(JR))) or "?"
    P("## 2a. Metadata journal: device vs rocksdb")
    P("")
    P("`%s` and `%s` run the same creates and overwrites on the same virtio disk, one "
      "after the other in the same boot, with RocksDB on the same ext4 `meta` disk; "
      "they differ only in the journal chosen at mkfs. `device` (the default): the "
      "store's metadata journal is a ring on the data device, one write and one flush "
      "per commit group, RocksDB's WAL unsynced. `rocksdb`: RocksDB's own WAL, "
      "`fdatasync`ed on the metadata file system for every commit group. *Round "
      "trips/txn* are the device round trips per transaction that rawstore-bench "
      "counts: data-device flushes (the device journal's included), plus, with "
      "RocksDB's WAL, its syncs (each one flushes the metadata disk). *CPU µs/op* is "
      "the process's user + system time over the timed phase divided by the "
      "operations (`getrusage`)." % (BASE, JR))
    P("")
    P("| cell | device ops/s | rocksdb ops/s | device / rocksdb | round trips/txn device | "
      "round trips/txn rocksdb | CPU µs/op device | CPU µs/op rocksdb |")
    P("|---|---|---|---|---|---|---|---|")
    for k in ck:
        d, r = cells.get(BASE, {}).get(k), cells.get(JR, {}).get(k)
        P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            cell_name(k), fmt(d.m("ops_per_sec")) if d else "-",
            fmt(r.m("ops_per_sec")) if r else "-",
            fmt_ratio(ratio(d.m("ops_per_sec"), r.m("ops_per_sec"))) if d and r else "-",
            fmt(d.m("round_trips_per_txn"), 2) if d else "-",
            fmt(r.m("round_trips_per_txn"), 2) if r else "-",
            fmt(d.m("cpu_us_per_op")) if d else "-", fmt(r.m("cpu_us_per_op")) if r else "-"))
    P("")
    P("Journals as the results name them: `%s` %s, `%s` %s. A ratio above 1.00× is "
      "what the device journal gains over RocksDB's WAL on that cell." % (BASE, jd, JR, jr))
    P("")
    fk = [k for k in ck if k[2] in (1, 16)]
    if not fk or not any(cells.get(f) for f in FILES):
        return files_verdicts(cells, keys)
    P("### blockdev against files, creates and overwrites at QD1 and QD16")
    P("")
    P("`blockdev` is `%s` (journal %s). Issue 23's guest target: `blockdev` ≥ 1.0× "
      "`files/ext4` and `files/xfs` on every create and overwrite cell at QD16; the "
      "QD1 rows are for reference, with the CPU time per operation of each." % (BASE, jd))
    P("")
    P("| cell | blockdev ops/s | files/ext4 ops/s | blockdev / files/ext4 | files/xfs ops/s | "
      "blockdev / files/xfs | CPU µs/op blockdev / ext4 / xfs |")
    P("|---|---|---|---|---|---|---|")
    for k in fk:
        b = cells.get(BASE, {}).get(k)
        e, x = (cells.get(f, {}).get(k) for f in FILES)
        bo = b.m("ops_per_sec") if b else None
        cpu = "-"
        if k[2] == 1:
            cpu = " / ".join(fmt(c.m("cpu_us_per_op")) if c else "-" for c in (b, e, x))
        P("| %s | %s | %s | %s | %s | %s | %s |" % (
            cell_name(k), fmt(bo), fmt(e.m("ops_per_sec")) if e else "-",
            fmt_ratio(ratio(bo, e.m("ops_per_sec"))) if e and bo else "-",
            fmt(x.m("ops_per_sec")) if x else "-",
            fmt_ratio(ratio(bo, x.m("ops_per_sec"))) if x and bo else "-", cpu))
    P("")
    rows = files_verdicts(cells, keys)
    for ok, what, detail in rows:
        P("- %s: %s — %s" % ({True: "**met**", False: "**not met**",
                               None: "not checked"}[ok], what, detail))
    P("")
    return rows


def load_targets(cells):
    """Rows for the targets table from the sustained load (issue 13 item 7)."""
    what = ("Sustained load (issue 13): no lost update (every read returns what its client "
            "wrote) and no stall (every one-second sample completes operations)")
    if not cells or all(c is None for c in cells.values()):
        return [(None, what, "not measured (see missing cells)")]
    out = []
    for b, c in sorted(cells.items()):
        if c is None:
            out.append((False, what + " — `%s`" % b, "the cell failed (see missing cells)"))
            continue
        mism = sum(r.get("mismatches", 0) for r in c.reps)
        low = min(r.get("per_sec_min", 0) for r in c.reps)
        out.append((mism == 0 and low > 0, what + " — `%s`" % b,
                    "%d mismatches in %s verified; slowest second %d ops, %d second(s) "
                    "with none; %s ops/s, txn p99 %s µs, longest txn %s ms" % (
                        mism, bytes_name(sum(r.get("bytes_verified", 0) for r in c.reps)),
                        low, sum(r.get("timeline", []).count(0) for r in c.reps),
                        fmt(c.m("ops_per_sec")), fmt(c.m("p99_us")),
                        fmt(max(r["cdf_us"][-1] for r in c.reps) / 1e3))))
    return out


# --- the report -----------------------------------------------------------------

# --- power cuts (issue 13 item 1) ---------------------------------------------

def powercut_section(recs, P, missing, mode=None, host_errors=()):
    """The power-cut campaign: the JSON line v_powercut.sh prints at its end
    (bench-guest.sh's powercut step, full mode only). A full run without it
    stopped before the campaign ended: say so (and why, when vm/run gave up
    on host I/O errors) rather than "not run"."""
    runs = [r for r in recs if r.get("kind") == "powercut"]
    P("## Power cuts")
    P("")
    if not runs or runs[-1].get("status") == "missing":
        if runs:
            why = runs[-1].get("why", "not run")
        elif mode == "full" and host_errors:
            why = ("did not finish: the guest stopped during the campaign after %d host "
                   "I/O errors on its disk files (the last: %s; raw/console.log)"
                   % (len(host_errors), host_errors[-1]))
        elif mode == "full":
            why = "did not finish: the guest run stopped before the campaign ended " \
                "(raw/console.log)"
        else:
            why = "not run: the campaign runs with `bench/run --full`"
        P("Not in this report (%s)." % why)
        P("")
        missing.append(("power-cuts campaign", why))
        return
    r = runs[-1]
    split = "split_cut_points" in r
    if split:
        P("`tests/vm/v_powercut.sh` in %s mode on the `fs` disk. The serial campaign logs "
          "the data device and the ext4 holding RocksDB with two dm-log-writes devices, "
          "each its own flush domain, and cuts each log at its own point consistent with "
          "what that device acknowledged. Cuts fall at flush points, after FUA writes and "
          "acknowledgement marks, at random entries, right after each journal trim, right "
          "after a recovery that dropped a record, and across two consecutive crashes. At "
          "each cut the log prefix, random subsets of the writes in flight in random order "
          "(reorder), torn multi-sector writes (torn), and a record kept without all of its "
          "data (nodata, halfdata) are replayed; every variant must then hold every "
          "acknowledged transaction byte for byte, pass a deep fsck, and do it again after "
          "more transactions and a second crash (reopen-twice)." % r.get("mode"))
    else:
        P("`tests/vm/v_powercut.sh` in %s mode on the `fs` disk: a dm-log-writes log of the "
          "data device and of the ext4 holding RocksDB, cut at flush points, after FUA "
          "writes and acknowledgement marks and at random entries; at each cut the log "
          "prefix, random subsets of the un-flushed writes in random order (reorder) and "
          "torn multi-sector writes (torn) are replayed, then the store must hold every "
          "acknowledged transaction byte for byte and pass a deep fsck." % r.get("mode"))
    P("")
    P("| cut points | variants checked | acknowledged transactions verified, summed over "
      "the variants | bytes verified | failures | seconds |")
    P("|---|---|---|---|---|---|")
    P("| %d | %d | %d | %d | **%d** | %d |" % (
        r.get("cut_points", 0), r.get("variants", 0), r.get("txns_checked", 0),
        r.get("bytes_verified", 0), r.get("failures", 0), r.get("seconds", 0)))
    P("")
    if split:
        P("Cut points per target: split flush domains (each log cut at its own point) %d, "
          "right after a trim %d, after a recovery that dropped a record %d, double crash "
          "%d; reopen-twice checks passed: %d." % (
              r.get("split_cut_points", 0), r.get("trim_cut_points", 0),
              r.get("after_drop_cut_points", 0), r.get("double_crash_cut_points", 0),
              r.get("reopen_twice", 0)))
        P("")
    if r.get("failures"):
        P("**Failures: the cut points, variants and seeds are in raw/guest.log.**")
        P("")
    conc = [c for c in recs if c.get("kind") == "powercut_concurrent"]
    if not conc:
        P("The concurrent campaign is not in this report (its summary line is missing).")
        P("")
        missing.append(("power-cuts concurrent campaign", "no summary line"))
        return
    c = conc[-1]
    P("The concurrent campaign (%s; several submitters with "
      "asynchronous transactions in flight, per configuration of space policies, "
      "journal mode and device; cuts at journal wrap-around and crashes during "
      "recovery): %s." % (
          "one dm-log-writes log under both halves, one flush domain, the same checks "
          "without reopen-twice" if "split_cut_points" in r else "same log and checks",
          ", ".join(
          re.sub(r"^(.*):unchecked$", r"`\1` (**stopped before its cuts: a failure**)",
                 re.sub(r"^(.*):(\d+)s$", r"`\1` (\2 s)", x))
          for x in c.get("per_configuration", "").split()) or "configurations not named"))
    P("")
    P("| configurations | cut points (at wrap-around) | variants (in cuts of recoveries) "
      "| transactions submitted | acknowledged transactions verified, summed over the "
      "variants | bytes verified | failures | seconds |")
    P("|---|---|---|---|---|---|---|---|")
    P("| %d | %d (%d) | %d (%d in %d) | %d | %d | %d | **%d** | %d |" % (
        c.get("configurations", 0), c.get("cut_points", 0), c.get("wrap_cut_points", 0),
        c.get("variants", 0), c.get("recovery_variants", 0),
        c.get("recovery_cut_points", 0), c.get("txns_submitted", 0),
        c.get("txns_checked", 0), c.get("bytes_verified", 0), c.get("failures", 0),
        c.get("seconds", 0)))
    P("")
    if c.get("failures"):
        P("**Failures: the configurations, cut points and seeds are in raw/guest.log.**")
        P("")


PROFILE_NAME = {"ssd": "SSD profile (devices non-rotational)",
                "hdd": "HDD profile (devices rotational)"}
SHAPE_NAME = {"4k": "4 KiB", "64k": "64 KiB", "4m": "4 MiB"}


def shape_order(shape):
    return list(SHAPE_NAME).index(shape) if shape in SHAPE_NAME else len(SHAPE_NAME)


def fmt_stat(st, digits=0):
    """A median, with its spread when there are repetitions."""
    if not st:
        return "-"
    if st["n"] < 2:
        return fmt(st["median"], digits)
    return "%s (±%.0f%%)" % (fmt(st["median"], digits), 100 * st["spread"])


def fmt_ratio_range(st):
    if not st:
        return "-"
    if st["n"] < 2:
        return fmt_ratio(st["median"])
    return "%s (%.2f–%.2f×)" % (fmt_ratio(st["median"]), st["min"], st["max"])


def peer_section(peer, P, missing, note=None):
    """Section 4: creates per shape, depth and device profile, both stores,
    medians and spread, the memstore OSD beside them; the fio comparisons.
    @note: said first (a peer measured by a run of its own).  Returns the
    create cells (bench/peer.py)."""
    P("## 4. BlueStore (peer)")
    P("")
    if note and peer:
        P(note)
        P("")
    if not peer:
        P("Not run in this report: the BlueStore comparison runs on the host with "
          "`bench/run --peer bluestore` (it installs Ceph).")
        P("")
        missing.append(("BlueStore comparison (all shapes)",
                        "not run: needs `bench/run --peer bluestore`"))
        return {}
    cells = peerlib.cells(peer)
    env = [p for p in peer if p.get("kind") == "peer_env"]
    stores = [c for k, c in cells.items() if k[0] != "memstore"]
    reps = max([c[s]["n"] for c in stores for s in ("bluestore", "rawstore") if s in c] or [0])
    secs = min([c[s + "_seconds"] for c in stores for s in ("bluestore", "rawstore")
                if s + "_seconds" in c] or [0])
    P("On the host (kernel `%s`, no emulation), by `bench/peer-bluestore` (the method: "
      "`docs/benchmark.md`). **Creates of new objects**, one object per write: "
      "BlueStore through `rados bench SECONDS write -b SIZE -t QD` against one OSD and a "
      "pool of size 1 (what Ceph users run); rawstore through `rawstore-bench "
      "create:SIZE,qd=QD --seconds SECONDS`, each create its own durable transaction "
      "written by `rawstore_txn_write`, at least as many objects as BlueStore made in the "
      "same repetition. Every cell was timed for at least %.1f s; %d repetition(s); "
      "figures are medians ± the spread ((max - min) / median); the ratio is rawstore / "
      "BlueStore per repetition: its median and its range. 4 MiB cells are in MB/s, the "
      "others in objects/s." % (os.uname().release, secs, reps))
    P("")
    # how the devices' backing files were made: peer_env says (runs before
    # it did had sparse files)
    written = [e for e in env if e.get("store") in ("bluestore", "rawstore")]
    if written and all(e.get("backing") == "written" for e in written):
        P("Where each store keeps what (every device is a `--direct-io=on` loop device "
          "over a file on the same host file system, written in full beforehand and "
          "taking no discard, so neither store pays the host file system's first-touch "
          "allocation):")
    else:
        P("Where each store keeps what (every device is a `--direct-io=on` loop device over "
          "a sparse file on the same host file system: BlueStore and rawstore both write "
          "into holes, so both pay the host file system's first-touch allocation):")
    P("")
    P("| store | object data | metadata (RocksDB) | what the store saw |")
    P("|---|---|---|---|")
    for e in env:
        if e.get("store") == "bluestore":
            P("| BlueStore (%s) | its loop device | BlueFS on the same loop device (single "
              "shared device: %s) | %s profile: OSD rotational %s, bdev rotational %s, "
              "min_alloc_size %s |" % (
                  str(e.get("ceph_version", "?")).split(" (")[0],
                  e.get("bluefs_single_shared_device", "?"), e["profile"],
                  e.get("rotational", "?"), e.get("bluestore_bdev_rotational", "?"),
                  e.get("bluestore_min_alloc_size", "?")))
    for e in env:
        if e.get("store") == "rawstore":
            P("| rawstore | its loop device | ext4 on a twin loop device of the same "
              "profile | %s profile: rotational %s, deferred_new_max %s, deferred_max %s, "
              "crc32c %s |" % (e["profile"], e.get("rotational", "?"),
                               e.get("deferred_new_max", "?"), e.get("deferred_max", "?"),
                               e.get("crc32c", "?")))
    for e in env:
        if e.get("store") == "memstore":
            P("| memstore OSD | RAM | RAM | no device: the messenger, PG and op queue "
              "alone (OSD rotational %s: its op-queue settings) |" % e.get("rotational", "?"))
    P("")
    backend_table(peer, P)
    P("**What a Ceph user sees**: the same creates through the whole OSD (`rados bench`: "
      "client, messenger, placement group and op queue in front of BlueStore; rawstore, a "
      "library, has no front end, so these ratios mostly measure Ceph's).")
    P("")
    for prof in sorted({k[0] for k in cells if k[0] != "memstore"}):
        P("### %s, through the OSD" % PROFILE_NAME.get(prof, prof))
        P("")
        P("| shape | QD | BlueStore | rawstore | rawstore / BlueStore | "
          "memstore OSD (front end, no disk), where it bounds BlueStore | "
          "objects (BlueStore, rawstore) | verdict |")
        P("|---|---|---|---|---|---|---|---|")
        for k in sorted((k for k in cells if k[0] == prof),
                        key=lambda k: (shape_order(k[1]), k[2])):
            c = cells[k]
            mem = memstore_bound(cells, k)
            below = mem is None and cells.get(("memstore", k[1], k[2]), {}).get("memstore")
            dig = 0 if c["field"] == "ops_per_sec" else 1
            v = peerlib.verdict(c)
            P("| %s %s | %d | %s | %s | %s | %s | %s, %s | %s |" % (
                SHAPE_NAME.get(k[1], k[1]),
                "MB/s" if c["field"] == "mb_per_sec" else "objects/s", k[2],
                fmt_stat(c.get("bluestore"), dig), fmt_stat(c.get("rawstore"), dig),
                fmt_ratio_range(c.get("ratio")),
                "below BlueStore: no bound" if below else fmt_stat(mem, dig),
                fmt(c.get("bluestore_count"), 0), fmt(c.get("rawstore_count"), 0),
                "-" if v is None else "%s (≥ %.1f×)" % ("met" if v else "not met",
                                                        c["target"])))
        P("")
    P("A verdict is *met* only when the median ratio clears the target and so does the "
      "lowest repetition's (the spread does not cross the threshold). The memstore column "
      "is the same `rados bench` against an OSD whose store keeps everything in RAM: it "
      "measures the OSD's front end (client, messenger, placement group, op queue) with no "
      "disk. Where it is at or above BlueStore's figure it is the ceiling that front end "
      "leaves BlueStore at that shape and depth, and it is shown; where it is below "
      "BlueStore's (\"below BlueStore: no bound\": memstore's own costs held it below "
      "what BlueStore's whole OSD made) it bounds nothing and is left out. rawstore pays "
      "none of the front end's cost; it is stated here, not subtracted. memstore cells "
      "stop at 2 GiB of objects (RAM) and may be shorter than the others.")
    P("")
    other = {(p["system"], p["shape"], str(p.get("in_flight", 0)), p.get("nocopy")): p
             for p in peer if p.get("kind") == "peer"}
    if other:
        P("Against fio on the host (single runs; rawstore on one loop device with its "
          "RocksDB on ext4 on a twin, fio on a third; each loop over a file written in "
          "full beforehand, with discard off, so neither side pays first-touch "
          "allocation): 1 MiB creates, each a durable "
          "transaction from the caller's buffer, against fio's sequential writes of as "
          "many bytes (`1m-fdatasync`: fio with a flush after "
          "every write, for reference); 4 KiB random reads from 16 threads over 64 objects "
          "of 4 MiB against fio's random reads over the same 256 MiB.")
        P("")
        P("| system | shape | objects | in flight | objects/s | MB/s |")
        P("|---|---|---|---|---|---|")
        for (sysname, shape, inf, _), p in sorted(other.items(),
                                                  key=lambda x: (x[0][1], x[0][0], x[0][2])):
            P("| %s | %s | %s | %s | %s | %s |" % (sysname, shape, p.get("count", "-"), inf,
                                                  fmt(p["ops_per_sec"]),
                                                  fmt(p["mb_per_sec"], 2)))
        P("")
    if any(p.get("kind") == "peer_summary" for p in peer):
        P("| comparison | rawstore | fio | rawstore / fio |")
        P("|---|---|---|---|")
        for p in peer:
            if p.get("kind") == "peer_summary":
                P("| %s | %s | %s | %s |" % (p["shape"], fmt(p.get("rawstore")),
                                             fmt(p.get("fio")),
                                             fmt_ratio(ratio(p.get("rawstore"), p.get("fio")))))
        P("")
    return cells


def backend_table(peer, P):
    """Backend to backend: rawstore at each depth against BlueStore's
    ObjectStore alone (osd bench), per profile and shape, with verdicts."""
    bc = peerlib.backend_cells(peer)
    if not bc:
        P("**Backend to backend**: not measured in this run (no `peer_backend` lines: "
          "an older `bench/peer-bluestore`).")
        P("")
        return
    reps = max(c[s]["n"] for c in bc.values() for s in ("bluestore", "rawstore") if s in c)
    secs = min(c[s + "_seconds"] for c in bc.values() for s in ("bluestore", "rawstore")
               if s + "_seconds" in c)
    P("**Backend to backend** (the comparison that decides \"faster than BlueStore\": "
      "both are object stores under a server): BlueStore's ObjectStore alone through "
      "`ceph tell osd.0 bench TOTAL SIZE` (every block a new object, all queued at once on "
      "one sequencer, BlueStore's throttles bounding what is in flight; no messenger, no "
      "PG), against rawstore's creates of the same object count at each depth, from the "
      "caller's buffer (`--nocopy`), each its own durable transaction. Every cell at least "
      "%.1f s; %d repetition(s); medians ± spread; the ratio per repetition." % (secs, reps))
    P("")
    P("| profile | shape | BlueStore ObjectStore (all queued) | rawstore QD | rawstore | "
      "rawstore / BlueStore | objects | verdict |")
    P("|---|---|---|---|---|---|---|---|")
    for k in sorted(bc, key=lambda k: (k[0] != "ssd", k[0], shape_order(k[1]), k[2])):
        c = bc[k]
        dig = 0 if c["field"] == "ops_per_sec" else 1
        v = peerlib.verdict(c)
        P("| %s | %s %s | %s | %d | %s | %s | %s | %s |" % (
            k[0].upper(), SHAPE_NAME.get(k[1], k[1]),
            "MB/s" if c["field"] == "mb_per_sec" else "objects/s",
            fmt_stat(c.get("bluestore"), dig), k[2], fmt_stat(c.get("rawstore"), dig),
            fmt_ratio_range(c.get("ratio")), fmt(c.get("rawstore_count"), 0),
            "-" if v is None else "%s (≥ %.1f×)" % ("met" if v else "not met", c["target"])))
    P("")
    inflight_table(peer, P)


def inflight_table(peer, P):
    """BlueStore's in-flight bound in each osd bench, from its perf counters
    (bench/peer.py throttle()), per profile and shape: medians over the
    repetitions."""
    th = {}
    for p in peer:
        if p.get("kind") == "peer_backend" and p.get("system") == "bluestore" \
                and p.get("throttle"):
            th.setdefault((p["profile"], p["shape"]), []).append(p["throttle"])
    if not th:
        P("BlueStore's in-flight bound: not read in this run (its `peer_backend` lines "
          "carry no `perf dump` of the OSD: an older `bench/peer-bluestore`).")
        P("")
        return
    P("BlueStore's in-flight bound in those benches, read from the OSD's perf counters "
      "(`perf dump` before and after each osd bench): every transaction takes its bytes "
      "plus `bluestore_throttle_cost_per_io` from `throttle-bluestore_throttle_bytes` "
      "until it commits, so the throttle's max over the bytes per transaction is how many "
      "transactions it lets be in flight; waits say the bench reached that bound. "
      "Medians over the repetitions. rawstore's depths above are to be read against it.")
    P("")
    P("| profile | shape | throttle max | bytes per transaction | in-flight bound "
      "(transactions) | waits |")
    P("|---|---|---|---|---|---|")
    for k in sorted(th, key=lambda k: (k[0] != "ssd", k[0], shape_order(k[1]))):
        t = th[k]
        med = lambda f: peerlib.median([x[f] for x in t])
        P("| %s | %s | %s | %s | %s | %s |" % (
            k[0].upper(), SHAPE_NAME.get(k[1], k[1]), fmt(med("throttle_max_bytes"), 0),
            fmt(med("throttle_bytes_per_txc"), 0), fmt(med("inflight_bound"), 0),
            fmt(med("throttle_waits"), 0)))
    P("")


def thin_verdict(t):
    """Did removing and reclaiming give dm-thin pool blocks back?  Only a
    drop from the blocks after the creates to those after reclaim shows it;
    a run that did not read the blocks after the creates (older
    rawstore-bench), or whose creates took none, shows nothing."""
    before, created = t.get("used_blocks_before_creates"), t.get("used_blocks_after_creates")
    after = t.get("used_blocks_after_reclaim")
    if t.get("reclaim") != "ok":
        return "**failed** (%s)" % t.get("reclaim")
    if created is None or created < 0 or before is None or before < 0 or after is None \
            or after < 0:
        return "not shown: blocks after the creates not measured"
    if created <= before:
        return "not shown: the creates took no pool blocks"
    if after < created:
        return "ok: %d of %d blocks back" % (created - after, created - before)
    return "**no drop**"


def memstore_bound(cells, k):
    """The memstore OSD's figure at the shape and depth of cell @k when it
    bounds BlueStore's (memstore >= BlueStore: the OSD front end alone, no
    disk, allows at least what BlueStore made), else None: a front end
    slower than BlueStore's whole OSD is no ceiling for it."""
    mem = cells.get(("memstore", k[1], k[2]), {}).get("memstore")
    bs = cells.get(k, {}).get("bluestore")
    if not mem or not bs or mem.get("median") is None or bs.get("median") is None:
        return None
    return mem if mem["median"] >= bs["median"] else None


def peer_targets(peer, cells):
    """One target row per create cell that has a target (every shape, depth
    and profile: no best-of), then the fio comparisons."""
    if not peer:
        return [(None, "Against BlueStore: ≥ 1.2× objects/s for 4 KiB and 64 KiB creates, "
                 "≥ 1.0× bandwidth for 4 MiB, at every depth and profile",
                 "not measured: `--peer bluestore` not run")]
    out = []
    bc = peerlib.backend_cells(peer)
    for k in sorted((k for k in bc if bc[k].get("target") is not None),
                    key=lambda k: (k[0] != "ssd", shape_order(k[1]), k[2])):
        c = bc[k]
        r = c.get("ratio")
        unit = "MB/s" if c["field"] == "mb_per_sec" else "objects/s"
        detail = "not measured" if not r else "%s, %s (ObjectStore %s, rawstore %s %s)" % (
            fmt_ratio(r["median"]),
            "%d repetitions %.2f–%.2f×" % (r["n"], r["min"], r["max"]) if r["n"] > 1
            else "1 repetition", fmt(c["bluestore"]["median"], 0),
            fmt(c["rawstore"]["median"], 0), unit)
        out.append((peerlib.verdict(c), "Against BlueStore's ObjectStore, backend to backend "
                    "(host, %s profile), %s creates, rawstore at QD%d, %s: ≥ %.1f×" % (
                        k[0].upper(), SHAPE_NAME.get(k[1], k[1]), k[2], unit, c["target"]),
                    detail))
    for k in sorted((k for k in cells if k[0] != "memstore" and
                     cells[k].get("target") is not None),
                    key=lambda k: (k[0] != "ssd", shape_order(k[1]), k[2])):
        c = cells[k]
        unit = "MB/s" if c["field"] == "mb_per_sec" else "objects/s"
        r = c.get("ratio")
        mem = memstore_bound(cells, k)
        detail = "not measured" if not r else "%s, %s (BlueStore %s, rawstore %s %s%s)" % (
            fmt_ratio(r["median"]),
            "%d repetitions %.2f–%.2f×" % (r["n"], r["min"], r["max"]) if r["n"] > 1
            else "1 repetition",
            fmt(c["bluestore"]["median"], 0), fmt(c["rawstore"]["median"], 0), unit,
            "; memstore OSD %s" % fmt(mem["median"], 0) if mem else "")
        out.append((peerlib.verdict(c), "Against BlueStore (host, %s profile), %s creates "
                    "at QD%d, %s: ≥ %.1f×" % (k[0].upper(), SHAPE_NAME.get(k[1], k[1]), k[2],
                                              unit, c["target"]), detail))
    for p in peer:
        if p.get("kind") == "peer_summary" and p.get("target"):
            vs = p.get("versus", "bluestore")
            rr = ratio(p.get("rawstore"), p.get(vs))
            out.append((rr is not None and rr >= p["target"],
                        "%s (host), %s: ≥ %.1f×" % (
                            "Against fio" if vs == "fio" else "Against BlueStore",
                            p["shape"], p["target"]), fmt_ratio(rr)))
    return out


def host_io_errors(raw):
    """vm/run's lines for host I/O errors on the disk files (raw/console.log)."""
    try:
        with open(os.path.join(raw, "console.log"), errors="replace") as f:
            return [m.group(1) for m in (re.match(r"vm/run: (host I/O error \d+ on .*)", x)
                                         for x in f) if m]
    except OSError:
        return []


def host_lines(path, git):
    """The JSON lines of a host-side run (the BlueStore peer, the Swift
    benchmark), marked as measured on the host at @git; [] if none."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    for r in lines:
        r.setdefault("accel", "host")
        r.setdefault("kernel", os.uname().release)
        r["git_rev"] = git
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--accel", default="tcg")
    ap.add_argument("--git", default="unknown")
    ap.add_argument("--wall", type=float)
    ap.add_argument("--peer", help="JSON lines of the host-side BlueStore comparison")
    ap.add_argument("--swift", help="JSON lines of the Swift benchmark (swiftload.py)")
    ap.add_argument("--swift-git", help="the revision the Swift lines were measured "
                    "at, when they come from a run of their own")
    ap.add_argument("--peer-git", help="the revision the BlueStore peer's lines were "
                    "measured at, when they come from a run of their own")
    a = ap.parse_args()
    raw = os.path.join(a.dir, "raw")
    plots = os.path.join(a.dir, "plots")
    try:
        with open(os.path.join(raw, "env.json")) as f:
            env = json.load(f)
        lines = load(raw)
    except (OSError, ValueError) as e:
        print("report: no usable raw results in %s: %s" % (raw, e), file=sys.stderr)
        return 1
    recs = enrich(lines, raw, env, a.accel, a.git)
    peer = host_lines(a.peer, a.peer_git or a.git)
    swift = host_lines(a.swift, a.swift_git or a.git)
    recs += peer + swift
    with open(os.path.join(a.dir, "results.jsonl"), "w") as f:
        for r in recs:
            f.write(json.dumps(r, sort_keys=True) + "\n")

    md = []
    missing = []
    P = md.append
    P("# rawstore benchmark report")
    P("")
    P("- kernel: `%s` (`%s`), %s CPUs, %d MiB, clocksource `%s`" % (
        env.get("kernel"), env.get("kernel_version", "")[:40], env.get("cpus"),
        int(env.get("mem_kb", 0)) // 1024, env.get("clocksource")))
    P("- accelerator: **%s**; mode: %s; repetitions: %s; git revision: `%s`" % (
        a.accel, env.get("mode"), env.get("reps"), a.git))
    if a.wall:
        P("- wall time of `bench/run`: %.0f s" % a.wall)
    P("- raw results: [results.jsonl](results.jsonl) (one JSON object per measurement), "
      "guest log: [raw/guest.log](raw/guest.log), fio's own output: `raw/fio/`")
    hostio = host_io_errors(raw)
    P("- host I/O errors on the guest's disk files: %s" % (
        "none" if not hostio else "**%d**, each paused the guest for about 0.5 s "
        "before QEMU retried the request (a cell timed across one is slower by "
        "that pause): %s" % (len(hostio), "; ".join(hostio[:5]))))
    P("")
    if a.accel == "tcg":
        P("Under TCG (emulated CPU) absolute numbers are not device numbers: every "
          "instruction is emulated, so CPU-heavy work (checksums, copies, RocksDB) is "
          "inflated and device time is QEMU's. **The ratios between measurements of "
          "this one run are the result.** Where there are several repetitions, figures "
          "are medians and *spread* is (max - min) / median.")
        P("")
    P("Devices (virtio-blk on sparse host files, `cache=none`):")
    P("")
    P("| disk | guest dev | size | logical block | discard max | write-zeroes max | "
      "provision max | used for |")
    P("|---|---|---|---|---|---|---|---|")
    uses = {"bwz": "blockdev (with write-zeroes), block alloc paths",
            "bnowz": "blockdev without write-zeroes offload",
            "fs": "ext4: prealloc-file, files, ext4 alloc paths, loop",
            "xfs": "xfs: files", "thin": "dm-thin pool", "meta": "ext4 for RocksDB",
            "fio": "fio (device limit)"}
    for d, p in env.get("disks", {}).items():
        P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            d, p["dev"], size_name(p["size_bytes"]), p["logical_block_size"],
            size_name(p["discard_max_bytes"]), size_name(p["write_zeroes_max_bytes"]),
            size_name(p["provision_max_bytes"]), uses.get(d, "")))
    P("")

    # ---- allocation latency -------------------------------------------------
    prep = {}
    fw = {}
    for r in recs:
        if r.get("section") != "alloc":
            continue
        if r["status"] != "ok":
            why = r.get("why") or r.get("errno", "")
            if r.get("mode") == "write-zeroes" and r.get("errno") in ("EOPNOTSUPP", "EINVAL"):
                why = "not supported by this kernel (%s)" % r["errno"]
            elif r.get("errno"):
                why = "the kernel/device refuses it (%s)" % r["errno"]
            missing.append(("alloc %s %s %s" % (r["path"], r.get("kind", ""),
                                                size_name(r.get("size", 0))), why))
            if r.get("kind") == "alloc_first_writes":
                fw.setdefault(r["path"], {"why": why})
            else:
                prep.setdefault(r["path"], {})[r.get("size", 0)] = why
            continue
        if r["kind"] == "alloc_prepare":
            prep.setdefault(r["path"], {}).setdefault(r["size"], Cell())
            c = prep[r["path"]][r["size"]]
            if isinstance(c, Cell):
                c.add(r)
        elif r["kind"] == "alloc_first_writes":
            c = fw.setdefault(r["path"], Cell())
            if isinstance(c, Cell):
                c.add(r)
    path_order = ["ext4-nohide-stale", "ext4-fallocate", "ext4-written-zeros",
                  "ext4-write-zeroes", "provision-loop", "provision-dm-thin",
                  "blockdev-zero-range-wz", "blockdev-zero-range-nowz", "blockdev-punch",
                  "blockdev-write-zeroes", "blockdev-none"]
    path_desc = {
        "ext4-nohide-stale": "ext4 file, `FALLOC_FL_NO_HIDE_STALE`",
        "ext4-fallocate": "ext4 file, plain `fallocate` (unwritten)",
        "ext4-written-zeros": "ext4 file, zeros written",
        "ext4-write-zeroes": "ext4 file, `FALLOC_FL_WRITE_ZEROES`",
        "provision-loop": "loop over ext4 file, provision",
        "provision-dm-thin": "dm-thin, provision",
        "blockdev-zero-range-wz": "virtio-blk, zero-range (write-zeroes offload)",
        "blockdev-zero-range-nowz": "virtio-blk, zero-range (no offload: writes zeros)",
        "blockdev-punch": "virtio-blk, punch-hole",
        "blockdev-write-zeroes": "virtio-blk, `FALLOC_FL_WRITE_ZEROES`",
        "blockdev-none": "virtio-blk, nothing prepared (baseline)",
    }
    paths = [p for p in path_order if p in prep or p in fw] + sorted(
        p for p in set(prep) | set(fw) if p not in path_order)
    first_rows = []
    if paths:
        P("## 1. Allocation latency by path")
        P("")
        P("Time to prepare space durably (the call, then `fsync`), and the first 4 KiB "
          "`O_DIRECT|O_DSYNC` writes into a freshly prepared 16 MiB range (one write per "
          "16 KiB, each into its own block), with the journal commits they caused "
          "(`/proc/fs/jbd2/<dev>-8/info`, transactions before/after; ext4 mounted "
          "`commit=600,noinit_itable` as in `k_nohide_stale`, so the journal timer does "
          "not commit inside a measurement; for loop the journal is the backing file "
          "system's).")
        P("")
        P("### First writes into prepared space")
        P("")
        ref = fw.get("ext4-fallocate")
        ref99 = ref.m("p99_us") if isinstance(ref, Cell) else None
        P("| path | writes | p50 | p99 | mean | journal commits | p99 vs plain fallocate |")
        P("|---|---|---|---|---|---|---|")
        for p in paths:
            c = fw.get(p)
            if c is None:
                continue
            if not isinstance(c, Cell):
                P("| %s | - | - | - | - | - | %s |" % (path_desc.get(p, p), c["why"]))
                continue
            j = c.m("jbd2_commits")
            sp = c.sp("p99_us")
            P("| %s | %d | %s ms | %s ms%s | %s ms | %s | %s |" % (
                path_desc.get(p, p), c.reps[0]["writes"], fmt(c.m("p50_us") / 1e3, 2),
                fmt(c.m("p99_us") / 1e3, 2), " (±%.0f%%)" % sp if sp is not None else "",
                fmt(c.m("mean_us") / 1e3, 2), "n/a (no journal)" if j is None else "%d" % j,
                fmt_ratio(ratio(c.m("p99_us"), ref99))))
            first_rows.append((p, c))
        P("")
        P("For reference, issue 12 quotes a measurement by hand on this kernel in QEMU "
          "(ext4 on virtio-blk): `NO_HIDE_STALE` p50 ≈ 1.5 ms / p99 ≈ 4.6 ms with 0 "
          "journal commits, plain `fallocate` p50 ≈ 4.6 ms / p99 ≈ 11.6 ms with 1000 "
          "commits, written zeros p50 ≈ 1.5 ms / p99 ≈ 5.3 ms. Absolute times depend on "
          "the host's load under TCG; the commit counts and the ordering should not.")
        P("")
        sizes = sorted({s for p in prep.values() for s in p})
        P("### Time to prepare")
        P("")
        P("| path | " + " | ".join(size_name(s) for s in sizes) + " |")
        P("|---|" + "---|" * len(sizes))
        for p in paths:
            row = []
            for s in sizes:
                c = prep.get(p, {}).get(s)
                if c is None:
                    row.append("-")
                elif isinstance(c, Cell):
                    row.append("%s ms" % fmt(c.m("ns") / 1e6, 2))
                else:
                    row.append(c)
            P("| %s | %s |" % (path_desc.get(p, p), " | ".join(row)))
        P("")
        # plots: preparation time bars, first-write CDFs
        data = "path " + " ".join('"%s"' % size_name(s) for s in sizes) + "\n"
        for p in paths:
            vals = []
            for s in sizes:
                c = prep.get(p, {}).get(s)
                vals.append("%.4f" % (c.m("ns") / 1e6) if isinstance(c, Cell) else "NaN")
            data += "%s %s\n" % (q(p), " ".join(vals))
        ncol = len(sizes)
        png = gnuplot(plots, "alloc-prepare", """
set title 'Time to prepare space, by path and size (durable; lower is better)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'milliseconds (log)'
set xtics rotate by -30 scale 0
set key top left
set grid ytics
set bmargin 8
plot for [i=2:%d] DATA using i:xtic(1) title columnheader(i)
""" % (ncol + 1), data)
        if png:
            P("![time to prepare by path](%s)" % png)
            P("")
        data = ""
        names = []
        for p, c in first_rows:
            cdf = c.cdf()
            if not cdf:
                continue
            names.append(p)
            data += "# %s\n" % p
            for i, v in enumerate(cdf):
                data += "%.3f %.1f\n" % (max(v, 1) / 1e3, pct_at(i, len(cdf)))
            data += "\n\n"
        if names:
            png = gnuplot(plots, "alloc-first-writes-cdf", """
set title 'First 4 KiB O_DIRECT|O_DSYNC writes into prepared space: latency CDF'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of writes at or below'
set key bottom right
set grid
plot %s
""" % ", ".join("DATA index %d using 1:2 with linespoints title %s" % (i, q(n))
                for i, n in enumerate(names)), data)
            if png:
                P("![first-write latency CDF by path](%s)" % png)
                P("")

    # ---- objects ---------------------------------------------------------------
    cells = {}
    prepfile = {}
    thin = []
    infos = {}
    for r in recs:
        if r.get("section") != "objects":
            continue
        if r.get("kind") == "thin_pool":
            thin.append(r)
            continue
        if r.get("kind") == "prealloc_file_prepare":
            prepfile.setdefault(r["variant"], []).append(r)
            continue
        if r.get("kind") == "store_info":
            infos.setdefault(backend_label(r), r)
            continue
        if r.get("kind") != "object":
            continue
        b = backend_label(r)
        if r["status"] != "ok":
            what = r.get("spec") or ("all" if r.get("workload") == "(all)" else "%s %s" % (
                r.get("workload", ""), size_name(r.get("size", 0))))
            missing.append(("objects %s %s" % (b, what), r.get("why", "")))
            cells.setdefault(b, {})
            continue
        cells.setdefault(b, {}).setdefault(obj_key(r), Cell()).add(r)
    fio = {}
    for r in recs:
        if r.get("kind") == "fio":
            if r["status"] == "ok":
                fio.setdefault(r["job"], Cell()).add(r)
            else:
                missing.append(("fio %s" % r["job"], r.get("why", "")))
    base = BASE
    nocopy = "blockdev/wz-nocopy"
    order = [base, JR, nocopy, "blockdev/nowz", "blockdev/dm-thin"] + ["blockdev/policy-%s" % p for p in
                                       ("prepare-background", "pad-inline")] + \
        ["prealloc-file/%s" % v for v in ("nohide-stale", "fallocate", "written-zeros",
                                          "write-zeroes")] + ["files/ext4", "files/xfs"]
    backends = [b for b in order if cells.get(b)] + sorted(
        b for b in cells if b not in order and cells[b])
    keys = sorted({k for b in cells.values() for k in b}, key=sort_key)
    if cells:
        P("## 2. Objects")
        P("")
        P("rawstore-bench, each transaction durable when acknowledged, group-committed "
          "when several are in flight: with the device journal (the default) the data "
          "and one journal record go out under one device flush and RocksDB's WAL is "
          "not synced; with `--journal rocksdb` (`blockdev/wz-rocksdb`, section 2a) a "
          "device flush and a synced RocksDB write. RocksDB on "
          "ext4 on its own virtio disk. Backends: `blockdev` = rawstore on the raw "
          "virtio-blk device (`wz`: with write-zeroes offload, `nowz`: without; "
          "`policy-*`: under each space policy); `prealloc-file` = rawstore inside one "
          "large file on ext4 prepared by the named path; `files` = one file per object "
          "(pwrite + fdatasync, synced RocksDB record), on ext4 and xfs. Reads are "
          "random, one at a time (QD16: from 16 threads at once), from 4 MiB objects; overwrites random 4 KiB in 4 MiB "
          "objects; removes each their own transaction, then one reclaim (punch) of the "
          "freed space.")
        P("")
        if infos:
            P("Space policy in effect for each rawstore backend (`rawstore_get_info()` after "
              "open; `zero`: how partial-unit writes find zeros, `punch`: when freed space "
              "is punched, `prealloc`: how mkfs prepared a store file):")
            P("")
            P("| backend | zero | zero-range offloaded | punch | prealloc | provisioning | "
              "I/O | deferred through the WAL (overwrites / new data, rotational) | crc32c |")
            P("|---|---|---|---|---|---|---|---|---|")
            for b in sorted(infos):
                i = infos[b]
                dfr = "-"
                if "deferred_new_max" in i:
                    def lim(v):
                        return "<= %s" % size_name(v) if v else "off"
                    dfr = "%s / %s%s" % (lim(i["deferred_max"]), lim(i["deferred_new_max"]),
                                         ", rotational" if i.get("rotational") else "")
                P("| %s | %s | %s | %s | %s | %s | %s%s | %s | %s |" % (
                    b, i["zero_policy"], "yes" if i["zero_offload"] else "no",
                    i["punch_policy"], i["prealloc_policy"],
                    "yes" if i["provisioning"] else "no", i["io_engine"],
                    ", direct" if i["direct_io"] else ", buffered", dfr,
                    i.get("crc32c", "-")))
            P("")
            P("*crc32c*: the checksum implementation the store picked by timing both "
              "(`isa-l`: SSE4.2 crc32 and PCLMULQDQ; `tables`: slice-by-8, faster where "
              "those instructions are emulated, as under TCG).")
            P("")
        if prepfile:
            P("The `prealloc-file` store files were prepared before mkfs (durably, "
              "then the store opened on them with `O_DIRECT`):")
            P("")
            P("| prepared by | file size | time |")
            P("|---|---|---|")
            for v, rs in prepfile.items():
                P("| %s | %s | %s s |" % (v, rs[0].get("size_spec", ""),
                                          fmt(med([x["ns"] for x in rs]) / 1e9, 2)))
            P("")
        P("### Operations per second, as a ratio to `%s` (higher is better)" % base)
        P("")
        P("| cell | %s ops/s | %s |" % (journal_label(base, cells), " | ".join(
            journal_label(b, cells) for b in backends if b != base)))
        P("|---|---|" + "---|" * (len(backends) - 1))
        for k in keys:
            bc = cells.get(base, {}).get(k)
            bops = bc.m("ops_per_sec") if bc else None
            row = []
            for b in backends:
                if b == base:
                    continue
                c = cells[b].get(k)
                row.append(fmt_ratio(ratio(c.m("ops_per_sec"), bops)) if c else "-")
            P("| %s | %s | %s |" % (cell_name(k), fmt(bops), " | ".join(row)))
        P("")
        P("Ratios are (backend ops/s) / (blockdev ops/s) in the same run: 0.50× means "
          "half of blockdev's rate. For `reclaim` the figure is punches per second of the "
          "whole freed set (its MB/s is in the detail table).")
        P("")
        P("### Detail per backend")
        P("")
        for b in backends:
            P("**%s**" % journal_label(b, cells))
            P("")
            P("| cell | ops/s | MB/s | p50 µs | p99 µs | p999 µs | flushes/txn | "
              "RocksDB syncs/txn | CPU µs/op | spread (ops/s) |")
            P("|---|---|---|---|---|---|---|---|---|---|")
            for k in keys:
                c = cells[b].get(k)
                if not c:
                    continue
                sp = c.sp("ops_per_sec")
                P("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    cell_name(k), fmt(c.m("ops_per_sec")), fmt(c.m("mb_per_sec"), 2),
                    fmt(c.m("p50_us")), fmt(c.m("p99_us")), fmt(c.m("p999_us")),
                    fmt(c.m("flushes_per_txn"), 2), fmt(c.m("db_syncs_per_txn"), 2),
                    fmt(c.m("cpu_us_per_op")), "-" if sp is None else "%.0f%%" % sp))
            P("")
        if thin:
            P("**Reclaim on dm-thin** (`blockdev/dm-thin`: rawstore on a thin volume; objects "
              "created, removed, then `rawstore_reclaim()` punches the freed ranges): the "
              "pool's used data blocks (64 KiB each, `dmsetup status`). *Space returned* is "
              "ok only when the creates took blocks and the removes and reclaim gave some "
              "back (fewer blocks after reclaim than after the creates); *not shown* when "
              "the run did not measure the blocks after the creates or they did not grow.")
            P("")
            P("| rep | objects | before the creates | after the creates | after the removes "
              "| after reclaim | reclaim call | space returned |")
            P("|---|---|---|---|---|---|---|---|")
            for t in thin:
                P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    t.get("rep", 1), size_name(t["size"]), t["used_blocks_before_creates"],
                    t.get("used_blocks_after_creates", "-"),
                    t["used_blocks_before_reclaim"], t["used_blocks_after_reclaim"],
                    t["reclaim"], thin_verdict(t)))
            P("")
        # throughput bars: ratio to blockdev per cell
        others = [b for b in backends if b != base and any(
            k in cells[b] and k in cells.get(base, {}) and k[0] != "reclaim"
            for k in keys)]
        if others and cells.get(base):
            data = "cell " + " ".join(q(b) for b in others) + "\n"
            for k in keys:
                bc = cells[base].get(k)
                if not bc or k[0] == "reclaim":
                    continue
                vals = []
                for b in others:
                    c = cells[b].get(k)
                    rr = ratio(c.m("ops_per_sec"), bc.m("ops_per_sec")) if c else None
                    vals.append("%.4f" % rr if rr else "NaN")
                data += "%s %s\n" % (q(cell_name(k)), " ".join(vals))
            png = gnuplot(plots, "throughput-vs-blockdev", """
set title 'Throughput relative to blockdev (ops/s ratio; 1 = same as blockdev; log scale)'
set style data histograms
set style histogram clustered gap 2
set style fill solid 0.8 border -1
set logscale y
set ylabel 'ratio to blockdev/wz (log)'
set xtics rotate by -40 scale 0 font ',9'
set key outside right top
set grid ytics
set bmargin 9
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot for [i=2:%d] DATA using i:xtic(1) title columnheader(i)
""" % (len(others) + 1), data)
            if png:
                P("![throughput relative to blockdev](%s)" % png)
                P("")
        # absolute throughput of blockdev
        # latency CDFs per workload cell
        P("### Latency CDFs")
        P("")
        for k in keys:
            if k[0] in ("reclaim",):
                continue
            data = ""
            names = []
            for b in backends:
                c = cells[b].get(k)
                cdf = c.cdf() if c else None
                if not cdf:
                    continue
                names.append(b)
                data += "# %s\n" % b
                for i, v in enumerate(cdf):
                    data += "%.3f %.1f\n" % (max(v, 1.0) / 1e3, pct_at(i, len(cdf)))
                data += "\n\n"
            if not names:
                continue
            name = "cdf-%s-%d-qd%d" % (k[0], k[1], k[2])
            png = gnuplot(plots, name, """
set title 'Latency CDF: %s'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot %s
""" % (cell_name(k), ", ".join("DATA index %d using 1:2 with lines lw 2 title %s" % (i, q(n))
                                for i, n in enumerate(names))), data)
            if png:
                P("![%s](%s)" % (cell_name(k), png))
        P("")

    jrows = journal_section(cells, keys, P) if cells else []

    # ---- blockdev against fio ------------------------------------------------------
    if fio:
        P("## 3. blockdev against the device limit (fio)")
        P("")
        P("fio %s, io_uring, `O_DIRECT`, on its own virtio-blk disk of the same kind, "
          "same boot. `sync4k-qd1`: 4 KiB sequential writes each followed by `fdatasync` "
          "(a durable 4 KiB write); `randwrite4k-qd16`: 4 KiB random writes, 16 in flight, "
          "no flush; `seq1m-qd*`: 1 MiB sequential writes, no flush; `randread4k-qd16`: "
          "4 KiB random reads, 16 in flight (against rawstore reads from 16 threads, one "
          "read each at a time); `randread4k-16x1`: the same reads in rawstore's shape, "
          "16 threads with one read each at a time. 1 MiB creates are compared both as "
          "copied (`%s`, `rawstore_txn_write`) and from the caller's buffer (`%s`, "
          "`rawstore_txn_write_nocopy`, as fio writes)." %
          (next(iter(fio.values())).reps[0].get("fio_version", ""), base, nocopy))
        P("")
        P("| fio job | ops/s | MB/s | p50 µs | p99 µs | compared with | rawstore | ratio |")
        P("|---|---|---|---|---|---|---|---|")
        # (fio job, rawstore backend, cell, field)
        pairs = [("sync4k-qd1", base, ("create", 4096, 1), "ops_per_sec"),
                 ("randwrite4k-qd16", base, ("create", 4096, 16), "ops_per_sec"),
                 ("randwrite4k-qd16", base, ("overwrite", 4096, 1), "ops_per_sec")] + [
                 ("seq1m-qd%d" % qd, b, ("create", MiB, qd), "mb_per_sec")
                 for qd in (1, 16) for b in (base, nocopy)] + [
                 ("randread4k-qd16", base, ("read", 4096, 16), "ops_per_sec"),
                 ("randread4k-16x1", base, ("read", 4096, 16), "ops_per_sec")]
        for job in sorted(fio):
            c = fio[job]
            cmp_ = [(b, k, f) for j, b, k, f in pairs
                    if j == job and cells.get(b, {}).get(k)]
            if not cmp_:
                cmp_ = [(None, None, None)]
            for b, k, f in cmp_:
                bc = cells[b][k] if k else None
                rv = bc.m(f) if bc else None
                P("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    job, fmt(c.m("ops_per_sec")), fmt(c.m("mb_per_sec"), 2),
                    fmt(c.m("p50_us")), fmt(c.m("p99_us")),
                    "%s %s" % (b, cell_name(k)) if k else "-",
                    ("%s %s" % (fmt(rv), "ops/s" if f == "ops_per_sec" else "MB/s"))
                    if rv is not None else "-",
                    fmt_ratio(ratio(rv, c.m(f))) if rv is not None else "-"))
        P("")
        P("Ratio = rawstore / fio. A rawstore create of 4 KiB is a durable transaction "
          "(with the device journal: one journal record and one flush; small objects are "
          "inline in the record and in RocksDB), so "
          "against `sync4k-qd1` it shows the cost of the store around one durable write; "
          "against `randwrite4k-qd16` (no flush) it is an upper bound no store reaches.")
        P("")
        data = ""
        for job, b, k, f in pairs:
            if job in fio and cells.get(b, {}).get(k):
                data += "%s %.3f %.3f\n" % (q("%s%s vs %s" % (
                    cell_name(k), " nocopy" if b == nocopy else "", job)),
                    cells[b][k].m(f), fio[job].m(f))
        png = gnuplot(plots, "blockdev-vs-fio", """
set title 'blockdev against fio on the same kind of device (ops/s for 4 KiB, MB/s for 1 MiB)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set xtics rotate by -25 scale 0 font ',9'
set key top left
set grid ytics
set bmargin 8
set rmargin 12
plot DATA using 2:xtic(1) title 'rawstore blockdev', '' using 3 title 'fio'
""", data)
        if png:
            P("![blockdev against fio](%s)" % png)
            P("")

    # ---- aging and sustained load ---------------------------------------------------
    aging_section(recs, P, missing, plots)
    load_rows = load_section(recs, P, missing, plots)
    recovery_section(recs, P, missing)

    # ---- peer ---------------------------------------------------------------------
    def apart(rev, command, lines):
        """The note on a section measured by a run of its own, or None."""
        if not rev or rev == a.git:
            return None
        return ("Measured apart from the rest of this report: `%s` at git revision `%s` "
                "on the same host, its lines in `%s`." % (command, rev, lines))

    pcells = peer_section(peer, P, missing,
                          apart(a.peer_git, "bench/peer-bluestore", "raw/peer/peer.jsonl"))
    snote = apart(a.swift_git, "integrations/swift/bench/run", "raw/swift/swift.jsonl")
    scells = swiftreport.section(swift, P, missing, "4b", snote)

    powercut_section(recs, P, missing, env.get("mode"), host_io_errors(raw))

    # ---- targets ------------------------------------------------------------------
    P("## 5. Targets")
    P("")
    targets = []
    nhs, plain = fw.get("ext4-nohide-stale"), fw.get("ext4-fallocate")
    if isinstance(nhs, Cell) and isinstance(plain, Cell):
        j = nhs.m("jbd2_commits")
        ok = j == 0 and nhs.m("p99_us") < plain.m("p99_us")
        targets.append((ok, "First writes into `NO_HIDE_STALE` space commit no journal "
                        "transaction and their p99 beats plain `fallocate` space",
                        "%s commits (plain fallocate: %s); p99 %.2f ms vs %.2f ms" % (
                            fmt(j, 0), fmt(plain.m("jbd2_commits"), 0),
                            nhs.m("p99_us") / 1e3, plain.m("p99_us") / 1e3)))
    else:
        targets.append((None, "First writes into `NO_HIDE_STALE` space: 0 journal commits, "
                        "p99 below plain `fallocate`", "not measured (see missing cells)"))
    small = [k for k in keys if (k[0] == "create" and k[1] <= 64 * KiB) or
             (k[0] in ("overwrite", "read") and k[1] <= 64 * KiB)]
    for other in ("files/ext4", "files/xfs", "prealloc-file/fallocate"):
        if other not in cells or base not in cells:
            targets.append((None, "`blockdev` beats `%s` on every small-object workload" % other,
                            "not measured"))
            continue
        lost, won = [], 0
        for k in small:
            bc, oc = cells[base].get(k), cells[other].get(k)
            if not bc or not oc:
                continue
            if bc.m("ops_per_sec") > oc.m("ops_per_sec"):
                won += 1
            else:
                lost.append("%s (%.2f×)" % (cell_name(k), oc.m("ops_per_sec") /
                                           bc.m("ops_per_sec")))
        targets.append((not lost and won > 0,
                        "`blockdev` beats `%s` on every small-object workload" % other
                        + ("" if not journals(cells.get(base)) else " (journal %s)" % ", ".join(
                            journals(cells.get(base)))),
                        "wins %d of %d cells%s" % (won, won + len(lost),
                                                   "; loses " + ", ".join(lost) if lost else "")))
    targets += jrows or files_verdicts(cells, keys)
    targets += peer_targets(peer, pcells)
    targets += swiftreport.targets(scells, swift)
    # blockdev against fio: (fio job, cell, field, target, what, unit, digits);
    # 1 MiB creates from the caller's buffer where measured (fio does not copy)
    for job, key, f, want, what, unit, dig in [
            ("seq1m-qd%d" % qd, ("create", MiB, qd), "mb_per_sec", 0.9,
             "1 MiB object creates ≥ 0.9× fio's sequential write bandwidth at QD%d" % qd,
             "MB/s", 1) for qd in (1, 16)] + [
            ("randread4k-qd16", ("read", 4096, 16), "ops_per_sec", 0.8,
             "4 KiB random reads from 16 threads ≥ 0.8× fio's random-read IOPS at QD16",
             "reads/s", 0)]:
        b = nocopy if key[0] == "create" and cells.get(nocopy, {}).get(key) else base
        bc = cells.get(b, {}).get(key)
        fc = fio.get(job)
        if bc and fc:
            rr = ratio(bc.m(f), fc.m(f))
            ref = fio.get("randread4k-16x1") if key[0] == "read" else None
            targets.append((rr >= want, what, "%s (%.*f vs %.*f %s%s)%s" % (
                fmt_ratio(rr), dig, bc.m(f), dig, fc.m(f), unit,
                ", from the caller's buffer" if b == nocopy else "",
                "; against fio in the same shape (16 threads, QD1 each, %.0f reads/s): %s"
                % (ref.m(f), fmt_ratio(ratio(bc.m(f), ref.m(f)))) if ref else "")))
        else:
            targets.append((None, what, "not measured"))
    targets += load_targets(load_rows)
    P("| | target | this run |")
    P("|---|---|---|")
    for ok, what, detail in targets:
        P("| %s | %s | %s |" % ({True: "**met**", False: "**not met**",
                                 None: "not checked"}[ok], what, detail))
    P("")
    P("Targets are stated by this report, not enforced by tests. Under TCG they compare "
      "measurements of the same run; a target met here still needs a run on real "
      "hardware (KVM or bare metal) before it is claimed for a device.")
    P("")

    # ---- missing -------------------------------------------------------------------
    P("## 6. Missing cells")
    P("")
    if missing:
        # one row per (section and backend or path, reason), naming its cells
        groups = {}
        for what, why in missing:
            head, _, rest = what.partition(" ")
            name, _, cell = rest.partition(" ")
            cells_ = groups.setdefault((head, name, why), [])
            if cell and cell not in cells_:
                cells_.append(cell)
        P("| what | cells | why |")
        P("|---|---|---|")
        for (head, name, why), cl in groups.items():
            P("| %s %s | %s | %s |" % (head, name, ", ".join(cl) or "all", why))
    else:
        P("None.")
    P("")
    warn = [r for r in recs if r.get("kind") == "kernel_warnings"]
    if warn:
        P("**The guest kernel logged warnings during the run; see raw/guest.log.**")
        P("")
    with open(os.path.join(a.dir, "report.md"), "w") as f:
        f.write("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
