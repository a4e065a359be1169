#!/usr/bin/env python3
# bench/swiftreport.py: the Swift benchmark's cells, table and targets,
# used by bench/report.py (--swift FILE) and pinned by
# tests/harness/bench-report.sh.
#
# FILE holds the JSON lines integrations/swift/bench/swiftload.py printed,
# one per (backend, op, size, clients) and repetition; every line carries
# "swiftload": 1.  Figures are medians over the repetitions; a cell with an
# error in any repetition is listed among the missing cells and never
# counted as a win.  Lines with "functests": 1 (bench/run --functests) hold
# the counts of Swift's functional suite on one backend.
import statistics

BACKENDS = ("rawstore", "xfs", "ext4")
LABEL = {"rawstore": "rawstore", "xfs": "XFS (Swift's file backend)",
         "ext4": "ext4 (Swift's file backend)"}
SMALL = 64 << 10        # small objects: the PUT target's cells


def size_name(n):
    for suffix, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= m and n % m == 0:
            return "%d %s" % (n // m, suffix)
    return "%d B" % n


def cells(lines):
    """{(op, size, clients): {backend: {"reps": [...], "errors": n, "why": s}}}"""
    out = {}
    for r in lines:
        if r.get("swiftload") != 1:
            continue
        k = (r["op"], int(r["size"]), int(r["clients"]))
        c = out.setdefault(k, {}).setdefault(r.get("backend", "?"),
                                             {"reps": [], "errors": 0, "why": None})
        c["reps"].append(r)
        c["errors"] += int(r.get("errors") or 0)
        if r.get("first_error") and not c["why"]:
            c["why"] = r["first_error"]
    return out


def med(c, field):
    vals = [r.get(field) for r in c["reps"] if r.get(field) is not None]
    return statistics.median(vals) if vals else None


def ok(c):
    """A cell that counts: measured, with no error in any repetition."""
    return c is not None and not c["errors"] and med(c, "ops_per_s")


def fmt(v, digits=0):
    return "-" if v is None else "%.*f" % (digits, v)


def ratio(a, b):
    return a / b if a and b else None


def fmt_ratio(r):
    return "-" if r is None else "%.2f×" % r


CPU_GROUPS = (("host", "host"), ("object-server", "object server"),
              ("rawstored", "rawstored"), ("proxy-server", "proxy"),
              ("container-server", "container server"))


def med_cpu(c, group):
    vals = [r["cpu_ms_per_op"][group] for r in c["reps"]
            if group in (r.get("cpu_ms_per_op") or {})]
    return statistics.median(vals) if vals else None


def cpu_table(cs, P):
    """CPU time per PUT of each process group, per backend."""
    keys = sorted(k for k in cs if k[0] == "put")
    if not any(r.get("cpu_ms_per_op") for k in keys for b in cs[k].values()
               for r in b["reps"]):
        return
    P("Where the CPU went, per PUT: the user + system time of each process "
      "group over the phase (`swiftload --cpu`, from `/proc/PID/stat`: a "
      "server with its workers) divided by the PUTs, in ms, medians, "
      "rawstore / XFS / ext4. host is the whole machine but idle and iowait "
      "(`/proc/stat`), the load generator included; rest is host minus the "
      "groups named (the load generator, memcached, the account server, "
      "the loop devices' and the file systems' kernel threads). rawstore's "
      "storage work is the object server's and rawstored's; the file "
      "backends' is the object server's system calls and the kernel "
      "threads. With 2 CPUs a cell whose host time per PUT times its rate "
      "nears 2000 ms/s is CPU-bound, and the backend with less CPU per PUT "
      "wins it.")
    P("")
    P("| size | clients | %s | rest |" % " | ".join(label for _, label in CPU_GROUPS))
    P("|---|---|%s---|" % ("---|" * len(CPU_GROUPS)))
    for k in keys:
        c = cs[k]
        # {backend: {group: median ms}}, each median computed once
        med = dict((b, dict((g, med_cpu(c[b], g)) for g, _ in CPU_GROUPS))
                   for b in BACKENDS if c.get(b))
        row = [size_name(k[1]), "%d" % k[2]]
        for g, _ in CPU_GROUPS:
            if g == "rawstored":
                row.append(fmt(med["rawstore"][g], 2) if "rawstore" in med else "-")
                continue
            row.append(" / ".join(fmt(med[b][g], 2) if b in med else "-"
                                  for b in BACKENDS))
        rest = []
        for b in BACKENDS:
            if b not in med or med[b]["host"] is None:
                rest.append("-")
                continue
            named = sum(v or 0 for g, v in med[b].items() if g != "host")
            rest.append(fmt(med[b]["host"] - named, 2))
        row.append(" / ".join(rest))
        P("| " + " | ".join(row) + " |")
    P("")


def functests(lines):
    """{backend: counts line} of Swift's functional suite."""
    return dict((r["backend"], r) for r in lines if r.get("functests") == 1)


def functests_table(ft, P):
    if not ft:
        return
    P("Swift's functional suite (`test/functional` of Debian's source of the "
      "installed Swift, run by `integrations/swift/saio/functests` with "
      "stestr, one test at a time) against each backend's all-in-one "
      "(`saio/run`'s defaults, as Swift's SAIO: 1 GiB devices, "
      "`disable_fallocate = true`):")
    P("")
    P("| backend | passed | failed | skipped | failed tests |")
    P("|---|---|---|---|---|")
    for b in BACKENDS:
        r = ft.get(b)
        if r is None:
            P("| %s | not run | | | |" % LABEL[b])
            continue
        # Class.test, or the whole id of a fixture ("tearDownModule(...)")
        names = [n if "(" in n or n.count(".") < 2 else ".".join(n.rsplit(".", 2)[-2:])
                 for n in r.get("failed_tests", [])]
        P("| %s | %d | %d | %d | %s |" % (LABEL[b], r["passed"], r["failed"],
                                          r["skipped"], ", ".join(names) or "none"))
    P("")


def functests_target(ft):
    """rawstore passes every test that passes on the file backend: each of
    its failures fails on every stock backend run, and it skips no more."""
    what = ("Swift's functional suite: every test that passes on Swift's file "
            "backend passes on rawstore")
    stock = [b for b in ("xfs", "ext4") if b in ft]
    if "rawstore" not in ft or not stock:
        return (None, what, "not run on rawstore and a file backend")
    r = ft["rawstore"]
    worse = []
    for b in stock:
        only = set(r.get("failed_tests", [])) - set(ft[b].get("failed_tests", []))
        if only:
            worse.append("%d fail on rawstore and not on %s (%s)" % (
                len(only), b, ", ".join(sorted(only))))
        if "skipped_tests" in r and "skipped_tests" in ft[b]:
            sk = set(r["skipped_tests"]) - set(ft[b]["skipped_tests"])
            if sk:
                worse.append("%d skipped on rawstore only (%s)" % (len(sk), ", ".join(sorted(sk))))
        elif r["skipped"] > ft[b]["skipped"]:
            worse.append("%d more skipped than on %s" % (r["skipped"] - ft[b]["skipped"], b))
    detail = "rawstore %d passed, %d failed; %s" % (
        r["passed"], r["failed"], "; ".join(
            "%s %d passed, %d failed" % (b, ft[b]["passed"], ft[b]["failed"]) for b in stock))
    if worse:
        return (False, what, detail + "; " + "; ".join(worse))
    return (True, what, detail)


def section(lines, P, missing, number="3d", note=None):
    """The tables; returns the cells (for targets)."""
    cs = cells(lines)
    ft = functests(lines)
    if not cs and not ft:
        return cs
    reps = max([len(b["reps"]) for c in cs.values() for b in c.values()] or [0])
    P("## %s. Swift on rawstore against Swift on XFS and on ext4 (host)" % number)
    P("")
    if note:
        P(note)
        P("")
    P("OpenStack Swift 2.30 (Debian's packages), one all-in-one on this host "
      "(`integrations/swift/saio/run`: proxy with tempauth, account, container "
      "and object servers, 4 object devices in 2 zones, 3 replicas) started "
      "three times with the same rings and the same load: object devices that "
      "are rawstore stores (`rawstore_swift`, through `rawstored`), then Swift's "
      "own file backend on XFS and on ext4 (the same loop devices, one file "
      "system each; each device a 4 GiB file written in full with zeros "
      "before its start, `saio/run --fill`), with Swift's default `disable_fallocate = false` (the file "
      "backend preallocates each PUT). The load is `integrations/swift/bench/swiftload.py`: N "
      "clients with one keep-alive connection each PUT new objects for a fixed "
      "time, then GET them back (bodies compared). Objects per second over all "
      "clients; p50 and p99 of one request, in ms; %d repetition%s, medians. "
      "Everything (proxy, servers, clients) shares the host's CPUs, so the "
      "ratios, not the absolute rates, are the result." % (reps, "" if reps == 1 else "s"))
    P("")
    for op in ("put", "get"):
        keys = sorted(k for k in cs if k[0] == op)
        if not keys:
            continue
        P("%s:" % ("PUT (new objects)" if op == "put" else "GET (every object PUT before)"))
        P("")
        P("| size | clients | rawstore obj/s | XFS obj/s | ext4 obj/s | rawstore / XFS | "
          "rawstore / ext4 | p50 ms (r / x / e) | p99 ms (r / x / e) |")
        P("|---|---|---|---|---|---|---|---|---|")
        for k in keys:
            c = cs[k]
            row = ["%s" % size_name(k[1]), "%d" % k[2]]
            for b in BACKENDS:
                bc = c.get(b)
                if bc is None:
                    row.append("not run")
                    missing.append(("swift %s %s %s × %d clients" % (
                        b, op.upper(), size_name(k[1]), k[2]), "not run"))
                elif bc["errors"]:
                    row.append("**%d errors**" % bc["errors"])
                    missing.append(("swift %s %s %s × %d clients" % (
                        b, op.upper(), size_name(k[1]), k[2]),
                        "%d errors, first: %s" % (bc["errors"], bc["why"])))
                else:
                    row.append(fmt(med(bc, "ops_per_s"), 1))
            r = c.get("rawstore")
            for other in ("xfs", "ext4"):
                o = c.get(other)
                row.append(fmt_ratio(ratio(med(r, "ops_per_s"), med(o, "ops_per_s")))
                           if ok(r) and ok(o) else "-")
            for f in ("p50_ms", "p99_ms"):
                row.append(" / ".join(fmt(med(c[b], f), 1) if c.get(b) else "-"
                                      for b in BACKENDS))
            P("| " + " | ".join(row) + " |")
        P("")
    cpu_table(cs, P)
    functests_table(ft, P)
    return cs


def targets(cs, lines=()):
    """One row per stock backend: rawstore ahead on small-object PUT (4 KiB
    and 64 KiB) at every concurrency measured; each miss named.  With the
    functional suite's counts among the lines, its row too."""
    what = ("Swift on rawstore beats Swift on %s on small-object PUT (≤ 64 KiB) "
            "at every concurrency, objects/s")
    ft = functests(lines)
    extra = [functests_target(ft)] if ft else []
    if not cs:
        return [(None, what % "XFS and ext4",
                 "not measured: the Swift benchmark did not run")] + extra
    out = []
    for other in ("xfs", "ext4"):
        keys = sorted(k for k in cs if k[0] == "put" and k[1] <= SMALL)
        won, lost, unmeasured = 0, [], []
        for k in keys:
            r, o = cs[k].get("rawstore"), cs[k].get(other)
            name = "%s × %d clients" % (size_name(k[1]), k[2])
            if not ok(r) or not ok(o):
                unmeasured.append(name)
                continue
            rr = ratio(med(r, "ops_per_s"), med(o, "ops_per_s"))
            if rr > 1:
                won += 1
            else:
                lost.append("%s (%.2f×)" % (name, rr))
        detail = "wins %d of %d cells" % (won, won + len(lost))
        if lost:
            detail += "; loses " + ", ".join(lost)
        if unmeasured:
            detail += "; not measured: " + ", ".join(unmeasured)
        # a loss is a miss; no loss but a cell not measured proves nothing
        verdict = False if lost else (True if won and not unmeasured else None)
        out.append((verdict, what % {"xfs": "XFS", "ext4": "ext4"}[other], detail))
    return out + extra


def main(argv):
    """swiftreport.py FILE [--git REV]: the section and its targets alone,
    as markdown on stdout (a Swift benchmark run outside bench/run)."""
    import json
    import sys
    if not argv or argv[0].startswith("-"):
        print("usage: swiftreport.py FILE [--git REV]", file=sys.stderr)
        return 2
    git = argv[argv.index("--git") + 1] if "--git" in argv else "unknown"
    with open(argv[0]) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    md, missing = [], []
    md.append("# Swift benchmark (git revision `%s`)" % git)
    md.append("")
    cs = section(lines, md.append, missing, "1")
    md.append("## 2. Target")
    md.append("")
    md.append("| | target | this run |")
    md.append("|---|---|---|")
    for ok_, what, detail in targets(cs, lines):
        md.append("| %s | %s | %s |" % ({True: "**met**", False: "**not met**",
                                         None: "not checked"}[ok_], what, detail))
    md.append("")
    md.append("## 3. Missing cells")
    md.append("")
    md.extend("- %s: %s" % m for m in missing)
    if not missing:
        md.append("None.")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
