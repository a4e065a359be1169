#!/usr/bin/env python3
# bench/swiftreport.py: the Swift benchmark's cells, table and targets,
# used by bench/report.py (--swift FILE) and pinned by
# tests/harness/bench-report.sh.
#
# FILE holds the JSON lines integrations/swift/bench/swiftload.py printed,
# one per (backend, op, size, clients) and repetition; every line carries
# "swiftload": 1.  Figures are medians over the repetitions; a cell with an
# error in any repetition is listed among the missing cells and never
# counted as a win.
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


def section(lines, P, missing, number="3d"):
    """The table; returns the cells (for targets)."""
    cs = cells(lines)
    if not cs:
        return cs
    reps = max(len(b["reps"]) for c in cs.values() for b in c.values())
    P("## %s. Swift on rawstore against Swift on XFS and on ext4 (host)" % number)
    P("")
    P("OpenStack Swift 2.30 (Debian's packages), one all-in-one on this host "
      "(`integrations/swift/saio/run`: proxy with tempauth, account, container "
      "and object servers, 4 object devices in 2 zones, 3 replicas) started "
      "three times with the same rings and the same load: object devices that "
      "are rawstore stores (`rawstore_swift`, through `rawstored`), then Swift's "
      "own file backend on XFS and on ext4 (the same loop devices, one file "
      "system each), with Swift's default `disable_fallocate = false` (the file "
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
    return cs


def targets(cs):
    """One row per stock backend: rawstore ahead on small-object PUT (4 KiB
    and 64 KiB) at every concurrency measured; each miss named."""
    what = ("Swift on rawstore beats Swift on %s on small-object PUT (≤ 64 KiB) "
            "at every concurrency, objects/s")
    if not cs:
        return [(None, what % "XFS and ext4", "not measured: the Swift benchmark did not run")]
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
    return out


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
    for ok_, what, detail in targets(cs):
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
