#!/usr/bin/env python3
# bench/peer.py: the BlueStore peer's parsers and its verdicts, shared by
# bench/peer-bluestore (which runs the programs) and bench/report.py (which
# states the targets), and pinned by tests/harness/bench-peer.sh.
#
#   peer.py rados FILE      `rados bench ... write` text output -> one JSON
#                           object: count, seconds, ops_per_sec, mb_per_sec
#   peer.py rawstore FILE   rawstore-bench --json output -> one JSON object per
#                           create cell: size, qd, count, seconds, ops_per_sec,
#                           mb_per_sec
#   peer.py osdbench FILE [BEFORE AFTER]
#                           `ceph tell osd.N bench TOTAL BLOCK` JSON -> one JSON
#                           object: count (TOTAL / BLOCK: every block a new
#                           object), seconds, size, ops_per_sec, mb_per_sec;
#                           with the OSD's `perf dump` before and after it,
#                           also BlueStore's in-flight bound (throttle())
#
# cells(lines) groups the "peer_create" lines by (profile, shape, qd) and
# gives, per cell, each system's median and spread over the repetitions and
# the ratio rawstore / BlueStore per repetition; verdict() says whether a
# target is met: the median ratio clears it AND the lowest repetition's
# ratio clears it too (the spread does not cross the threshold).
import json
import re
import sys

MB = 1e6


def rados(text):
    """Parse the summary of `rados bench SECONDS write`: the objects it
    wrote and the time it took. MB/s are computed here (rados prints MiB/s
    as "MB/sec")."""
    want = {"Total time run": "seconds", "Total writes made": "count",
            "Write size": "write_size", "Object size": "object_size"}
    got = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*([0-9.eE+-]+)\s*$", line)
        if m and m.group(1) in want:
            got[want[m.group(1)]] = float(m.group(2))
    missing = [k for k in want.values() if k not in got]
    if missing:
        raise ValueError("rados bench output lacks %s" % ", ".join(missing))
    if got["object_size"] != got["write_size"]:
        raise ValueError("rados bench wrote %d-byte pieces of %d-byte objects, not one "
                         "object per write" % (got["write_size"], got["object_size"]))
    if got["seconds"] <= 0 or got["count"] <= 0:
        raise ValueError("rados bench made %d writes in %.3f s" % (got["count"],
                                                                   got["seconds"]))
    n, s, size = int(got["count"]), got["seconds"], int(got["write_size"])
    return {"count": n, "seconds": s, "size": size, "ops_per_sec": n / s,
            "mb_per_sec": n * size / s / MB}


def rawstore(text):
    out = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        if j.get("kind") != "object" or j.get("workload") != "create":
            continue
        if j.get("status") == "missing":
            raise ValueError("rawstore-bench: create:%s not measured: %s" % (
                j.get("size"), j.get("why")))
        out.append({"size": j["size"], "qd": j["qd"], "count": j["ops"],
                    "seconds": j["seconds"], "ops_per_sec": j["ops_per_sec"],
                    "mb_per_sec": j["mb_per_sec"]})
    return out


def osdbench(text):
    """Parse `ceph tell osd.N bench TOTAL BLOCK` (no object size or count:
    every block is a new object, written through the OSD's ObjectStore
    alone, all queued at once)."""
    j = json.loads(text[text.index("{"):])
    for k in ("bytes_written", "blocksize", "elapsed_sec"):
        if k not in j:
            raise ValueError("osd bench output lacks %s" % k)
    n, size, s = int(j["bytes_written"]), int(j["blocksize"]), float(j["elapsed_sec"])
    if size <= 0 or n < size or n % size or s <= 0:
        raise ValueError("osd bench wrote %d bytes in blocks of %d in %.3f s" % (n, size, s))
    c = n // size
    return {"count": c, "seconds": s, "size": size, "ops_per_sec": c / s,
            "mb_per_sec": n / s / MB}


THROTTLE = "throttle-bluestore_throttle_bytes"


def throttle(before, after):
    """BlueStore's in-flight bound over one osd bench, from two `perf dump`s
    of the OSD (before and after it): the throttle every transaction takes
    its cost from (its bytes plus bluestore_throttle_cost_per_io) until it
    commits.  Its max over the cost per transaction is how many transactions
    it lets be in flight; waits > 0 say the bench reached that bound.  None
    when the dumps have no such throttle."""
    b, a = json.loads(before).get(THROTTLE), json.loads(after).get(THROTTLE)
    if not a or not b:
        return None
    gets, total = a["get"] - b["get"], a["get_sum"] - b["get_sum"]
    if gets <= 0 or total <= 0 or a["max"] <= 0:
        raise ValueError("%s took nothing over the bench (get %d, get_sum %d, max %d)"
                         % (THROTTLE, gets, total, a["max"]))
    per = total / gets
    wait_a, wait_b = a.get("wait") or {}, b.get("wait") or {}
    return {"throttle_max_bytes": a["max"], "throttle_bytes_per_txc": round(per, 1),
            "inflight_bound": int(a["max"] // per),
            "throttle_waits": wait_a.get("avgcount", 0) - wait_b.get("avgcount", 0),
            "throttle_wait_s": round(wait_a.get("sum", 0.0) - wait_b.get("sum", 0.0), 3)}


def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2) if n else None


def stats(v):
    """median, min, max and spread ((max - min) / median) of @v."""
    m = median(v)
    return {"median": m, "min": min(v), "max": max(v), "n": len(v),
            "spread": (max(v) - min(v)) / m if m else 0}


# The shapes, their figure of merit and the target on rawstore / BlueStore.
SHAPES = {"4k": ("ops_per_sec", 1.2), "64k": ("ops_per_sec", 1.2),
          "4m": ("mb_per_sec", 1.0)}


def cells(lines):
    """{(profile, shape, qd): cell} from the "peer_create" lines."""
    by = {}
    for p in lines:
        if p.get("kind") != "peer_create":
            continue
        k = (p["profile"], p["shape"], int(p["qd"]))
        by.setdefault(k, {}).setdefault(p["system"], {})[p["rep"]] = p
    out = {}
    for k, sysd in by.items():
        field, target = SHAPES.get(k[1], ("ops_per_sec", None))
        c = {"field": field, "target": target}
        for s, reps in sysd.items():
            c[s] = stats([r[field] for r in reps.values()])
            c[s + "_seconds"] = min(r["seconds"] for r in reps.values())
            c[s + "_count"] = median([r["count"] for r in reps.values()])
        bs, rs = sysd.get("bluestore", {}), sysd.get("rawstore", {})
        pairs = [rs[r][field] / bs[r][field] for r in sorted(bs) if r in rs and
                 bs[r][field] > 0]
        if pairs:
            c["ratio"] = stats(pairs)
        out[k] = c
    return out


# Backend to backend: rawstore against BlueStore's ObjectStore (osd bench,
# everything queued), the target per rawstore depth.
BACKEND_QDS = (16, 64, 256)
BACKEND_TARGETS = {"4k": {16: 1.0, 64: 1.5, 256: 1.5}, "64k": {16: 1.0, 64: 1.5, 256: 1.5},
                   "4m": {16: 1.0, 64: 1.0, 256: 1.0}}


def backend_cells(lines):
    """{(profile, shape, qd): cell} from the "peer_backend" lines: each
    rawstore depth against the one BlueStore ObjectStore figure of its
    profile, shape and repetition (the same object count)."""
    by = {}
    for p in lines:
        if p.get("kind") != "peer_backend":
            continue
        by.setdefault((p["profile"], p["shape"]), []).append(p)
    out = {}
    for (prof, shape), ps in by.items():
        field = SHAPES.get(shape, ("ops_per_sec", None))[0]
        bs = {p["rep"]: p for p in ps if p["system"] == "bluestore"}
        for q in sorted({int(p["qd"]) for p in ps if p["system"] == "rawstore"}):
            rs = {p["rep"]: p for p in ps if p["system"] == "rawstore" and int(p["qd"]) == q}
            c = {"field": field, "target": BACKEND_TARGETS.get(shape, {}).get(q)}
            if bs:
                c["bluestore"] = stats([r[field] for r in bs.values()])
                c["bluestore_seconds"] = min(r["seconds"] for r in bs.values())
                c["bluestore_count"] = median([r["count"] for r in bs.values()])
            c["rawstore"] = stats([r[field] for r in rs.values()])
            c["rawstore_seconds"] = min(r["seconds"] for r in rs.values())
            c["rawstore_count"] = median([r["count"] for r in rs.values()])
            pairs = [rs[r][field] / bs[r][field] for r in sorted(bs) if r in rs and
                     bs[r][field] > 0]
            if pairs:
                c["ratio"] = stats(pairs)
            out[(prof, shape, q)] = c
    return out


def verdict(c):
    """True (met), False (not met) or None (not measured): the median
    ratio and the lowest repetition's ratio both clear the target."""
    r = c.get("ratio")
    if not r or c.get("target") is None:
        return None
    return r["median"] >= c["target"] and r["min"] >= c["target"]


def main(argv):
    if len(argv) not in (3, 5) or argv[1] not in ("rados", "rawstore", "osdbench") or \
            (len(argv) == 5 and argv[1] != "osdbench"):
        print("usage: peer.py rados|rawstore|osdbench FILE (osdbench: [BEFORE AFTER])",
              file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        text = f.read()
    try:
        if argv[1] == "rados":
            print(json.dumps(rados(text)))
        elif argv[1] == "osdbench":
            j = osdbench(text)
            if len(argv) == 5:
                with open(argv[3]) as b, open(argv[4]) as a:
                    j["throttle"] = throttle(b.read(), a.read())
            print(json.dumps(j))
        else:
            for c in rawstore(text):
                print(json.dumps(c))
    except (ValueError, KeyError) as e:
        print("peer.py: %s: %s" % (argv[2], e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
