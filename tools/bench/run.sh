#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make bench`: sluice's benchmarks, about ten minutes on two CPUs (root).
#   1. cost     in-kernel cost per packet, BPF_PROG_TEST_RUN (sluice-bench cost)
#   2. e2e      receive-side Mpps and CPU per packet on a veth pair (e2e.sh)
#   3. accuracy admitted against rate x time + burst (sluice-bench accuracy)
#   4. scale    cost per packet against key count, memory per key (in 1 and 2)
#   5. rules    100,000 rules: batch, one change, listing, cost per packet (rules.sh)
#   6. fleet    the fleet agent against one local Redis and a three-shard Redis
#               Cluster at 10k, 100k and 1M active keys, all pushed (today's, and
#               heavy), and a spoofed flood of 1M one-packet keys and 1,000 heavy:
#               keys/s, time per sync, agent and Redis CPU (per key too), Redis
#               calls (fleet.sh, about 6 minutes)
#   7. shape    the shaper: sluice_tc's cost per packet (sluice-bench tccost), and
#               its spacing at 1k/10k/100k pps with fq, in a qemu guest of Debian
#               12's 6.1 when this kernel has no fq (shape.sh, about 2.5 minutes)
#   8. clients  real clients (curl, wrk) of a real nginx through a SYN flood and a
#               UDP flood from source port 53: no limiter, sluice, nftables and
#               hashlimit side by side, two rounds (clients.sh, about 3 minutes)
#   9. syn      a SYN flood (sluice-gen -p tcp) from 1M and from 1k spoofed sources:
#               Mpps at the receiver with sluice's SYN rule (and --key src,dport),
#               nftables, hashlimit, no limiter, and the ceiling, bare XDP_DROP;
#               each one's counters against its promise (syn.sh, about 3 minutes)
#  10. sizing   the set table at 50%, 90%, 100% and 200% of its capacity: keys
#               placed, held sources kept under a flood of 4M new ones
#               (sluice-bench sizing, about 40 seconds)
# Results: $BUILD/bench/results.md (printed at the end), results.json, and the
# charts cost-vs-keys.png and mpps.png; the tables and chart data of the cost,
# e2e, accuracy and shape-cost parts come from their measurements
# (cost-runs.json, e2e.tsv, accuracy-runs.json, shape-cost-runs.json) by
# tools/bench/render.py.
# BENCH_PARTS="cost e2e accuracy rules fleet shape clients syn sizing" picks parts; BENCH_REPEAT
# and BENCH_RUNS change the in-kernel runs (1e6 x 5), BENCH_RERUNS how often a
# case whose runs spread over 20% is measured again (2); BENCH_REPORT_ONLY=1
# only rebuilds the report from the last results.
# Every run has an id (the UTC time it began and this shell's pid): cost,
# e2e and accuracy write it into their measurements, and $OUT/runs.tsv names,
# for each part, the run that last measured it whole, so that the tables of
# docs/performance.md and the README (make bench-page) come from one run.
set -euo pipefail

BUILD=${BUILD:-build}
OUT=$BUILD/bench
PARTS=${BENCH_PARTS:-cost e2e accuracy rules fleet shape clients syn sizing}
PREFIX=bn$$
NSH=${PREFIX}h
RUN_ID=$(date -u +%Y-%m-%dT%H:%M:%SZ)-$$
export BENCH_RUN_ID=$RUN_ID

die() { echo "bench: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (BPF_PROG_TEST_RUN, namespaces): run 'sudo make bench'"
for f in sluice.skel.h drop.skel.h libsluice.a sluice sluice-gen sluice-bench; do
	[ -e "$BUILD/$f" ] || die "$BUILD/$f is missing: run 'make BUILD=$BUILD' first"
done
command -v python3 >/dev/null || die "python3 is missing: tools/bench/render.py makes the tables"
mkdir -p "$OUT"

cleanup() {
	ip netns del "$NSH" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the bench program: the Makefile builds it ----
BENCH=$BUILD/sluice-bench

# ---- spare devices that keep the timed programs in the XDP dispatcher ----
ip netns add "$NSH"
HOLD=
for i in $(seq 0 15); do
	ip -n "$NSH" link add "${PREFIX}a$i" type veth peer name "${PREFIX}b$i"
	HOLD="$HOLD,${PREFIX}a$i,${PREFIX}b$i"
done
HOLD=${HOLD#,}
inh() { nsenter --net="/var/run/netns/$NSH" "$@"; }

start=$(date +%s)
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
measure() { [ -z "${BENCH_REPORT_ONLY:-}" ] && has "$1"; }
FAILED= # parts that failed: their results are not this run's

# runs.tsv: "part<TAB>run id" for each part last measured whole. The parts
# measured now lose their line first (a part that fails keeps none), and get
# this run's once every part is done.
if [ -z "${BENCH_REPORT_ONLY:-}" ]; then
	touch "$OUT/runs.tsv"
	awk -F'\t' -v p=" $PARTS " 'index(p, " " $1 " ") == 0' "$OUT/runs.tsv" >"$OUT/runs.tsv.new"
	mv "$OUT/runs.tsv.new" "$OUT/runs.tsv"
fi

if measure cost; then
	echo "bench: in-kernel cost per packet, both key tables and the floor (about 6 minutes)" >&2
	inh "$BENCH" cost -o "$OUT/cost-runs.json" -H "$HOLD" -I "$RUN_ID" \
		-r "${BENCH_REPEAT:-1000000}" -n "${BENCH_RUNS:-5}" -R "${BENCH_RERUNS:-2}"
fi

if measure e2e; then
	echo "bench: end to end on a veth pair (about 5 minutes)" >&2
	BUILD=$BUILD BENCH=$BENCH PREFIX=$PREFIX tools/bench/e2e.sh "$OUT"
fi

if measure accuracy; then
	echo "bench: accuracy (about 1 minute)" >&2
	inh "$BENCH" accuracy -o "$OUT/accuracy-runs.json" -H "${PREFIX}a0" -I "$RUN_ID"
fi

if measure rules; then
	echo "bench: rule sets of 100,000 rules (about 15 seconds)" >&2
	BUILD=$BUILD tools/bench/rules.sh "$OUT" >/dev/null
fi

if measure fleet; then
	echo "bench: the fleet agent against one local Redis and a cluster (about 6 minutes)" >&2
	BUILD=$BUILD BENCH=$BENCH tools/bench/fleet.sh "$OUT" >/dev/null || {
		echo "bench: the fleet part failed: no run id for it in $OUT/runs.tsv" >&2
		FAILED="$FAILED fleet"
	}
fi

if measure shape; then
	echo "bench: the shaper (about 2.5 minutes: a qemu guest when this kernel has no fq)" >&2
	BUILD=$BUILD BENCH=$BENCH NSH=$NSH HOLD=${PREFIX}a1 tools/bench/shape.sh "$OUT" ||
		echo "bench: the shape part reported a failure: see $OUT/shape.md" >&2
fi

if measure clients; then
	echo "bench: real clients through a SYN flood and a UDP flood (about 3 minutes)" >&2
	BUILD=$BUILD tools/bench/clients.sh "$OUT" >/dev/null ||
		echo "bench: the clients part reported a failure" >&2
fi

if measure syn; then
	echo "bench: a SYN flood from spoofed sources (about 3 minutes)" >&2
	BUILD=$BUILD BENCH=$BENCH PREFIX=$PREFIX tools/bench/syn.sh "$OUT" >/dev/null ||
		echo "bench: the syn part reported a failure" >&2
fi

if measure sizing; then
	echo "bench: the set table's fill and flood resistance against its load (about 40 seconds)" >&2
	{
		echo "### Set table sizing (sluice-bench sizing)"
		echo
		inh "$BENCH" sizing
		echo
	} >"$OUT/sizing.md" || {
		echo "bench: the sizing part failed" >&2
		FAILED="$FAILED sizing"
	}
fi

# Every part measured: this run's id for each (runs.tsv), but a failed one's.
if [ -z "${BENCH_REPORT_ONLY:-}" ]; then
	for part in $PARTS; do
		case " $FAILED " in *" $part "*) continue ;; esac
		printf '%s\t%s\n' "$part" "$RUN_ID"
	done >>"$OUT/runs.tsv"
fi

# ---- the measurements become the tables, the charts' data and the JSON with
# what is derived from them (tools/bench/render.py; also under BENCH_REPORT_ONLY) ----
if has cost && [ -s "$OUT/cost-runs.json" ]; then
	tools/bench/render.py cost "$OUT/cost-runs.json" "$OUT/cost.json" "$OUT/cost.md" \
		"$OUT/scale.dat"
fi
if has accuracy && [ -s "$OUT/accuracy-runs.json" ]; then
	tools/bench/render.py accuracy "$OUT/accuracy-runs.json" "$OUT/accuracy.json" \
		"$OUT/accuracy.md"
fi
if has e2e; then
	tools/bench/render.py e2e "$OUT/e2e.tsv" "$OUT/e2e-mem.tsv" "$OUT/e2e.json" \
		"$OUT/e2e.md" "$OUT/mpps.dat"
fi

# ---- charts ----
if command -v gnuplot >/dev/null; then
	if has cost && [ -s "$OUT/scale.dat" ]; then
		gnuplot -e "datafile='$OUT/scale.dat'; outfile='$OUT/cost-vs-keys.png'" \
			tools/bench/cost-vs-keys.gp
	fi
	if has e2e && [ -s "$OUT/mpps.dat" ]; then
		gnuplot -e "datafile='$OUT/mpps.dat'; outfile='$OUT/mpps.png'" tools/bench/mpps.gp
	fi
else
	echo "bench: gnuplot is missing: no charts (run 'make deps')" >&2
fi

# ---- one Markdown file, one JSON file ----
{
	echo "## sluice benchmarks ($(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ))"
	echo
	# Which run measured each part (this one, or one before under BENCH_REPORT_ONLY).
	awk -F'\t' -v p=" $PARTS " 'index(p, " " $1 " ") { r = r (r ? ", " : "") $1 " " $2 }
		END { print "Runs: " (r ? r : "none recorded") "." }' "$OUT/runs.tsv" 2>/dev/null || true
	echo
	for part in cost e2e accuracy rules fleet shape clients syn sizing; do
		has "$part" && [ -s "$OUT/$part.md" ] && cat "$OUT/$part.md"
	done
	echo "Charts: $OUT/cost-vs-keys.png, $OUT/mpps.png. JSON: $OUT/results.json."
	echo "Took $(($(date +%s) - start)) s."
} >"$OUT/results.md"
{
	printf '{"kernel":"%s","cpus":%d' "$(uname -r)" "$(nproc)"
	for part in cost e2e accuracy rules fleet shape clients syn; do
		if has "$part" && [ -s "$OUT/$part.json" ]; then
			printf ',"%s":' "$part"
			cat "$OUT/$part.json"
		fi
	done
	printf '}\n'
} | tr -d '\n' >"$OUT/results.json"
echo >>"$OUT/results.json"
cat "$OUT/results.md"
