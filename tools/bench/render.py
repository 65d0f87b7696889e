#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The renderer of `make bench` (tools/bench/run.sh): the measurements in,
what is derived from them out: the Markdown tables, the charts' data and the
JSON with the derived sections.

    tools/bench/render.py cost RUNS.json JSON MARKDOWN SCALE.dat
        sluice-bench cost's measurements (every case's runs, counters and
        notes): the tables, cost-vs-keys.gp's data, the JSON with the
        differences, ratios, goals, scale and memory after them
    tools/bench/render.py e2e E2E.tsv MEM.tsv JSON MARKDOWN MPPS.dat
        e2e.sh's rows (one a run) and memory per key: the tables with the
        ratios and goals, mpps.gp's data, the JSON
    tools/bench/render.py accuracy RUNS.json JSON MARKDOWN
        sluice-bench accuracy's floods (times in ns, packets): each
        algorithm's bound, the ratios, validity and the goal, table and JSON
    tools/bench/render.py tccost RUNS.json JSON MARKDOWN
        sluice-bench tccost's runs (fs per packet, the kernel's ns) and
        counters: the shaper's cost table and the JSON with the medians
    tools/bench/render.py rules|fleet|spacing JSON MARKDOWN
        the JSON of rules.sh, fleet.sh, shape.sh (its "spacing"): their tables
    tools/bench/render.py page PAGE DIR [--check]
        every <!-- bench:NAME --> block of PAGE (docs/performance.md) made
        again from the run's files in DIR (docs/bench, make bench-page);
        --check: exit 1 naming the blocks that differ, the page untouched

Only python3's standard library. Numbers are printed as sluice-bench printed
them in C ("%.1f" of the exact run times, the fs_runs; JSON numbers "%.6g"),
and e2e.sh's as they came.
"""
import json
import math
import os
import re
import sys
import tempfile
import textwrap

NAN = float("nan")


# ---- JSON out, as libsluice's writer (user/lib/json.c) ----

def dump(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%.6g" % v if math.isfinite(v) else "null"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(dump(x) for x in v) + "]"
    return "{" + ",".join(json.dumps(k) + ":" + dump(x) for k, x in v.items()) + "}"


# ---- the cases ----

# The bench's own trust (issue 23). A case's spread is max - min of its
# runs; sluice-bench cost measures a case again (all its runs) while the
# spread is wider than SPREAD_LIMIT of its median ("spread_limit" in its
# JSON), at most "max_reruns" times, and a case still that wide is WIDE in
# the tables. A run is disturbed when it is more than DISTURB_LIMIT over the
# case's fastest run. A run the scheduler interrupted (sched_runs) is timed
# by the kernel's own count, which stops while the thread is scheduled out:
# it is counted apart, and disturbed only if its time is.
SPREAD_LIMIT = 0.20
DISTURB_LIMIT = 0.10


def trust(k, limit):
    """A case's spread, WIDE flag, disturbed and interrupted runs, into k."""
    ns = k["ns"]
    lo_ = min(ns) if ns else NAN
    k["spread"] = div(max(ns) - lo_, med(k)) if ns else NAN
    k["wide"] = len(ns) > 1 and max(ns) - lo_ > limit * med(k)
    k["disturbed"] = sum(1 for x in ns if x > (1 + DISTURB_LIMIT) * lo_)
    k["interrupted"] = sum(k["sched_runs"]) if "sched_runs" in k else None


class Cost:
    def __init__(self, doc):
        self.doc = doc
        self.cases = doc["cases"]
        self.limit = doc.get("spread_limit", SPREAD_LIMIT)
        for k in self.cases:
            k["ns"] = [fs / 1e6 for fs in k["fs_runs"]]
            trust(k, self.limit)
        self.quick = doc["quick"]
        self.algos = []
        for k in self.cases:
            if k["test"] == "T2a" and k["algo"] not in self.algos:
                self.algos.append(k["algo"])

    def find(self, test, table, fam, algo, keys=0):
        """algo: a name, "none", or 0 for the first algorithm (token bucket)."""
        if algo == 0:
            algo = self.algos[0]
        for k in self.cases:
            if (k["test"], k["table"], k["family"], k["algo"], k.get("keys", 0)) == \
                    (test, table, fam, algo, keys):
                return k
        return None


def med(k):
    if k is None:
        return NAN
    v = sorted(k["ns"])
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def lo(k):
    return min(k["ns"])


def hi(k):
    return max(k["ns"])


def div(a, b):
    """C's a / b of doubles: inf or nan where Python would raise."""
    if b == 0 or math.isnan(b):
        if math.isnan(a) or math.isnan(b) or a == 0:
            return NAN
        return math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


def cell(k):
    if k is None:
        return " - |"
    return " %.1f [%.1f-%.1f]%s |" % (med(k), lo(k), hi(k), inv(k))


def inv(k):
    """A case's flags: INVALID (its counters disagree), WIDE (its runs
    spread wider than the limit after every rerun)."""
    if k is None:
        return ""
    return ("" if k["valid"] else " INVALID") + (" WIDE" if k.get("wide") else "")


def disturbed(ks):
    """"d of n" runs of the cases ks disturbed, and their reruns."""
    ks = [k for k in ks if k is not None]
    d, n = sum(k["disturbed"] for k in ks), sum(len(k["ns"]) for k in ks)
    again = sum(k.get("reruns", 0) for k in ks)
    return "%d of %d%s" % (d, n, ", %d rerun%s" % (again, "s" if again > 1 else "")
                           if again else "")


def trust_notes(c, md, out):
    """What disturbed and WIDE mean, and which cases were measured again."""
    again = [k for k in c.cases if k.get("reruns", 0)]
    still = [k for k in c.cases if k["wide"]]
    name = lambda k: "%s %s IPv%d%s%s" % (
        k["table"], k["test"], k["family"], "" if k["algo"] == "none" else " " + k["algo"],
        " %u keys" % k["keys"] if k.get("keys") else "")
    md.append("Trust: a run is disturbed when it is more than %d%% over its case's fastest "
              "run. Spread: max - min of a case's runs. A case whose spread was over "
              "%d%% of its median was measured again, all its runs, at most %d times, the last "
              "measurement standing (the replaced runs are in the JSON); WIDE: still over it "
              "after that. %d of %d cases were measured again; %d %s WIDE%s\n\n" % (
                  round(DISTURB_LIMIT * 100), round(c.limit * 100),
                  c.doc.get("max_reruns", 0), len(again), len(c.cases), len(still),
                  "is" if len(still) == 1 else "are",
                  (": " + ", ".join("%s (%.0f%%)" % (name(k), 100 * k["spread"])
                                    for k in still)) + "." if still else "."))
    out["trust"] = {"disturb_limit": DISTURB_LIMIT, "spread_limit": c.limit,
                    "rerun_cases": len(again), "wide_cases": [name(k) for k in still],
                    "disturbed_runs": sum(k["disturbed"] for k in c.cases),
                    "interrupted_runs": sum(k["interrupted"] or 0 for k in c.cases),
                    "runs": sum(len(k["ns"]) for k in c.cases)}


FAMS = (4, 6)
TABLES = ("lru", "sets")


# ---- the tables ----

def main_table(c, md, out):
    d = c.doc
    md.append("### In-kernel cost per packet (BPF_PROG_TEST_RUN)\n\n")
    md.append("ns per packet (%s), median [min-max] of %d interleaved runs of %u packets; "
              "bpf_stats was %s while timing. T0 = bare XDP_DROP, T1 = parse only, T2a = "
              "one key under its limit, T2b = one key over it, T3 = a new key per packet "
              "into a full 1M-key table, T4 = T2a with 1,000 CIDR rules.\n\n" %
              ("wall clock / repeat" if d["wall"] else "kernel-reported, whole ns",
               d["runs"], d["repeat"],
               "ON (adds its own cost to every case)" if d["bpf_stats_enabled_during_timing"]
               else "off"))
    md.append("| fam | table | algo | T0 drop | T1 parse | T2a pass | T2b drop | T3 new key | "
              "T4 1000 rules | T2a-T1 | T2b-T1 | T3-T1 | T4-T2a | T2a/T0 | T3/T0 | disturbed "
              "runs |\n")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    derived = []
    worst_t2 = worst_t3 = 0.0
    for fam in FAMS:
        t0 = c.find("T0", "lru", fam, "none")
        t1 = c.find("T1", "lru", fam, "none")
        for t in TABLES:
            for a in c.algos:
                t2a, t2b = c.find("T2a", t, fam, a), c.find("T2b", t, fam, a)
                t3, t4 = c.find("T3", t, fam, a), c.find("T4", t, fam, a)
                d2a, d2b = med(t2a) - med(t1), med(t2b) - med(t1)
                d3, d4 = med(t3) - med(t1), med(t4) - med(t2a)
                md.append("| IPv%d | %s | %s |" % (fam, t, a) + cell(t0) + cell(t1) +
                          cell(t2a) + cell(t2b) + cell(t3) + cell(t4) +
                          " %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %s |\n" %
                          (d2a, d2b, d3, d4, div(med(t2a), med(t0)), div(med(t3), med(t0)),
                           disturbed((t0, t1, t2a, t2b, t3, t4))))
                derived.append({
                    "family": fam, "table": t, "algo": a, "t2a_minus_t1": d2a,
                    "t2b_minus_t1": d2b, "t3_minus_t1": d3, "t4_minus_t2a": d4,
                    "t1_over_t0": div(med(t1), med(t0)),
                    "t2a_over_t0": div(med(t2a), med(t0)),
                    "t2b_over_t0": div(med(t2b), med(t0)),
                    "t3_over_t0": div(med(t3), med(t0)),
                    "t4_over_t0": div(med(t4), med(t0))})
                if t != "lru":
                    continue  # the sets table has its own goals (below)
                # sliding-log's T2a is its drop path: judged by T2b alone
                if a != "sliding-log" and d2a > worst_t2:
                    worst_t2 = d2a
                if d2b > worst_t2:
                    worst_t2 = d2b
                if d3 > worst_t3:
                    worst_t3 = d3
    out["derived"] = derived
    fb = sum(k["fallbacks"] for k in c.cases)
    runs = sum(len(k["ns"]) for k in c.cases)
    if all(k["interrupted"] is not None for k in c.cases):
        md.append("\n%d of the %d timed runs above (%d of all %d, reruns' replaced runs "
                  "included) were interrupted by the scheduler and are timed by the kernel's "
                  "own count, whole ns + 0.5, which stops while the thread is scheduled out.\n\n"
                  % (sum(k["interrupted"] for k in c.cases), runs, fb,
                     runs + sum(len(k.get("discarded_fs_runs", [])) for k in c.cases)))
    else:
        md.append("\n%d of %d timed runs were interrupted by the scheduler and are timed by "
                  "the kernel's whole-ns count + 0.5.\n\n" % (fb, runs))
    out["fallback_runs"] = fb
    trust_notes(c, md, out)
    md.append("Notes:")
    for k in c.cases:
        if k["note"] and k["test"] != "scale":
            md.append("\n- %s %s IPv%d %s: %s%s" % (
                k["table"], k["test"], k["family"], "" if k["algo"] == "none" else k["algo"],
                k["note"], "" if k["valid"] else " (INVALID)"))
    md.append("\n- T3 and scale key IPv6 by /128: bench_vary_keys writes the low 32 "
              "bits of the address.\n- The sets table's T3, T3held and T3agg run into 1M "
              "keys of the packet's family, the LRU table's into 1M keys of both (the same "
              "1M-key capacity).\n\n")
    return worst_t2, worst_t3


def l4_table(c, md, out):
    """T5: 16 rules on the transport header against T2a, the same packet
    with none; the issue's goal: at most 15 ns more."""
    rows, worst = [], None
    for fam in FAMS:
        for t in TABLES:
            t2a, t5 = c.find("T2a", t, fam, 0), c.find("T5", t, fam, 0)
            if t5 is None:
                continue
            d = med(t5) - med(t2a)
            rows.append("| IPv%d | %s |%s%s %.1f |\n" % (fam, t, cell(t2a), cell(t5), d))
            worst = d if worst is None or d > worst else worst
    if not rows:
        return
    md.append("Rules on the transport header: T5 = T2a (token bucket) under 16 rules that "
              "match on UDP port 9, of which only the last one's CIDR holds the packet's "
              "source, so every rule's match holds it (the worst case of the bit vectors).\n\n"
              "| fam | table | T2a pass | T5 16 L4 rules | T5-T2a |\n|---|---|---|---|---|\n")
    md.extend(rows)
    md.append("\nGoal T5-T2a <= 15 ns: %s (worst %.1f ns).\n\n" %
              ("met" if worst <= 15.0 else "MISSED", worst))
    out.setdefault("goals", {})["worst_t5_minus_t2a"] = worst


def side_notes(c, md):
    tests = ("T0", "T1", "T2a", "T2b", "T3", "T4")
    for fam in FAMS:
        md.append("Program alone (bpf_stats run_time_ns / run_cnt, one clock read "
                  "included), token bucket, IPv%d:" % fam)
        for i, t in enumerate(tests):
            k = c.find(t, "lru", fam, "none" if i < 2 else 0)
            if k:
                md.append(" %s %.1f ns%s" % (t, k["prog_fs"] / 1e6,
                                             "," if i + 1 < len(tests) else "."))
        md.append("\n\n")
    for fam in FAMS:
        k, t1 = c.find("T3agg", "lru", fam, 0), c.find("T1", "lru", fam, "none")
        if k:
            md.append("T3agg IPv%d (T3, token bucket, with the new-key limit on: "
                      "1000/s, then aggregate buckets): %.1f [%.1f-%.1f] ns, %.1f ns "
                      "over T1.\n\n" % (fam, med(k), lo(k), hi(k), med(k) - med(t1)))
    for fam in FAMS:
        t2 = c.find("T2a", "lru", fam, 0)
        f0, f3 = c.find("T2fleet", "lru", fam, 0), c.find("T2fleet3", "lru", fam, 0)
        if t2 and f0 and f3:
            md.append("Fleet-wide policy, IPv%d (T2a, token bucket, marked --fleet; "
                      "every packet passes and adds its cost to sluice_fleet_use): no "
                      "agent %.1f ns (%+.1f over T2a), 3 boxes synced %.1f ns (%+.1f).\n\n" %
                      (fam, med(f0), med(f0) - med(t2), med(f3), med(f3) - med(t2)))


def tables_floor(c, md, out):
    """Issue 13's comparison: both tables and the floor, every difference taken
    over its own program's T1 (sluice's parse-only object for both tables,
    floor_parse for the floor), medians of the same rounds. The goals of the
    sets table: (T2a-T1) <= 1.1 x the floor's (T2-T1), T3-T1 <= 250 ns with
    the table full of free ways and full of held ones (sliding-log left out:
    its keys are in its LRU sluice_logs on both tables)."""
    md.append("### Both key tables and the floor (issue 13)\n\n")
    md.append("ns per packet over T1, medians of the same interleaved rounds. lru = "
              "sluice_buckets (--table lru, 1M keys for both families), sets = "
              "the set table (the default, --table sets: 1M keys a family: 262,144 sets of 4 ways in each of "
              "sluice_sets4/6). T1 is sluice's parse-only program for both tables. The "
              "floor (tools/bench/floor.bpf.c) parses the same frame, then one array lookup "
              "at a multiplicative hash of the address, a compare, bpf_ktime_get_ns and "
              "one CAS: T1 parse only, T2 one hot key, T3 a random key into 1M slots of "
              "64 B, T2 with SipHash-1-3 the hot key with the sets table's hash in place of "
              "the cheap one; its differences are over its own T1. T3 sets free: the table full "
              "of keys under their limit; T3 sets held: every way a key with a debt "
              "(TATs an hour ahead and more; the new keys a 1/hour policy's), so every "
              "claim evicts by smallest debt. The algorithms' T3 cases share these two "
              "tables, and each timed run starts from the table as it was filled (its "
              "family's sets copied back): before make bench run 2026-12-08, the keys a "
              "window algorithm's run left, unfree until their window ended, made the "
              "next runs' claims of every algorithm dearer, round after round.\n\n")
    md.append("| fam | floor T1 | floor T2 | floor T3 | floor T2-T1 | floor T3-T1 | floor "
              "T2 with SipHash-1-3 | its T2-T1 | the hash adds | disturbed runs |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n")
    for fam in FAMS:
        p, h = c.find("T1", "floor", fam, "none"), c.find("T2", "floor", fam, "none")
        r, sip = c.find("T3", "floor", fam, "none"), c.find("T2sip", "floor", fam, "none")
        md.append("| IPv%d |" % fam + cell(p) + cell(h) + cell(r) +
                  " %.1f | %.1f |" % (med(h) - med(p), med(r) - med(p)) + cell(sip) +
                  " %.1f | %.1f | %s |\n" % (med(sip) - med(p), med(sip) - med(h),
                                             disturbed((p, h, r, sip))))
    tables_rows(c, md, out)


def tables_rows(c, md, out):
    """Both tables against the floor per family and algorithm, and the sets
    table's goals."""
    md.append("\n| fam | algo | lru T2a-T1 | sets T2a-T1 | floor T2-T1 | sets/floor "
              "(T2a) | lru T2b-T1 | sets T2b-T1 | lru T3-T1 | sets T3-T1 free | sets "
              "T3-T1 held | floor T3-T1 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    rows = []
    worst_ratio = worst_t3 = 0.0
    tb_ratio = [NAN, NAN]
    for f, fam in enumerate(FAMS):
        t1 = c.find("T1", "lru", fam, "none")
        p = c.find("T1", "floor", fam, "none")
        fl2 = med(c.find("T2", "floor", fam, "none")) - med(p)
        fl3 = med(c.find("T3", "floor", fam, "none")) - med(p)
        for a in c.algos:
            l2a, s2a = c.find("T2a", "lru", fam, a), c.find("T2a", "sets", fam, a)
            l2b, s2b = c.find("T2b", "lru", fam, a), c.find("T2b", "sets", fam, a)
            l3, s3 = c.find("T3", "lru", fam, a), c.find("T3", "sets", fam, a)
            s3h = c.find("T3held", "sets", fam, a)
            ratio = div(med(s2a) - med(t1), fl2)
            ok = bool(s2a and s2a["valid"] and l2a and l2a["valid"])
            md.append("| IPv%d | %s | %.1f%s | %.1f%s | %.1f | %.2f | %.1f%s | %.1f%s | "
                      "%.1f%s | %.1f%s | %.1f%s | %.1f |\n" % (
                          fam, a, med(l2a) - med(t1), inv(l2a), med(s2a) - med(t1), inv(s2a),
                          fl2, ratio, med(l2b) - med(t1), inv(l2b), med(s2b) - med(t1),
                          inv(s2b), med(l3) - med(t1), inv(l3), med(s3) - med(t1), inv(s3),
                          med(s3h) - med(t1), inv(s3h), fl3))
            row = {"family": fam, "algo": a,
                   "lru_t2a_minus_t1": med(l2a) - med(t1),
                   "sets_t2a_minus_t1": med(s2a) - med(t1),
                   "lru_t2b_minus_t1": med(l2b) - med(t1),
                   "sets_t2b_minus_t1": med(s2b) - med(t1),
                   "floor_t2_minus_t1": fl2, "sets_over_floor_t2": ratio,
                   "lru_t3_minus_t1": med(l3) - med(t1),
                   "sets_t3_minus_t1": med(s3) - med(t1)}
            if s3h:
                row["sets_t3held_minus_t1"] = med(s3h) - med(t1)
            row["floor_t3_minus_t1"] = fl3
            row["valid"] = ok
            rows.append(row)
            if a == "sliding-log":
                continue
            if a == c.algos[0]:
                tb_ratio[f] = ratio
            if ratio > worst_ratio:
                worst_ratio = ratio
            if med(s3) - med(t1) > worst_t3:
                worst_t3 = med(s3) - med(t1)
            if s3h and med(s3h) - med(t1) > worst_t3:
                worst_t3 = med(s3h) - med(t1)
    out["tables"] = rows
    met = tb_ratio[0] <= 1.1 and tb_ratio[1] <= 1.1
    md.append("\nGoals of the sets table: (T2a-T1) / floor (T2-T1) <= 1.1: token bucket "
              "IPv4 %.2f, IPv6 %.2f: %s (worst of the bucket and window algorithms %.2f). " %
              (tb_ratio[0], tb_ratio[1], "met" if met else "MISSED", worst_ratio))
    if c.quick:
        md.append("T3 not run (-q).\n\n")
    else:
        md.append("T3-T1 <= 250 ns (free and held, sliding-log left out): %s (worst "
                  "%.1f ns).\n\n" % ("met" if worst_t3 <= 250.0 else "MISSED", worst_t3))
    goals = {"t2_over_floor_token_bucket_v4": tb_ratio[0],
             "t2_over_floor_token_bucket_v6": tb_ratio[1],
             "t2_over_floor_worst": worst_ratio, "t2_over_floor_le_1_1": met}
    if not c.quick:
        goals["worst_t3_minus_t1"] = worst_t3
        goals["t3_minus_t1_le_250ns"] = worst_t3 <= 250.0
    out["sets_goals"] = goals
    issue23_goals(c, md, out)


# Issue 23's goal 1: (T2a-T1) over the floor's (T2-T1), by algorithm.
HOT_WANT = {"token-bucket": 1.25, "leaky-bucket": 1.25, "fixed-window": 1.5,
            "sliding-window": 1.5, "sliding-log": 2.0}


def issue23_goals(c, md, out):
    """Issue 23, goals 1 and 2, from the same rounds: one hot key on either
    table within 1.25x the floor's T2-T1 (the windows 1.5x, the sliding log
    2x), the drop path (T2b-T1) at most 10% over the pass path (T2a-T1),
    and a new key on the set table (free and held) within 1.15x the floor's
    T3-T1 (not under -q)."""
    md.append("\n#### Issue 23: the packet path against the floor\n\n"
              "hot: (T2a-T1) / floor (T2-T1), want %s; drop: (T2b-T1) / (T2a-T1), want "
              "<= 1.10; new key: sets (T3-T1) / floor (T3-T1), free and held, want <= 1.15. "
              "Every ratio is of this run's medians.\n\n" %
              ", ".join("%s <= %.2f" % (a, w) for a, w in HOT_WANT.items()))
    md.append("| table | fam | algo | hot | | drop | | new key free | new key held | |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n")
    rows, met = [], {"hot": True, "drop": True, "new_key": True}
    for table in TABLES:
        for fam in FAMS:
            t1 = med(c.find("T1", "lru", fam, "none"))
            p = med(c.find("T1", "floor", fam, "none"))
            fl2 = med(c.find("T2", "floor", fam, "none")) - p
            fl3 = med(c.find("T3", "floor", fam, "none")) - p
            for a in c.algos:
                a2, b2 = c.find("T2a", table, fam, a), c.find("T2b", table, fam, a)
                if not a2 or not b2:
                    continue
                hot = div(med(a2) - t1, fl2)
                drop = div(med(b2) - t1, med(a2) - t1)
                want = HOT_WANT.get(a, 1.25)
                hot_ok, drop_ok = hot <= want, drop <= 1.10
                met["hot"] = met["hot"] and hot_ok
                met["drop"] = met["drop"] and drop_ok
                row = {"table": table, "family": fam, "algo": a, "hot": hot, "hot_want": want,
                       "drop": drop}
                cells = ["-", "-", ""]
                if table == "sets" and not c.quick and a != "sliding-log":
                    f3, h3 = c.find("T3", table, fam, a), c.find("T3held", table, fam, a)
                    nf = div(med(f3) - t1, fl3) if f3 else NAN
                    nh = div(med(h3) - t1, fl3) if h3 else NAN
                    ok = nf <= 1.15 and nh <= 1.15
                    met["new_key"] = met["new_key"] and ok
                    cells = ["%.2f" % nf, "%.2f" % nh, "met" if ok else "MISSED"]
                    row.update({"new_key_free": nf, "new_key_held": nh})
                md.append("| %s | IPv%d | %s | %.2f | %s | %.2f | %s | %s | %s | %s |\n" % (
                    table, fam, a, hot, "met" if hot_ok else "MISSED", drop,
                    "met" if drop_ok else "MISSED", *cells))
                rows.append(row)
    if c.quick:
        met.pop("new_key")
        md.append("\nNew keys (T3) not run (-q).\n")
    md.append("\nIssue 23: hot %s, drop %s%s.\n\n" % (
        "met" if met["hot"] else "MISSED", "met" if met["drop"] else "MISSED",
        "" if c.quick else ", new key %s" % ("met" if met["new_key"] else "MISSED")))
    out["issue23"] = {"rows": rows, "met": met}


def scale(c, md, dat, out):
    md.append("### Cost per packet against key count (token bucket, both tables)\n\n")
    md.append("Each row is its own object per table and family: lru a 1M-key "
              "sluice_buckets, sets 1M keys of the family (262,144 sets), both first "
              "filled with the first 1M keys the packets ask for (sets: those with room "
              "in one of their two groups of 4 sets; the rest are claimed by the packets). Medians "
              "[min-max].\n\n")
    md.append("| keys | lru IPv4 ns | sets IPv4 ns | lru IPv6 ns | sets IPv6 ns | lru IPv4 "
              "new keys | sets IPv4 new keys | lru IPv6 new keys | sets IPv6 new keys | "
              "IPv4 sets/lru |\n|---|---|---|---|---|---|---|---|---|---|\n")
    dat.append("# keys v4_median v4_min v4_max v6_median v6_min v6_max t0_v4 "
               "sets_v4_median sets_v4_min sets_v4_max sets_v6_median sets_v6_min "
               "sets_v6_max\n")
    keys = []
    for k in c.cases:
        if k["test"] == "scale" and k["keys"] not in keys:
            keys.append(k["keys"])
    rows = []
    t0 = c.find("T0", "lru", 4, "none")

    def newpct(k):
        return 100.0 * k["new_keys"] / k["packets"]

    for n in keys:
        k4, k6 = c.find("scale", "lru", 4, 0, n), c.find("scale", "lru", 6, 0, n)
        s4, s6 = c.find("scale", "sets", 4, 0, n), c.find("scale", "sets", 6, 0, n)
        md.append("| %u |" % n + cell(k4) + cell(s4) + cell(k6) + cell(s6) +
                  " %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f |\n" %
                  (newpct(k4), newpct(s4), newpct(k6), newpct(s6), div(med(s4), med(k4))))
        dat.append("%u %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n" % (
            n, med(k4), lo(k4), hi(k4), med(k6), lo(k6), hi(k6), med(t0),
            med(s4), lo(s4), hi(s4), med(s6), lo(s6), hi(s6)))
        rows.append({"keys": n, "lru_v4": med(k4), "sets_v4": med(s4), "lru_v6": med(k6),
                     "sets_v6": med(s6), "sets_v4_prefilled": s4.get("prefilled", 0),
                     "sets_v6_prefilled": s6.get("prefilled", 0)})
    out["scale"] = rows
    md.append("\nThe sets prefill placed %u IPv4 and %u IPv6 keys of the 1M (a key whose "
              "two groups are both full is left out).\n\n" %
              (c.find("scale", "sets", 4, 0, 1).get("prefilled", 0),
               c.find("scale", "sets", 6, 0, 1).get("prefilled", 0)))
    for k in c.cases:
        if not k["valid"] and k["test"] == "scale":
            md.append("- INVALID: %s scale IPv%d %u keys: %s\n" %
                      (k["table"], k["family"], k["keys"], k["note"]))
    md.append("\n")
    return len([k for k in c.cases if k["test"] == "scale" and k["table"] == "lru"])


def memory(c, md, out, nobj):
    md.append("### sluice memory per key\n\nThe maps' memory as libsluice counts it "
              "(sluice_map_bytes()), over the keys they hold.\n\n| map | entries | keys | "
              "bytes | bytes per key |\n|---|---|---|---|---|\n")
    mem = c.doc["memory_maps"]
    rows = []
    for m in mem:
        bpk = div(float(m["bytes"]), m["keys"])
        md.append("| %s | %u | %u | %u | %.1f |\n" %
                  (m["map"], m["entries"], m["keys"], m["bytes"], bpk))
        rows.append({"map": m["map"], "entries": m["entries"], "keys": m["keys"],
                     "bytes": m["bytes"], "bytes_per_key": bpk})
    out["memory"] = rows
    if len(mem) >= 4:
        b4 = mem[2]["bytes"] / mem[2]["keys"]
        b6 = mem[3]["bytes"] / mem[3]["keys"]
        md.append("\nGoals of the sets table: bytes per key <= 32 (IPv4): %.1f, %s; "
                  "<= 48 (IPv6): %.1f, %s. The LRU table: %.1f a key of either family.\n" %
                  (b4, "met" if b4 <= 32.0 else "MISSED", b6, "met" if b6 <= 48.0 else "MISSED",
                   mem[0]["bytes"] / mem[0]["keys"]))
        out["bytes_per_key_goals"] = {"sets_v4": b4, "sets_v6": b6,
                                      "sets_v4_le_32": b4 <= 32.0, "sets_v6_le_48": b6 <= 48.0}
    avail = c.doc["mem_available_kb"]
    delta = (avail[0] - avail[1], avail[1] - avail[2])
    keys = float(nobj * c.doc["table_keys"])
    if mem:
        md.append("\nMemAvailable fell by %d kB while the %d lru scale objects (a "
                  "1M-key table each) were loaded, %.1f bytes per key, and by %d kB for the %d "
                  "sets ones (1M keys of one family each: half IPv4, half IPv6), %.1f bytes per "
                  "key (both include the programs and their other maps; other activity on the "
                  "machine adds noise).\n\n" %
                  (delta[0], nobj, delta[0] * 1024.0 / keys, delta[1], nobj,
                   delta[1] * 1024.0 / keys))
    out["meminfo_bytes_per_key"] = div(delta[0] * 1024.0, keys)
    out["sets_meminfo_bytes_per_key"] = div(delta[1] * 1024.0, keys)


def render_cost(runs_path, json_path, md_path, dat_path, sections=None):
    """sections: a dict that gets the Markdown of each part apart (the
    page's blocks cost, cost-tables, cost-scale, cost-memory)."""
    with open(runs_path) as f:
        doc = json.load(f)
    c = Cost(doc)
    out = {k: v for k, v in doc.items() if k != "memory_maps"}
    md, dat = [], []
    marks = [("cost", 0)]
    worst_t2, worst_t3 = main_table(c, md, out)
    l4_table(c, md, out)
    side_notes(c, md)
    md.append("LRU table: goal T2-T1 <= 40 ns: %s (worst %.1f ns). " %
              ("met" if worst_t2 <= 40.0 else "MISSED", worst_t2))
    if c.quick:
        md.append("T3 not run (-q).\n\n")
    else:
        md.append("Goal T3-T1 <= 250 ns: %s (worst %.1f ns).\n\n" %
                  ("met" if worst_t3 <= 250.0 else "MISSED", worst_t3))
    out.setdefault("goals", {}).update({
        "worst_t2_minus_t1": worst_t2, "t2_minus_t1_le_40ns": worst_t2 <= 40.0,
        "worst_t3_minus_t1": worst_t3, "t3_minus_t1_le_250ns": worst_t3 <= 250.0})
    marks.append(("cost-tables", len(md)))
    tables_floor(c, md, out)
    nobj = 0
    marks.append(("cost-scale", len(md)))
    if not c.quick:
        nobj = scale(c, md, dat, out)
    marks.append(("cost-memory", len(md)))
    memory(c, md, out, nobj)
    if sections is not None:
        for i, (name, at) in enumerate(marks):
            end = marks[i + 1][1] if i + 1 < len(marks) else len(md)
            sections[name] = "".join(md[at:end])
    for k in out["cases"]:
        del k["ns"]
    with open(json_path, "w") as f:
        f.write(dump(out) + "\n")
    with open(md_path, "w") as f:
        f.write("".join(md))
    with open(dat_path, "w") as f:
        f.write("".join(dat))


# ---- e2e: Markdown, JSON, ratios and goals from e2e.sh's TSV ----

def read_tsv(path):
    with open(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip("\n")]
    return lines[0], lines[1:]


def num(v):
    """awk's v + 0: the leading number of a string, else 0."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", v)
    return float(m.group(0)) if m else 0.0


def json_row(head, row):
    """Every column by name; a number as it is written, the rest as strings."""
    fields = []
    for h, v in zip(head, row):
        if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v):
            fields.append('"%s":%s' % (h, v))
        else:
            fields.append('"%s":"%s"' % (h, v.replace('"', '\\"')))
    return "{" + ",".join(fields) + "}"


# A row whose Mpps is within BOUND_LIMIT of its flood's ceiling (the same
# flood into a bare XDP_DROP, same CPUs, same run) is generator-bound: the
# sender set its rate, and it says nothing of the receiver's cost.
BOUND_LIMIT = 0.10
# Each flood's ceiling, floor and sluice rows (e2e.sh), as (system, flood).
CEILING = {"1": "xdp-drop", "256": "xdp-drop-256", "1M": "xdp-drop-random"}
FLOOR = {"1": ("floor", "sluice", "sluice-sets"),
         "256": ("floor-256", "sluice-256", "sluice-sets-256"),
         "1M": ("floor-random", "sluice-random", "sluice-sets-random")}
FLOOD_NAME = {"1": "one source", "256": "256 sources", "1M": "1M sources"}


def flood_of(system):
    """The flood a system's row was sent (e2e.sh's choice), for rows of a
    TSV written before e2e.sh named it."""
    if system.endswith("-random") or system in ("sluice-newkeys", "sluice-sets-random-2x"):
        return "1M"
    return "256" if system.endswith("-256") else "1"


class E2e:
    """e2e.sh's rows, by column name: Mpps and validity by (system, CPUs),
    systems in order, each row's ceiling and whether it is generator-bound."""

    def __init__(self, head, rows):
        self.rows = []
        for f in rows:
            r = dict(zip(head, f))
            r.setdefault("flood", flood_of(r["system"]))
            r.setdefault("via", "-")
            self.rows.append(r)
        self.by, self.order = {}, []
        for r in self.rows:
            self.by[(r["system"], r["cpus"])] = r
            if r["system"] not in self.order:
                self.order.append(r["system"])
        for r in self.rows:
            c = self.by.get((CEILING.get(r["flood"], ""), r["cpus"]))
            r["ceiling"] = num(c["mpps"]) if c and c["valid"] == "yes" else 0.0
            r["of_ceiling"] = ratio(num(r["mpps"]), r["ceiling"])
            r["bound"] = bound(num(r["mpps"]), r["ceiling"])
            r["is_ceiling"] = c is r
            r["spread"] = window_spread(r["note"])
        for r in self.rows:
            c = self.by.get((CEILING.get(r["flood"], ""), r["cpus"]))
            r["ceiling_unsteady"] = bool(c) and c["spread"] > SPREAD_LIMIT
        self.goals = []

    def has(self, s, c):
        return (s, str(c)) in self.by

    def m(self, s, c):
        return num(self.by[(s, str(c))]["mpps"]) if self.has(s, c) else 0.0

    def ok(self, s, c):
        return self.has(s, c) and self.by[(s, str(c))]["valid"] == "yes"

    def gb(self, c, *systems):
        """The systems of systems whose row at c CPUs is generator-bound."""
        return [s for s in systems if self.has(s, c) and self.by[(s, str(c))]["bound"]]

    def goal(self, md, name, val, want, good, bound_by=()):
        """A goal's row; bound_by: its generator-bound rows (then the ratio
        is the generator's, not the systems')."""
        gb = ", ".join(bound_by)
        md.append("| %s | %.2f | %s | %s | %s |\n" % (
            name, val, want, "met" if good else "MISSED",
            "**generator-bound**: " + gb if gb else "no"))
        self.goals.append('{"goal":"%s","value":%.4f,"want":"%s","met":%s,'
                          '"generator_bound":[%s]}' % (
                              name, val, want, "true" if good else "false",
                              ",".join('"%s"' % s for s in bound_by)))


def window_spread(note):
    """The spread (max - min over the median) of a row's one-second rates,
    from e2e.sh's note ("...; 1-s rates A B C"); NAN without them."""
    m = re.search(r"1-s rates ([0-9. ]+)$", note)
    v = sorted(num(x) for x in m.group(1).split()) if m else []
    if not v:
        return NAN
    n = len(v)
    return div(v[-1] - v[0], v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def bound(mpps, ceiling):
    """Is a row of mpps generator-bound under this ceiling (within
    BOUND_LIMIT of it, or over it)? No ceiling: not known, False."""
    return ceiling > 0 and mpps >= (1 - BOUND_LIMIT) * ceiling


def ratio(a, b):
    return a / b if b > 0 else 0.0


def bound_cell(r):
    if r["is_ceiling"]:
        return "the ceiling"
    if r["ceiling"] <= 0:
        return "no ceiling"
    return ("**generator-bound**" if r["bound"] else "no") + \
        (" (its ceiling unsteady)" if r["ceiling_unsteady"] else "")


def e2e_rows(e, md):
    md.append("### End to end: receive side of a veth pair (sluice-gen)\n\n")
    md.append("Mpps: packets the receiver took in per second over three 1-s "
              "windows (the median), bpf_stats off; via: how sluice-gen sent (live-frames: "
              "BPF_PROG_TEST_RUN live frames; socket: a packet socket, where the kernel "
              "refuses live frames, slower and through the sender's transmit path); "
              "ceiling: the same flood into a bare XDP_DROP, same CPUs, same run (the "
              "generator's own ceiling); generator-bound: within %d%% of that ceiling or "
              "over it, so the sender, not the receiver, set the rate; prog ns: "
              "run_time_ns / run_cnt of its XDP program in a 1 s window after it, bpf_stats "
              "on; softirq ns: softirq CPU time per packet received (/proc/stat, all CPUs, "
              "10 ms ticks: the receive path runs as softirq on the sending CPU); 1-s spread: "
              "max - min of the one-second rates over their median, **unsteady** over %d%% "
              "(the machine's other work moved the rate during the row). Floods: "
              "one source (198.18.0.1), 256 sources (of 198.19.0.0/16), 1M sources (of "
              "2001:2::/48, IPv6).\n\n" % (round(BOUND_LIMIT * 100),
                                              round(SPREAD_LIMIT * 100)))
    md.append("| system | flood | family | CPUs | via | Mpps | 1-s spread | ceiling Mpps | of "
              "ceiling | generator-bound | sent Mpps | prog ns/pkt | softirq ns/pkt | dropped "
              "(whole run) | passed | valid | check |\n")
    md.append("|---" * 17 + "|\n")
    for r in e.rows:
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                  "| %s | %s |\n" % (
                      r["system"], r["flood"], r["family"], r["cpus"], r["via"], r["mpps"],
                      "-" if math.isnan(r["spread"]) else "%.0f%%%s" % (
                          100 * r["spread"], " **unsteady**" if r["spread"] > SPREAD_LIMIT
                          else ""),
                      "%.3f" % r["ceiling"] if r["ceiling"] > 0 else "-",
                      "%.0f%%" % (100 * r["of_ceiling"]) if r["ceiling"] > 0 else "-",
                      bound_cell(r), r["sent_mpps"], r["prog_ns"], r["softirq_ns"],
                      r["dropped"], r["passed"],
                      "yes" if r["valid"] == "yes" else "**INVALID**", r["note"]))
    nb = sum(1 for r in e.rows if r["bound"] and not r["is_ceiling"])
    vias = sorted({r["via"] for r in e.rows})
    md.append("\n%d of %d rows (the ceilings left out) are generator-bound; %d of %d rows are "
              "unsteady; sent via %s.\n" % (
                  nb, len([r for r in e.rows if not r["is_ceiling"]]),
                  sum(1 for r in e.rows if r["spread"] > SPREAD_LIMIT), len(e.rows),
                  ", ".join(vias)))
    md.append("\n| 2-CPU / 1-CPU | ratio |\n|---|---|\n")
    for s in e.order:
        if e.m(s, 1) > 0 and e.m(s, 2) > 0:
            md.append("| %s | %.2f |\n" % (s, e.m(s, 2) / e.m(s, 1)))


def e2e_floor(e, md):
    """Issue 23: sluice on each table against the floor, the same flood,
    same CPUs, in Mpps."""
    rows = []
    for fl in ("1", "256", "1M"):
        f, lru, sets = FLOOR[fl]
        for c in (1, 2):
            if not e.has(f, c):
                continue
            ce = e.by[(f, str(c))]["ceiling"]
            rows.append("| %s | %s | %s | %.3f | %.3f | %.2f | %.3f | %.2f | %s |\n" % (
                FLOOD_NAME[fl], c, "%.3f" % ce if ce > 0 else "-", e.m(f, c), e.m(lru, c),
                ratio(e.m(lru, c), e.m(f, c)), e.m(sets, c), ratio(e.m(sets, c), e.m(f, c)),
                ", ".join(e.gb(c, f, lru, sets)) or "none"))
    if not rows:
        return
    md.append("\n#### sluice against the floor, end to end\n\nThe floor "
              "(tools/bench/floor.bpf.c, floor_drop) as the receiver's XDP program: parse, one "
              "array lookup at a hash of the source, a compare, the clock, one CAS, XDP_DROP. "
              "lru: sluice, sets: sluice --table sets, each dropping the same flood (one "
              "source: 1000/s burst 1000; 256 sources: 10/s burst 10 each; 1M sources: 1/m "
              "burst 1 each, so each source's first packet passes).\n\n"
              "| flood | CPUs | ceiling Mpps | floor Mpps | lru Mpps | lru / floor | sets Mpps "
              "| sets / floor | generator-bound rows |\n|---|---|---|---|---|---|---|---|---|\n")
    md.extend(rows)


def e2e_goals(e, md):
    md.append("\n| goal | value | want | | generator-bound |\n|---|---|---|---|---|\n")
    for c in (1, 2):
        if not e.has("xdp-drop", c):
            continue
        for name, s, want, lim in (("(b) sluice", "sluice", ">= 0.85", 0.85),
                                   ("(c) sluice-random", "sluice-random", ">= 0.50", 0.5)):
            if not e.has(s, c):
                continue
            cl = CEILING[flood_of(s)]
            cl = cl if e.has(cl, c) else "xdp-drop"  # a TSV from before its own ceiling
            r = ratio(e.m(s, c), e.m(cl, c))
            e.goal(md, "%s / (a) %s, %d CPU" % (name, cl, c), r, want,
                   e.ok(s, c) and e.ok(cl, c) and r >= lim, e.gb(c, s))
        for other in ("nft-meter", "hashlimit"):
            if not e.has(other, c):
                continue
            r = ratio(e.m("sluice", c), e.m(other, c))
            e.goal(md, "sluice / %s, %d CPU" % (other, c), r, ">= 4",
                   e.ok("sluice", c) and e.ok(other, c) and r >= 4, e.gb(c, "sluice", other))
    # issue 23, goal 5: sluice (both tables) at least 0.95x the floor's Mpps
    for fl in ("1", "256"):
        f = FLOOR[fl][0]
        for c in (1, 2):
            for t, s in zip(("lru", "sets"), FLOOR[fl][1:]):
                if e.has(f, c) and e.has(s, c):
                    r = ratio(e.m(s, c), e.m(f, c))
                    e.goal(md, "%s / floor, %s, %d CPU" % (t, FLOOD_NAME[fl], c), r, ">= 0.95",
                           e.ok(s, c) and e.ok(f, c) and r >= 0.95, e.gb(c, s, f))
    # issue 23, goal 6: the sets table, 1M-source flood, against the LRU table
    for c in (1, 2):
        if not e.has("sluice-sets-random", c):
            continue
        r = ratio(e.m("sluice-sets-random", c), e.m("sluice-random", c))
        e.goal(md, "sets random / lru random (1M sources), %d CPU" % c, r, ">= 2",
               e.ok("sluice-sets-random", c) and e.ok("sluice-random", c) and r >= 2,
               e.gb(c, "sluice-sets-random", "sluice-random"))
    for s in ("sluice", "sluice-random"):
        if e.m(s, 1) > 0 and e.m(s, 2) > 0:
            r = e.m(s, 2) / e.m(s, 1)
            e.goal(md, s + " 2-CPU / 1-CPU", r, ">= 1.6", e.ok(s, 1) and e.ok(s, 2) and r >= 1.6,
                   ["%s, %d CPU" % (x, n) for n in (1, 2) for x in e.gb(n, s)])
    md.append("\nA goal whose rows are generator-bound is the sender's figure: met or "
              "MISSED, it says nothing of the systems compared.\n\n")


def e2e_memory(mem, md):
    md.append("### Memory per key (1M-source random flood, 2 CPUs)\n\n")
    md.append("| system | keys | kB | bytes per key | measured as |\n|---|---|---|---|---|\n")
    for f in mem:
        md.append("| %s | %s | %s | %s | %s |\n" % tuple(f[:5]))
    md.append("\nSlab and vmalloc growth is read from /proc/meminfo: other activity on the\n"
              "machine moves it too.\n\n")


def render_e2e(tsv_path, mem_path, json_path, md_path, dat_path):
    head, rows = read_tsv(tsv_path)
    _, mem = read_tsv(mem_path)
    e = E2e(head, rows)
    md = []
    e2e_rows(e, md)
    e2e_floor(e, md)
    e2e_goals(e, md)
    e2e_memory(mem, md)
    with open(md_path, "w") as f:
        f.write("".join(md))
    mem_json = ['{"system":"%s","keys":%s,"kb":%s,"bytes_per_key":%s,"basis":"%s"}' %
                tuple(f[:5]) for f in mem]
    bounds = [dump({"system": r["system"], "cpus": int(num(r["cpus"])), "ceiling_mpps":
                    r["ceiling"], "of_ceiling": r["of_ceiling"], "generator_bound": r["bound"],
                    "window_spread": r["spread"], "unsteady": r["spread"] > SPREAD_LIMIT})
              for r in e.rows]
    with open(json_path, "w") as f:
        f.write('{"rows":[%s],"bound_limit":%s,"ceilings":[%s],"memory":[%s],"goals":[%s]}\n' % (
            ",".join(json_row(head, r) for r in rows), dump(BOUND_LIMIT), ",".join(bounds),
            ",".join(mem_json), ",".join(e.goals)))
    # Chart data: Mpps per system, one column per CPU count; a system with an
    # invalid row gets a "*" (its own counters disagree with what it should do).
    bad = {r["system"] for r in e.rows if r["valid"] != "yes"}
    with open(dat_path, "w") as f:
        f.write("# system mpps_1cpu mpps_2cpu\n")
        for s in e.order:
            f.write("%s%s %s %s\n" % (s, "*" if s in bad else "",
                                       e.by[(s, "1")]["mpps"] if e.has(s, 1) else 0,
                                       e.by[(s, "2")]["mpps"] if e.has(s, 2) else 0))


# ---- accuracy: sluice-bench accuracy's floods against each algorithm's bound ----

def llround(x):
    """C's llround (and jq's round): halves away from zero."""
    r = math.floor(abs(x))
    return int(math.copysign(int(r) + (1 if abs(x) - r >= 0.5 else 0), x))


def acc_model(k, first, last):
    """What the algorithm may admit between first and last (ns), as the
    brief's yardstick rate x t + burst for the buckets (GCRA is exact)."""
    t = (last - first) / 1e9
    w = k.get("window_ns", 0)
    burst, rate = float(k["burst_or_limit"]), float(k["rate"])
    if k["algo"] == "fixed-window":
        return burst * float(last // w - first // w + 1)
    if k["algo"] == "sliding-window":
        boundary = (first // w + 1) * w
        return burst + rate * float((last - boundary) % (1 << 64)) / 1e9
    if k["algo"] == "sliding-log":
        return burst * (math.floor(t / (w / 1e9)) + 1)
    return rate * t + burst


def acc_run(k, r):
    """One flood of a case: its time, bounds, ratios and validity."""
    burst, rate = k["burst_or_limit"], k["rate"]
    w = k.get("window_ns", 0)
    # the longest pause that loses nothing: a flooded bucket holds
    # (burst - 1) x interval of slack; a pause delays a window's admissions,
    # or a log slot's reuse
    slack = (w / 1e9) / 4 if w else float(burst - 1) / float(rate)
    t = (r["last_ns"] - r["first_ns"]) / 1e9
    naive = float(rate) * t + float(burst)
    model = acc_model(k, r["first_ns"], r["last_ns"])
    gap = r["max_pause_ns"] / 1e9
    # offered at least 1.5 times what may pass, and every packet counted by
    # the rule: the flood really was a flood of this rule
    saturated = float(r["offered"]) >= 1.5 * naive and r["counted"] == r["offered"]
    steady = gap < slack
    return {"t": t, "naive": naive, "model": model, "gap": gap, "slack": slack,
            "saturated": saturated, "steady": steady,
            "ratio": r["admitted"] / naive, "ratio_model": r["admitted"] / model,
            "valid": saturated and steady}


def acc_cell(r, d, first):
    s = " %.2f |" % d["t"] if first else ""
    s += " %u | %.4f | %.4f" % (r["admitted"], d["ratio"], d["ratio_model"])
    if not d["saturated"]:
        s += " (offered %u: not a flood, INVALID)" % r["offered"]
    elif not d["steady"]:
        s += " (the flood paused %.0f ms > %.0f ms of slack: INVALID)" % (
            1e3 * d["gap"], 1e3 * d["slack"])
    return s + " |"


def acc_row(k, md, runs_out):
    """One case's row; its floods' JSON into runs_out. The worst model error
    of its valid floods, and whether every flood was valid."""
    worst, valid = 0.0, True
    w = k.get("window_ns", 0)
    md.append(" %u%s |" % (k["burst_or_limit"],
                           (" per 0.5 s" if w < 1e9 else " per 1 s") if w else ""))
    runs = {r["cpus"]: r for r in k["cpus"]}
    for m in (1, 2):
        if m not in runs:
            md.append(" - | - | - |" if m == 2 else " - | - | - | - |")
            continue
        r = runs[m]
        d = acc_run(k, r)
        if d["valid"] and abs(d["ratio_model"] - 1) > worst:
            worst = abs(d["ratio_model"] - 1)
        valid = valid and d["valid"]
        md.append(acc_cell(r, d, m == 1))
        runs_out.append({
            "cpus": m, "seconds": d["t"], "admitted": r["admitted"],
            "offered": r["offered"], "rate_t_plus_burst": llround(d["naive"]),
            "model": llround(d["model"]), "ratio": d["ratio"],
            "ratio_model": d["ratio_model"], "max_pause_ms": 1e3 * d["gap"],
            "valid": d["valid"]})
    md.append("\n")
    return worst, valid


def render_accuracy(runs_path, json_path, md_path):
    with open(runs_path) as f:
        doc = json.load(f)
    md = ["### Accuracy: admitted from a flood of one key (real clock)\n\n",
          "Ratios: admitted / (rate x t + burst), and admitted / the algorithm's own "
          "bound (model; equal for the buckets). Window algorithms: burst = the "
          "window's limit.\n\n",
          "| algo | rate/s | burst or limit | 1 CPU t (s) | 1 CPU admitted | "
          "1 CPU /(rate*t+burst) | 1 CPU /model | 2 CPU admitted | 2 CPU /(rate*t+burst) "
          "| 2 CPU /model |\n|---|---|---|---|---|---|---|---|---|---|\n"]
    cases, worst, goal = [], 0.0, True
    for k in doc["cases"]:
        md.append("| %s | %u |" % (k["algo"], k["rate"]))
        out = {"algo": k["algo"], "rate": k["rate"]}
        cases.append(out)
        if "note" in k:
            md.append(" %s | | | | | | | |\n" % k["note"])
            out["note"] = k["note"]
            continue
        out["burst_or_limit"] = k["burst_or_limit"]
        if k.get("window_ns", 0):
            out["window_s"] = k["window_ns"] / 1e9
        out["cpus"] = []
        w, ok = acc_row(k, md, out["cpus"])
        worst, goal = max(worst, w), goal and ok
    goal = goal and worst <= 0.01
    md.append("\nGoal accuracy within 1%% at every rate (against each algorithm's bound): "
              "%s (worst %.3f%%).\n\n" % ("met" if goal else "MISSED", 100 * worst))
    with open(json_path, "w") as f:
        f.write(dump({"cases": cases, "worst_model_error": worst,
                      "within_1_percent": goal}) + "\n")
    with open(md_path, "w") as f:
        f.write("".join(md))


# ---- tccost: the shaper's cost per packet (make bench part shape) ----

def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def render_tccost(runs_path, json_path, md_path):
    """sluice-bench tccost's runs: the table, and the JSON shape.sh puts in
    shape.json's "cost", as the C wrote them (its own number formats)."""
    with open(runs_path) as f:
        doc = json.load(f)
    md = ["### Shaper: cost per packet (BPF_PROG_TEST_RUN, this host)\n\n"
          "One IPv4 UDP frame from one source, %u packets a run, %u runs a case "
          "interleaved in one process; ns/pkt: the median [min-max] of the wall clock "
          "per packet where it agrees with BPF_PROG_TEST_RUN's own average (kernel ns, "
          "whole ns), else that + 0.5 (fallbacks: runs that took it). The shaper's runs "
          "start from an idle key (its bucket deleted), the drop cases from a full one. "
          "Counters checked on every run (shaped, delayed, limited, the verdict).\n\n"
          "| case | program and policy | ns/pkt | kernel ns/pkt | fallbacks | shaped | "
          "delayed | limited | valid |\n|---|---|---|---|---|---|---|---|---|\n" %
          (doc["repeat"], doc["runs"])]
    cases = []
    for k in doc["cases"]:
        ns = [fs / 1e6 for fs in k["fs_runs"]]
        med, lo, hi = median(ns), min(ns), max(ns)
        kmed = median([float(x) for x in k["kernel_ns_runs"]])
        md.append("| %s | %s | %.1f [%.1f-%.1f] | %.0f | %d | %u | %u | %u | %s%s%s |\n" % (
            k["case"], k["what"], med, lo, hi, kmed, k["fallbacks"], k["shaped"],
            k["delayed"], k["limited"], "yes" if k["valid"] else "**INVALID** (",
            "" if k["valid"] else k["why"], "" if k["valid"] else ")"))
        cases.append(
            '{"case":"%s","what":"%s","ns_median":%.2f,"ns_min":%.2f,"ns_max":%.2f,'
            '"kernel_ns_median":%.1f,"fallbacks":%d,"packets":%u,"shaped":%u,'
            '"delayed":%u,"limited":%u,"valid":%s,"why":"%s"}' % (
                k["case"], k["what"], med, lo, hi, kmed, k["fallbacks"], k["packets"],
                k["shaped"], k["delayed"], k["limited"], "true" if k["valid"] else "false",
                k["why"]))
    md.append("\n")
    with open(json_path, "w") as f:
        f.write('{"repeat":%u,"runs":%u,"cases":[%s]}\n' %
                (doc["repeat"], doc["runs"], ",".join(cases)))
    with open(md_path, "w") as f:
        f.write("".join(md))


# ---- rules, fleet, spacing: the tables of rules.sh, fleet.sh and shape.sh
# from the JSON they write (numbers kept as the scripts wrote them) ----

def load_verbatim(path):
    """JSON whose numbers stay the text the script printed (strings)."""
    with open(path) as f:
        return json.load(f, parse_float=str, parse_int=str)


def para(text, width=88):
    return textwrap.fill(" ".join(text.split()), width) + "\n\n"


def render_rules(json_path, md_path):
    d = load_verbatim(json_path)
    r, small = d["rules"], d.get("small", "1000")

    def goal(name, value, want, met):
        return "| %s | %s | %s | %s |\n" % (name, value, want, "met" if met else "MISSED")

    def delta(a, b):
        return "%+.0f" % (float(b) - float(a))
    md = ["### Rule sets at blocklist scale (%s rules)\n\n" % r,
          para("%s rules: half --deny, 40%% --exempt, 10%% --rate 10/s (three policies on "
               "shared counter slots), IPv4 /32s and every tenth an IPv6 /64. Wall times "
               "of the whole command (process start, lock, read, change, RCU grace period, "
               "exit). ns/pkt: the programs of two interfaces, one with %s rules and one "
               "with %s, run turn about (BPF_PROG_TEST_RUN, 10^6 repeats, median of 7 "
               "each)." % (r, small, r)),
          "| measure | value | goal | |\n|---|---|---|---|\n"]
    ms = lambda k, lim: (d[k] + " ms", int(d[k]) < lim)
    v, m = ms("batch_ms", 2000)
    md.append(goal("one batch of %s rules (sluicectl -b)" % r, v, "< 2000 ms", m))
    v, m = ms("add_ms", 50)
    md.append(goal("rule add at %s rules (median of 5)" % r, v, "< 50 ms", m))
    v, m = ms("del_ms", 50)
    md.append(goal("rule del at %s rules (median of 5)" % r, v, "< 50 ms", m))
    v, m = ms("list_ms", 1000)
    md.append(goal("rule list -j at %s rules (median of 3)" % r, v, "< 1000 ms", m))
    for what, k in (("a rate rule's source", "hit"), ("a source no rule matches", "miss")):
        a, b = d["ns_%s_small" % k], d["ns_%s_big" % k]
        dl = delta(a, b)
        md.append(goal("ns/pkt, %s: %s -> %s rules" % (what, small, r),
                       "%s -> %s (%s)" % (a, b, dl), "<= +20 ns", float(dl) <= 20))
    v, m = ms("batch6_ms", 2000)
    md.append(goal("one batch of %s IPv6 /80 prefix rules" % r, v, "< 2000 ms", m))
    for p in d["ns_prefix"]:
        k = int(p["lengths"])
        where = ("one length: the hash" if k == 1 else
                 "3 lengths: trie at %s, hash at %s" % (small, r) if k == 3 else
                 "%d lengths: the trie" % k)
        dl = delta(p["small"], p["big"])
        md.append(goal("ns/pkt, an IPv6 prefix rule's source, %s -> %s rules (%s)" %
                       (small, r, where), "%s -> %s (%s)" % (p["small"], p["big"], dl),
                       "<= +20 ns", float(dl) <= 20))
    md.append("\nKernel memory of the rule trie, the rule hash and the rule table at %s rules:\n"
              "%s kB (the table is sized for --max-rules, 131072 by default).\n\n" %
              (r, d["mem_kb"]))
    with open(md_path, "w") as f:
        f.write("".join(md))


def fleet_us_per_key(x):
    """Redis CPU us per key pushed (a run from before the column: from its
    ms per sync and keys per sync)."""
    if "redis_us_per_key" in x:
        return x["redis_us_per_key"]
    per_sync = float(x["pushed"]) / float(x["syncs"])
    return "%.2f" % (1000 * float(x["redis_cpu_ms_per_sync"]) / per_sync) if per_sync else "?"


def fleet_goals(rows):
    """Issue 24's two goals, from the rows (None where a row is missing):
    the flood's Redis CPU per sync over today's at 1M keys, and the
    cluster's keys/s in a sync over one Redis's, all heavy, at each size."""
    def one(load, kind, keys=None):
        for x in rows:
            if x.get("load", "today") == load and x.get("redis_kind", "one") == kind and \
                    (keys is None or int(x["keys"]) == keys):
                return x
        return None
    out = []
    today = one("today", "one", 1000000)
    for kind in ("one", "cluster"):
        fl = one("flood", kind)
        if fl and today and float(today["redis_cpu_ms_per_sync"]) > 0:
            out.append("(b) a spoofed flood of 1M one-packet sources and 1,000 heavy ones on "
                       "%s Redis: %s ms of Redis CPU a sync (mean over %s syncs, the "
                       "max-age push included) against today's %s ms a sync at 1M keys: "
                       "%.1f%% (goal: under 10%%)." % (
                           "one" if kind == "one" else "a three-shard",
                           fl["redis_cpu_ms_per_sync"], fl["syncs"],
                           today["redis_cpu_ms_per_sync"],
                           100 * float(fl["redis_cpu_ms_per_sync"]) /
                           float(today["redis_cpu_ms_per_sync"])))
    for x in rows:
        if x.get("load") != "heavy" or x.get("redis_kind") != "cluster":
            continue
        o = one("heavy", "one", int(x["keys"]))
        if o and float(o["keys_per_s_in_sync"]) > 0:
            out.append("(a) all heavy, %s keys: three shards push %s keys/s in a sync, one "
                       "Redis %s: %.2fx (goal: at least 2.5x); Redis CPU %s against %s us a "
                       "key." % (x["keys"], x["keys_per_s_in_sync"], o["keys_per_s_in_sync"],
                                 float(x["keys_per_s_in_sync"]) /
                                 float(o["keys_per_s_in_sync"]),
                                 fleet_us_per_key(x), fleet_us_per_key(o)))
    return out


def render_fleet(json_path, md_path):
    d = load_verbatim(json_path)
    rows = d["rows"]
    ivs = ", ".join("%s at %s" % (x["interval"], x["keys"]) for x in rows)
    tos = ", ".join("%s at %s" % (x["redis_timeout"], x["keys"]) for x in rows)
    lg = max(rows, key=lambda x: float(x["rtt_max_ms"])) if rows else None
    longest = "%s ms at %s keys" % (lg["rtt_max_ms"], lg["keys"]) if lg else "none"
    again = ", ".join("%s at %s keys" % (x["spans_started_again"], x["keys"])
                      for x in rows if int(x["spans_started_again"]) > 0) or "none"
    cluster = any(x.get("redis_kind") == "cluster" for x in rows)
    md = ["### Fleet agent against one local Redis%s (%s, %s CPUs, %s)\n\n" %
          (" and a three-shard cluster" if cluster else "", d["kernel"], d.get("cpus", "?"),
           d["date"]),
          para("One redis-server %s on a unix socket (no persistence), or three primaries "
               "of a Redis Cluster (redis-server --cluster-enabled yes, joined by redis-cli "
               "--cluster create) on 198.18.250.1:7001-7003 in the agent's namespace, and "
               "one `sluice run --redis` (or --redis-cluster) agent on the same machine; the "
               "default policy (--rate 100/s --burst 10) fleet-wide, one Redis key per "
               "source. Traffic cannot make a million keys active every sync here, so the "
               "keys are made active by hand: after every sync, `sluice-bench fleetfill` "
               "writes usage into N keys of sluice_fleet_use with one BPF_MAP_UPDATE_BATCH "
               "(IPv4 /32 keys of the default policy from 198.18.0.0 up, map keys only: no "
               "packet is sent). Loads: *today*, one packet a key a sync under "
               "--sync-threshold 0, every key pushed at every sync (as before thresholds); "
               "*heavy*, 50 packets a key a sync (past the default threshold), all pushed; "
               "*flood*, 1,000,000 keys of one packet written once (a spoofed flood) and "
               "1,000 heavy keys refilled every sync, at the default interval and "
               "threshold, over a span that holds the held keys' --sync-max-age push. "
               "--sync-interval %s: long enough for a sync and a refill (the longest sync "
               "of this run: %s). A sync starts at most once per interval, so keys/s is "
               "about N / interval; \"keys/s in a sync\" (keys a sync / sync ms) is what "
               "one agent and its Redis push back to back. sync ms: the agent's last_rtt_ns "
               "of each sync, mean and max. CPU: %% of one core over the span, and CPU ms "
               "per sync; the agent's from /proc/PID/stat (utime + stime of the whole "
               "`sluice run`), Redis's from INFO cpu (used_cpu_sys + used_cpu_user, summed "
               "over the nodes), and per key pushed; the refill's own CPU apart. Per sync: "
               "INFO commandstats deltas / syncs." % (d["redis"], ivs, longest)),
          "| load | Redis | active keys | sync interval | syncs | keys/s | keys/s in a sync "
          "| sync ms (mean, max) | agent CPU (ms/sync) | Redis CPU (ms/sync) | Redis CPU "
          "us/key | EVALSHA / sync | GET+SET / sync | other script commands / sync | "
          "refill CPU, ms |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"]
    for x in rows:
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s, %s | %s%% (%s) | %s%% (%s) | %s "
                  "| %s | %s | %s | %s%%, %s |\n" % (
                      x.get("load", "today"), x.get("redis_kind", "one"),
                      x["keys"], x["interval"], x["syncs"], x["keys_per_s"],
                      x["keys_per_s_in_sync"], x["rtt_ms"], x["rtt_max_ms"],
                      x["agent_cpu_pct"], x["agent_cpu_ms_per_sync"], x["redis_cpu_pct"],
                      x["redis_cpu_ms_per_sync"], fleet_us_per_key(x),
                      x["evalsha_per_sync"],
                      x["key_ops_per_sync"], x["other_ops_per_sync"], x["fill_cpu_pct"],
                      x["fill_ms"]))
    md.append("\n")
    goals = fleet_goals(rows)
    if goals:
        md.append(para("Issue 24's goals, measured in this run: " + " ".join(goals)))
    md.append(para("Other script commands: TIME, ZADD, PERSIST, ZRANGEBYSCORE, ZCARD and "
                   "HSET, once per EVALSHA of one Redis (the fleet's members and their "
                   "shares; an HGET more for each silent one); on a cluster once a sync, on "
                   "the members' shard, and the keys' calls run TIME and GET + SET a key. "
                   "--redis-timeout %s: well past the longest sync, so that no sync of the "
                   "span fails. Spans measured again because a sync ran past its interval "
                   "(the agent then begins the next at once, before a refill): %s." %
                   (tos, again)))
    with open(md_path, "w") as f:
        f.write("".join(md))


def render_clients(json_path, md_path):
    """clients.sh's rows: a legitimate client's view of each limiter under
    a SYN flood and a UDP flood, and each limiter's own drop counts."""
    with open(json_path) as f:
        d = json.load(f)
    md = ["### Real clients through a SYN flood and a UDP flood (%s, %s CPUs, %s)\n\n" %
          (d["kernel"], d.get("cpus", "?"), d["date"]),
          para("nginx in the server's namespace; the client and the flood in namespaces of "
               "their own on one bridge. Floods: %s SYNs/s to port 80 from %s spoofed "
               "sources (trafgen) and %s UDP packets/s from source port 53 out of %s "
               "sources (sluice-gen), both through the client's run. Limits, per source: SYN "
               "20/s burst 20, UDP source port 53 100/s burst 100 (sluice: the cookbook's "
               "rules; nftables: meters in a netdev ingress chain; hashlimit: "
               "iptables-legacy raw PREROUTING). curl: %s requests at %s/s, each a new "
               "connection; completion, and the median and p99 of curl's time_total (connect "
               "+ request + answer) of those completed. wrk: 4 keep-alive connections for "
               "%s s. %s rounds, every other one in the reverse order of systems. Offered: "
               "what the senders sent (and at what rate they managed: the senders share the "
               "machine's CPUs with the server and the client); dropped: each system's own "
               "counters; server: what its TCP did with the SYNs that reached it (TcpExt "
               "SyncookiesSent: answered with a cookie, its queue of half-open connections "
               "full; ListenDrops: taken by no queue)." %
               (d["syn_pps"], d["syn_sources"], d["udp_pps"], d["udp_sources"],
                d["requests"], d["req_rate"], d["wrk_s"], d.get("rounds", 1))),
          "| limiter | round | curl completed | median ms | p99 ms | wrk requests/s | wrk "
          "median ms | wrk p99 ms | wrk errors | SYNs offered (a second) | SYNs dropped | "
          "UDP offered (a second) | UDP dropped | server SYN cookies sent | server listen "
          "drops |\n" + "|---" * 15 + "|\n"]
    pct = lambda a, b: "%.1f %%" % (100.0 * a / b) if b else "-"
    drop = lambda x, o: "-" if x is None else "%d (%s)" % (x, pct(x, o))
    rate = lambda n, t: "%d (%d)" % (n, round(n / t)) if t else "%d" % n
    order = ["none", "sluice", "nftables", "hashlimit"]
    rows = sorted(d["rows"], key=lambda x: (order.index(x["system"]) if x["system"] in order
                                            else len(order), x.get("round", 1)))
    for x in rows:
        md.append("| %s | %s | %d of %d (%s) | %.2f | %.2f | %d | %.2f | %.2f | %d | %s | %s "
                  "| %s | %s | %s | %s |\n" % (
                      x["system"], x.get("round", 1), x["completed"], x["requests"],
                      pct(x["completed"], x["requests"]), x["median_ms"], x["p99_ms"],
                      x["wrk_rps"], x["wrk_p50_ms"], x["wrk_p99_ms"], x["wrk_errors"],
                      rate(x["syn_sent"], x["syn_seconds"]),
                      drop(x["syn_dropped"], x["syn_sent"]),
                      rate(x["udp_sent"], x["udp_seconds"]),
                      drop(x["udp_dropped"], x["udp_sent"]),
                      x.get("syncookies_sent", "-"), x.get("listen_drops", "-")))
    md.append("\n")
    with open(md_path, "w") as f:
        f.write("".join(md))


def tenth(x, scale=10):
    """x to a tenth (scale 100: a hundredth), printed as jq prints it."""
    if x is None:
        return "-"
    v = llround(float(x) * scale) / scale
    return ("%d" % v) if v == int(v) else repr(v)


def hundredth(x):
    return tenth(x, 100)


def dash(x):
    return "-" if x is None else str(x)


def render_spacing(json_path, md_path):
    """shape.sh's spacing rows (shape.json's "spacing"), as jq printed them."""
    with open(json_path) as f:
        sp = json.load(f)["spacing"]
    md = ["### Shaper: spacing accuracy (fq, a veth pair)\n\n"]
    fails = sp.get("failures") or []
    if sp.get("skipped"):
        md.append("Skipped: %s.\n" % sp["skipped"])
    elif not sp["rows"]:
        md.append("No result from %s: %s.\n" % (sp["where"], " ".join(fails)))
    else:
        batch = sp["rows"][0].get("send_batch", "?")
        md.append(
            "Measured in %s. Per rate R: `sluice shape attach --rate R/s --burst N`, one\n"
            "source sending N UDP packets at 10 x R, %s a sendmmsg() (or as fast as its\n"
            "socket goes: \"sender reached\", packets handed to the kernel over the time\n"
            "the sending took), the receiver's kernel arrival times (SO_TIMESTAMPNS, read\n"
            "by recvmmsg()); rx drops: what the receiver's socket dropped (SO_RXQ_OVFL /\n"
            "the namespace's Udp RcvbufErrors): the gaps around a drop are wrong.\n"
            "Gap error: |gap - 1/R| over the arrivals' gaps (median, p99); span: first to\n"
            "last arrival against (arrived - 1)/R. Stamped: packets sluice_tc gave a\n"
            "departure time (sluice_shape_stats.delayed; the first of a burst goes at\n"
            "once), departures exact by construction; fq throttled: fq's own count of\n"
            "packets it held for their time. Spaced by: the shaper when the sender\n"
            "went faster than R; else the packets never queued and their gaps are the\n"
            "sender's own (few or none stamped), not the shaper's.\n\n" % (sp["where"], batch))
        md.append("| rate | burst N | gap 1/R | sender reached | spaced by | arrived | median "
                  "gap | median gap error | p99 gap error | span (want) | span error | "
                  "stamped | limited | fq throttled | rx drops |\n"
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for x in sp["rows"]:
            asked = (" (asked %d/s)" % (10 * x["rate"])
                     if x["send_pps"] < 10 * x["rate"] * 0.9 else "")
            by = " | the shaper" if x["send_pps"] > x["rate"] else " | **the sender** (< R)"
            ms = lambda v: None if v is None else v / 1000
            md.append(
                "| %s/s | %s | %s us | %d/s%s%s | %s of %s | %s us | %s us | %s us | %s ms "
                "(%s ms) | %s ms (%s %%) | %s | %s | %s | %s / %s |\n" % (
                    x["rate"], x["burst"], tenth(x.get("expect_gap_us")),
                    llround(x["send_pps"]), asked, by, x["arrived"], x["sent"],
                    tenth(x.get("gap_median_us")), tenth(x.get("err_median_us")),
                    tenth(x.get("err_p99_us")), tenth(ms(x.get("span_us"))),
                    tenth(ms(x.get("span_want_us"))), tenth(ms(x.get("span_err_us"))),
                    hundredth(x.get("span_err_pct")), dash(x.get("delayed")),
                    dash(x.get("limited")), dash(x.get("fq_throttled")),
                    dash(x.get("recv_drops")), dash(x.get("rcvbuf_errors"))))
        if sp.get("path"):
            md.append("\nThe path itself, no shaper and no fq, one burst as fast as the sender "
                      "goes: a shaper\ncannot space packets closer than this path delivers "
                      "them, so a rate above the\nfaster of these is beyond this machine with "
                      "or without it.\n\n")
            for x in sp["path"]:
                md.append("- %s packets, %s a sendmmsg(), %s: sent at %d/s, arrived at %d/s "
                          "(median gap %s us), rx drops %s / %s\n" % (
                              x["burst"], x["send_batch"],
                              "the sender on CPU 0, the receiver and its stack (RPS) on CPU 1"
                              if x.get("pinned") else
                              "unpinned (the receive path runs on the sending CPU)",
                              llround(x["send_pps"]), llround(x["arrive_pps"]),
                              tenth(x["gap_median_us"]), dash(x.get("recv_drops")),
                              dash(x.get("rcvbuf_errors"))))
        if fails:
            md.append("\nFailures: %s\n" % " ".join(fails))
    md.append("\n")
    with open(md_path, "w") as f:
        f.write("".join(md))


# ---- the performance page: its tables from one run's measurements ----

# A block <!-- bench:NAME --> ... <!-- /bench:NAME --> of the page is NAME's
# Markdown, rendered from the run's files in DIR (docs/bench: what make bench
# wrote in build/bench, copied by make bench-page).
PAGE_PARTS = {
    "run": ("runs.tsv", "results.md"),
    "summary": ("cost-runs.json", "e2e.tsv"),
    "cost": ("cost-runs.json",),
    "cost-tables": ("cost-runs.json",),
    "cost-scale": ("cost-runs.json",),
    "cost-memory": ("cost-runs.json",),
    "e2e": ("e2e.tsv", "e2e-mem.tsv"),
    "accuracy": ("accuracy-runs.json",),
    "tccost": ("shape-cost-runs.json",),
    "rules": ("rules.json",),
    "fleet": ("fleet.json",),
    "spacing": ("shape.json",),
}
BLOCK = re.compile(r"<!-- bench:([a-z0-9-]+) -->\n(.*?)<!-- /bench:\1 -->", re.S)
# The parts of make bench (run.sh's BENCH_PARTS) a block's files come from;
# by default the block's name up to its first "-".
BLOCK_PARTS = {"run": (), "summary": ("cost", "e2e"), "tccost": ("shape",),
               "spacing": ("shape",)}
# Where a part's own files say which run wrote them.
RUN_ID_IN = {"cost": "cost-runs.json", "e2e": "e2e.tsv", "accuracy": "accuracy-runs.json"}
AGAIN = "run 'sudo make bench', then 'make bench-page' (a whole run: every part)"


def block_parts(name):
    return BLOCK_PARTS.get(name, (name.split("-")[0],))


def file_run_ids(path):
    """The run ids a measurement file carries: a JSON's run_id, a TSV's run
    column (every row's); an empty set when it carries none."""
    if path.endswith(".json"):
        with open(path) as f:
            rid = json.load(f).get("run_id")
        return {rid} if rid else set()
    head, rows = read_tsv(path)
    if "run" not in head:
        return set()
    return {r[head.index("run")] for r in rows if len(r) > head.index("run")}


def one_run(page, names, d):
    """The one run every block of the page comes from: runs.tsv in DIR names
    the run of each part, and the parts' own files must say the same. Exits
    naming what differs when the blocks would mix runs."""
    path = os.path.join(d, "runs.tsv")
    if not os.path.exists(path):
        raise SystemExit("render.py page: %s is missing: which run measured each part is "
                         "unknown (%s)" % (path, AGAIN))
    with open(path) as f:
        runs = dict(ln.rstrip("\n").split("\t")[:2] for ln in f if "\t" in ln)
    parts = sorted({p for n in names for p in block_parts(n)})
    missing = [p for p in parts if p not in runs]
    if missing:
        raise SystemExit("render.py page: %s names no run of %s (the part was never measured "
                         "whole, or failed): %s" % (path, ", ".join(missing), AGAIN))
    ids = sorted({runs[p] for p in parts})
    if len(ids) > 1:
        raise SystemExit("render.py page: %s would mix runs: %s; its tables come from one run: "
                         "%s" % (page, ", ".join("%s %s" % (p, runs[p]) for p in parts), AGAIN))
    for p in parts:
        f = os.path.join(d, RUN_ID_IN.get(p, ""))
        if p in RUN_ID_IN and os.path.exists(f) and file_run_ids(f) != {runs[p]}:
            raise SystemExit("render.py page: %s says run %s, %s says %s: %s" % (
                f, ", ".join(sorted(file_run_ids(f))) or "none", path, runs[p], AGAIN))
    return ids[0] if ids else None


def run_machine(d):
    """The machine and date of the run in DIR: results.md's first line's
    "(kernel, N CPUs, date)"."""
    with open(os.path.join(d, "results.md")) as f:
        first = f.readline()
    m = re.match(r"## sluice benchmarks \((.*)\)$", first.rstrip("\n"))
    return m.group(1) if m else "?"


def render_run(d, run_id):
    """The run block: which run the page's tables come from."""
    return ("The run on this page: `%s` (%s: the first line of `docs/bench/results.md`). "
            "`docs/bench/runs.tsv` names the run that measured each part, and `make "
            "bench-page` refuses to render tables of different runs onto one page.\n" %
            (run_id, run_machine(d)))


def summary_cost(c):
    """The summary's in-kernel rows: ns over parsing, token bucket."""
    def over(test, table, fam, algo):
        k = c.find(test, table, fam, algo)
        t1 = c.find("T1", "floor" if table == "floor" else "lru", fam, "none")
        if k is None or t1 is None:
            return "-"
        return "%.1f%s" % (med(k) - med(t1), inv(k) + inv(t1))

    md = ["| in the kernel: ns per packet over parsing, IPv4 / IPv6 | floor | lru | sets |\n"
          "|---|---|---|---|\n"]
    for label, tf, ts in (("one hot key, token bucket (T2a-T1)", "T2", "T2a"),
                          ("a new key into a full 1M-key table (T3-T1)", "T3", "T3")):
        md.append("| %s | %s | %s | %s |\n" % (label, " / ".join(
            over(tf, "floor", f, "none") for f in FAMS), *(" / ".join(
                over(ts, t, f, 0) for f in FAMS) for t in TABLES)))
    return md


def render_summary(d, cost_path, e2e_path, run_id):
    """The README's table: the headline figures of one run."""
    with open(cost_path) as f:
        c = Cost(json.load(f))
    head, rows = read_tsv(e2e_path)
    e = E2e(head, rows)
    md = ["Measured by `make bench` run `%s` (%s); every table of the run is in "
          "[Performance](docs/performance.md).\n\n" % (run_id, run_machine(d))]
    md.extend(summary_cost(c))
    md.append("\n| end to end: Mpps received, one flooding source | 1 CPU | 2 CPUs |\n"
              "|---|---|---|\n")
    for label, s in (("bare XDP_DROP (the generator's ceiling)", "xdp-drop"),
                     ("the floor", "floor"), ("sluice, --table lru", "sluice"),
                     ("sluice, --table sets", "sluice-sets")):
        cells = []
        for n in (1, 2):
            if not e.has(s, n):
                cells.append("-")
                continue
            r = e.by[(s, str(n))]
            flags = [] if r["is_ceiling"] or r["ceiling"] <= 0 else \
                ["%.0f%%" % (100 * r["of_ceiling"])] + (["generator-bound"] if r["bound"] else [])
            flags += ["unsteady"] if r["spread"] > SPREAD_LIMIT else []
            cells.append("%s%s%s" % (r["mpps"], " (%s)" % ", ".join(flags) if flags else "",
                                     "" if r["valid"] == "yes" else " INVALID"))
        md.append("| %s | %s | %s |\n" % (label, cells[0], cells[1]))
    vias = sorted({r["via"] for r in e.rows})
    md.append("\n%% of the generator's ceiling in brackets; generator-bound: within %d%% of "
              "it or over it, so the sender, not the receiver, set the rate; unsteady: its "
              "one-second rates spread over %d%%. Sent via %s%s.\n"
              % (round(BOUND_LIMIT * 100), round(SPREAD_LIMIT * 100), ", ".join(vias),
                 " (a packet socket: this kernel refuses live frames)" if vias == ["socket"]
                 else ""))
    return "".join(md)


def page_part(name, d, tmp, run_id=None):
    ins = [os.path.join(d, f) for f in PAGE_PARTS[name]]
    for f in ins:
        if not os.path.exists(f):
            raise SystemExit("render.py page: %s needs %s (run 'sudo make bench', then "
                             "'make bench-page')" % (name, f))
    md = os.path.join(tmp, name + ".md")
    js = os.path.join(tmp, name + ".json")
    dat = os.path.join(tmp, name + ".dat")
    if name == "run":
        return render_run(d, run_id)
    if name == "summary":
        return render_summary(d, ins[0], ins[1], run_id)
    if name.startswith("cost"):
        sections = {}
        render_cost(ins[0], js, md, dat, sections)
        return sections[name]
    if name == "e2e":
        render_e2e(ins[0], ins[1], js, md, dat)
    elif name == "accuracy":
        render_accuracy(ins[0], js, md)
    elif name == "tccost":
        render_tccost(ins[0], js, md)
    elif name == "rules":
        render_rules(ins[0], md)
    elif name == "fleet":
        render_fleet(ins[0], md)
    else:
        render_spacing(ins[0], md)
    with open(md) as f:
        return f.read()


def render_page(page, d, check):
    """Each block of PAGE re-rendered from DIR; --check: exit 1 naming the
    blocks that differ, and leave the page as it is."""
    with open(page) as f:
        text = f.read()
    names = [n for n, _ in BLOCK.findall(text)]
    if not names:
        raise SystemExit("render.py page: %s has no <!-- bench:NAME --> block" % page)
    for name in names:
        if name not in PAGE_PARTS:
            raise SystemExit("render.py page: %s: no such bench table '%s' (one of: %s)" %
                             (page, name, ", ".join(sorted(PAGE_PARTS))))
    for name in names:
        for f in PAGE_PARTS[name]:
            if not os.path.exists(os.path.join(d, f)):
                raise SystemExit("render.py page: %s needs %s (%s)" % (
                    name, os.path.join(d, f), AGAIN))
    run_id = one_run(page, names, d)
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        def fill(m):
            name = m.group(1)
            body = page_part(name, d, tmp, run_id)
            if body != m.group(2):
                stale.append(name)
            return "<!-- bench:%s -->\n%s<!-- /bench:%s -->" % (name, body, name)
        out = BLOCK.sub(fill, text)
    if check:
        if stale:
            sys.stderr.write("render.py page: %s: not what %s renders: %s (run 'make "
                             "bench-page')\n" % (page, d, ", ".join(stale)))
            return 1
        return 0
    if out != text:
        with open(page, "w") as f:
            f.write(out)
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "cost":
        render_cost(*argv[2:])
        return 0
    if len(argv) == 7 and argv[1] == "e2e":
        render_e2e(*argv[2:])
        return 0
    if len(argv) == 5 and argv[1] == "accuracy":
        render_accuracy(*argv[2:])
        return 0
    if len(argv) == 5 and argv[1] == "tccost":
        render_tccost(*argv[2:])
        return 0
    if len(argv) == 4 and argv[1] in ("rules", "fleet", "spacing", "clients"):
        {"rules": render_rules, "fleet": render_fleet, "spacing": render_spacing,
         "clients": render_clients}[argv[1]](argv[2], argv[3])
        return 0
    if len(argv) in (4, 5) and argv[1] == "page" and argv[4:] in ([], ["--check"]):
        return render_page(argv[2], argv[3], argv[4:] == ["--check"])
    sys.stderr.write("usage: render.py cost RUNS.json JSON MARKDOWN SCALE.dat\n"
                     "       render.py e2e E2E.tsv MEM.tsv JSON MARKDOWN MPPS.dat\n"
                     "       render.py accuracy RUNS.json JSON MARKDOWN\n"
                     "       render.py tccost RUNS.json JSON MARKDOWN\n"
                     "       render.py rules|fleet|spacing|clients JSON MARKDOWN\n"
                     "       render.py page PAGE DIR [--check]\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
