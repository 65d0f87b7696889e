#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The bench's own trust (issue 23), on made-up measurements, no timing:
#  - cost: a case whose runs spread wider than 20% of their median is WIDE in
#    the tables, one within it is not; a run more than 10% over its case's
#    fastest is disturbed (one the scheduler interrupted is counted apart),
#    and each row counts its disturbed runs;
#  - e2e: a row within 10% of its flood's ceiling (the same flood into a
#    bare XDP_DROP, same CPUs) is generator-bound, one further below is not,
#    the sender's way ("via") is printed, and a goal over generator-bound
#    rows says so;
#  - page: the README's and the performance page's tables come from one run:
#    a docs/bench whose parts name different runs, or whose files disagree
#    with runs.tsv, is refused; otherwise both pages name the same run.
set -u
source tests/lib/tap.sh

command -v python3 >/dev/null || { skip "python3 is not installed (run 'sudo make deps')" \
	"the bench's flags"; exit 0; }
R=tools/bench/render.py
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# py CODE: python3 with render.py imported as r; prints what CODE prints.
py() { PYTHONDONTWRITEBYTECODE=1 python3 -c "import sys; sys.path.insert(0, 'tools/bench'); import render as r
$1" 2>&1; }
# is NAME WANT GOT
is() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "want '$2', got '$3'"; fi
}
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
hasnt() {
	if grep -qF -- "$2" <<<"$3"; then not_ok "$1"; diag "did not want '$2' in: $3"; else ok "$1"; fi
}

# ---- cost: spread, WIDE, disturbed ----
case_py='def k(ns, sched=None):
    c = {"ns": ns, "valid": True}
    if sched: c["sched_runs"] = sched
    r.trust(c, 0.20)
    return c
'
is "a case whose runs spread 30% of their median is WIDE" "True 0.30" \
	"$(py "$case_py
c = k([100, 100, 100, 100, 130]); print(c['wide'], '%.2f' % c['spread'])")"
is "a case whose runs spread 19% is not" "False" \
	"$(py "$case_py
print(k([100, 110, 115, 119, 105])['wide'])")"
is "exactly 20% is not wide (wider than 20% is)" "False True" \
	"$(py "$case_py
print(k([100, 100, 120])['wide'], k([100, 100, 120.5])['wide'])")"
is "runs more than 10% over the fastest are disturbed (111 and 130 of 100..130)" "2" \
	"$(py "$case_py
print(k([100, 105, 110, 111, 130])['disturbed'])")"
is "an interrupted run (the kernel's count) is counted apart, not disturbed by itself" "0 1" \
	"$(py "$case_py
c = k([100, 101, 102], [0, 1, 0]); print(c['disturbed'], c['interrupted'])")"
is "a WIDE case's cell says WIDE; an INVALID one both" \
	" 100.0 [100.0-130.0] WIDE | 100.0 [100.0-130.0] INVALID WIDE |" \
	"$(py "$case_py
a = k([100, 100, 100, 100, 130]); b = dict(a); b['valid'] = False
print(r.cell(a) + r.cell(b))")"
is "a row counts its cells' disturbed runs and reruns" "3 of 10, 2 reruns" \
	"$(py "$case_py
a = k([100, 100, 100, 100, 130]); a['reruns'] = 2
print(r.disturbed((a, k([100, 120, 130, 100, 100]), None)))")"

# The same through render.py cost, on the run kept in docs/bench with one case's
# runs made 30% wide (T2a, lru, IPv4, token bucket), rerun twice.
if [ -s docs/bench/cost-runs.json ]; then
	python3 - docs/bench/cost-runs.json "$T/wide.json" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	d["spread_limit"], d["max_reruns"] = 0.2, 2
	for k in d["cases"]:
	    k.pop("reruns", None)
	    k["fs_runs"] = [100000000] * len(k["fs_runs"])  # 100 ns, no spread
	    k["sched_runs"] = [0] * len(k["fs_runs"])
	    if (k["test"], k["table"], k["family"], k["algo"]) == \
	            ("T2a", "lru", 4, "token-bucket"):
	        k["fs_runs"][-1] = 130000000
	        k["reruns"] = 2
	json.dump(d, open(sys.argv[2], "w"))
	EOF
	"$R" cost "$T/wide.json" "$T/cost.json" "$T/cost.md" "$T/scale.dat"
	row=$(grep '^| IPv4 | lru | token-bucket |' "$T/cost.md")
	has "render.py cost: the 30%-wide case is WIDE in its row" "100.0 [100.0-130.0] WIDE" "$row"
	has "render.py cost: its row counts 1 disturbed run of 30, and the reruns" \
		"| 1 of 30, 2 reruns |" "$row"
	has "render.py cost: the trust note names the case still wide" \
		"1 of" "$(grep '^Trust:' "$T/cost.md")"
	has "render.py cost: ... by table, test, family and algorithm" \
		"WIDE: lru T2a IPv4 token-bucket (30%)" "$(grep '^Trust:' "$T/cost.md")"
	hasnt "render.py cost: no other row is WIDE" "WIDE" \
		"$(grep '^| IPv6 | lru | token-bucket |' "$T/cost.md")"
	has "render.py cost: the JSON keeps the wide case and the disturbed runs" \
		'"wide_cases":["lru T2a IPv4 token-bucket"],"disturbed_runs":1' "$(cat "$T/cost.json")"
else
	skip "docs/bench/cost-runs.json is missing (make bench-page)" "render.py cost flags WIDE"
fi

# sluice-bench cost bounds its reruns
BENCH=${BUILD:-build}/sluice-bench
if [ -x "$BENCH" ]; then
	expect_usage "sluice-bench cost -R 9 (more reruns than 4)" "at most RERUNS times" \
		"$BENCH" cost -o "$T/x.json" -R 9
else
	skip "$BENCH is not built" "sluice-bench cost bounds its reruns"
fi

# ---- e2e: the generator's ceiling ----
tsv() { # system flood cpus mpps [via [1-s rates]]
	printf '%s\tIPv4\t%s\t%s\t100\t3.00\t%s\t-\t-\t100\t0\tyes\t%s\t%s\trun-a\tcheck; 1-s rates %s\n' \
		"$1" "$3" "$4" "$4" "$2" "${5:-socket}" "${6:-$4 $4 $4}"
}
{
	printf 'system\tfamily\tcpus\tmpps\trx\tseconds\tsent_mpps\tprog_ns\tsoftirq_ns\t'
	printf 'dropped\tpassed\tvalid\tflood\tvia\trun\tnote\n'
	tsv xdp-drop 1 1 1.000 socket "0.95 1.000 1.05"
	tsv floor 1 1 0.950  # 95%: bound
	tsv sluice 1 1 0.900 # 90% exactly: bound
	tsv sluice-sets 1 1 0.899 # just under: not
	tsv xdp-drop 1 2 2.000 live-frames
	tsv floor 1 2 1.000 live-frames # 50%
	tsv sluice 1 2 2.100 live-frames # over the ceiling: bound
	tsv sluice-sets 1 2 0.500 live-frames
	tsv xdp-drop-256 256 1 1.000
	tsv floor-256 256 1 0.800 socket "0.7 0.8 0.94"
	tsv sluice-256 256 1 0.950
	tsv sluice-sets-256 256 1 0.800
} >"$T/e2e.tsv"
printf 'system\tkeys\tkb\tbytes_per_key\tbasis\n' >"$T/e2e-mem.tsv"
"$R" e2e "$T/e2e.tsv" "$T/e2e-mem.tsv" "$T/e2e.json" "$T/e2e.md" "$T/mpps.dat"
row() { grep "^| $1 | $2 | IPv4 | $3 |" "$T/e2e.md"; }
has "a row at 95% of its ceiling is generator-bound" "| 95% | **generator-bound** |" \
	"$(row floor 1 1)"
has "a row at 90% exactly is generator-bound" "| 90% | **generator-bound** |" \
	"$(row sluice 1 1)"
has "a row at 89.9% is not" "| 90% | no |" "$(row sluice-sets 1 1)"
has "a row over its ceiling is generator-bound" "| 105% | **generator-bound** |" \
	"$(row sluice 1 2)"
has "a row at half its ceiling is not" "| 50% | no |" "$(row floor 1 2)"
has "each row prints its ceiling beside it" "| socket | 0.950 | 0% | 1.000 |" "$(row floor 1 1)"
has "the ceiling is its own flood's: 256 sources against xdp-drop-256" \
	"| 0.950 | 0% | 1.000 | 95% | **generator-bound** |" "$(row sluice-256 256 1)"
has "the ceiling row says so" "| the ceiling |" "$(row xdp-drop 1 1)"
has "each row prints how the generator sent (via)" "| live-frames |" "$(row floor 1 2)"
has "the floor table prints sluice / floor per table" \
	"| one source | 1 | 1.000 | 0.950 | 0.900 | 0.95 | 0.899 | 0.95 | floor, sluice |" \
	"$(cat "$T/e2e.md")"
has "a goal over generator-bound rows says which (0.900 / 0.950: MISSED)" \
	"| lru / floor, one source, 1 CPU | 0.95 | >= 0.95 | MISSED | **generator-bound**: sluice, floor |" \
	"$(cat "$T/e2e.md")"
has "a goal over rows that are not says no" \
	"| sets / floor, 256 sources, 1 CPU | 1.00 | >= 0.95 | met | no |" "$(cat "$T/e2e.md")"
has "the JSON has each row's ceiling and flags" \
	'{"system":"sluice-sets","cpus":1,"ceiling_mpps":1,"of_ceiling":0.899,"generator_bound":false,' \
	"$(cat "$T/e2e.json")"
has "a row whose one-second rates spread 30% is unsteady" "| 0.800 | 30% **unsteady** |" \
	"$(row floor-256 256 1)"
has "a row whose rates spread 10% is not" "| 1.000 | 10% | 1.000 |" "$(row xdp-drop 1 1)"

# ---- the pages: one run ----
if [ -s docs/bench/cost-runs.json ] && [ -s docs/bench/e2e.tsv ] && [ -s docs/bench/runs.tsv ]; then
	mkdir "$T/d"
	cp docs/bench/* "$T/d/"
	page="$T/page.md"
	printf '# p\n\n<!-- bench:run -->\n<!-- /bench:run -->\n\n<!-- bench:cost -->\n<!-- /bench:cost -->\n' \
		>"$page"
	printf '<!-- bench:e2e -->\n<!-- /bench:e2e -->\n' >>"$page"
	readme="$T/readme.md"
	printf '# r\n\n<!-- bench:summary -->\n<!-- /bench:summary -->\n' >"$readme"
	if "$R" page "$page" "$T/d" >/dev/null 2>&1 && "$R" page "$readme" "$T/d" >/dev/null 2>&1; then
		ok "the pages render from docs/bench"
	else
		not_ok "the pages render from docs/bench"
		diag "$("$R" page "$page" "$T/d" 2>&1)"
	fi
	id=$(awk -F'\t' '$1 == "cost" { print $2 }' "$T/d/runs.tsv")
	has "the page's run block names the run of runs.tsv" "run on this page: \`$id\`" \
		"$(cat "$page")"
	has "the README's table names the same run" "run \`$id\`" "$(cat "$readme")"

	# A part measured by another run
	awk -F'\t' -v OFS='\t' '$1 == "e2e" { $2 = "other-run" } { print }' docs/bench/runs.tsv \
		>"$T/d/runs.tsv"
	out=$("$R" page "$page" "$T/d" --check 2>&1)
	st=$?
	if [ "$st" != 0 ] && grep -qF "would mix runs" <<<"$out" && grep -qF "e2e other-run" <<<"$out"
	then
		ok "tables of two runs on one page are refused, naming each part's run"
	else
		not_ok "tables of two runs on one page are refused, naming each part's run"
		diag "exit $st: $out"
	fi
	# runs.tsv agrees with itself but not with the file's own run id
	awk -F'\t' -v OFS='\t' '{ $2 = "other-run"; print }' docs/bench/runs.tsv >"$T/d/runs.tsv"
	out=$("$R" page "$page" "$T/d" --check 2>&1)
	st=$?
	if [ "$st" != 0 ] && grep -qF "says run $id" <<<"$out"; then
		ok "a measurement file of another run than runs.tsv names is refused"
	else
		not_ok "a measurement file of another run than runs.tsv names is refused"
		diag "exit $st: $out"
	fi
	rm "$T/d/runs.tsv"
	out=$("$R" page "$page" "$T/d" --check 2>&1)
	has "without runs.tsv the page is refused, saying to run make bench" \
		"run 'sudo make bench', then 'make bench-page'" "$out"
else
	skip "docs/bench has no run with run ids (make bench, make bench-page)" \
		"the pages come from one run"
fi
tap_done
