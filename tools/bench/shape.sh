#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make bench` part shape (tools/bench/run.sh runs it): the shaper.
#   1. cost per packet on this host: sluice-bench tccost (BPF_PROG_TEST_RUN):
#      tc_bare, sluice_tc at once / delaying / dropping, sluice_xdp beside it
#   2. spacing accuracy at 1k, 10k and 100k packets/s: tools/bench/shape-guest.sh
#      on a veth pair with fq. This host's kernel when it can make an fq qdisc;
#      else in a qemu guest of Debian 12's 6.1 (scripts/test-kernels.sh with
#      KERNEL_RUN, about two minutes under software emulation). Skipped, with
#      the reason in the table, when neither can be had.
# Usage: shape.sh OUTDIR  (env: BUILD, BENCH the sluice-bench binary, HOLD a
# spare veth device in NSH, the namespace run.sh made; BENCH_REPEAT,
# BENCH_RUNS; SHAPE_KERNEL the guest's kernel package, default
# linux-image-amd64; SHAPE_GUEST_TIMEOUT seconds, default 900).
# Writes OUTDIR/shape.md and OUTDIR/shape.json.
set -uo pipefail
OUT=$1
BUILD=${BUILD:-build}
BENCH=${BENCH:-$BUILD/sluice-bench}
KERNEL=${SHAPE_KERNEL:-linux-image-amd64}
export PATH=$PATH:/usr/sbin:/sbin

die() { echo "bench shape: $*" >&2; exit 1; }
[ -x "$BENCH" ] || die "$BENCH is missing: run 'make BUILD=$BUILD' first"

# ---- 1. cost ----
cost_ok=0
hold=()
[ -n "${HOLD:-}" ] && hold=(-H "$HOLD")
rm -f "$OUT/shape-cost-runs.json"
if ${NSH:+nsenter --net=/var/run/netns/$NSH} "$BENCH" tccost -o "$OUT/shape-cost-runs.json" \
	"${hold[@]}" -r "${BENCH_REPEAT:-1000000}" -n "${BENCH_RUNS:-5}"; then
	cost_ok=1
elif [ -s "$OUT/shape-cost-runs.json" ]; then
	cost_ok=1 # written, with an INVALID case: the table says which
	echo "bench shape: a cost case is INVALID (its counters disagree): see $OUT/shape-cost.md" >&2
else
	echo "bench shape: sluice-bench tccost failed" >&2
	printf '### Shaper: cost per packet\n\nsluice-bench tccost failed: see the output of make bench.\n\n' \
		>"$OUT/shape-cost.md"
	echo '{"error":"sluice-bench tccost failed"}' >"$OUT/shape-cost.json"
fi
# the table and the JSON with the medians (tools/bench/render.py)
if [ "$cost_ok" = 1 ]; then
	tools/bench/render.py tccost "$OUT/shape-cost-runs.json" "$OUT/shape-cost.json" \
		"$OUT/shape-cost.md"
fi

# ---- 2. spacing: where ----
LOG=$OUT/shape-guest.log
rm -f "$LOG" "$OUT/shape-guest.tap"
where= skip=
can_fq() {
	local ns=shfq$$ st=1
	ip netns add "$ns" 2>/dev/null || return 1
	ip -n "$ns" link add "${ns}a" type veth peer name "${ns}b" &&
		ip netns exec "$ns" tc qdisc add dev "${ns}a" root fq 2>/dev/null && st=0
	ip netns del "$ns"
	return $st
}
if can_fq; then
	where="this host ($(uname -r), $(nproc) CPUs)"
	echo "bench: shape spacing on this host's fq (about 10 seconds)" >&2
	tools/bench/shape-guest.sh >"$LOG" 2>&1
elif ! command -v qemu-system-x86_64 >/dev/null; then
	skip="this kernel ($(uname -r)) has no fq qdisc and qemu-system-x86_64 is not installed for a guest that has: run 'sudo make deps'"
else
	echo "bench: shape spacing in a qemu guest of Debian 12's 6.1 (about 2 minutes)" >&2
	KERNELS=$KERNEL KERNEL_RUN=tools/bench/shape-guest.sh KERNEL_RUN_OUT=$LOG \
		KERNEL_MEM=${SHAPE_GUEST_MEM:-1G} KERNEL_TIMEOUT=${SHAPE_GUEST_TIMEOUT:-900} \
		BUILD=$BUILD scripts/test-kernels.sh >"$OUT/shape-guest.tap" 2>&1
	how=$(sed -n 's/^# \([^:]*\): .* under \([a-z]*\), \(.*\); console .*/\1 under \2, \3/p' \
		"$OUT/shape-guest.tap" | head -1)
	case $how in
	*" under tcg"*) how="$how: qemu's software emulation (TCG), no KVM: timers and the sender run far slower than on hardware" ;;
	esac
	where="a qemu guest, Debian 12 kernel ${how:-?}"
	if [ ! -s "$LOG" ]; then
		skip="the qemu guest gave no output: $(grep -E '^not ok|SKIP' "$OUT/shape-guest.tap" |
			head -3 | tr '\n' ' ')(the whole run: $OUT/shape-guest.tap)"
	fi
fi

# ---- 2. spacing: the table ----
rows=$(sed -n 's/^bench-shape: //p' "$LOG" 2>/dev/null)
pathrow=$(sed -n 's/^bench-shape-path: //p' "$LOG" 2>/dev/null)
fails=$(grep -h '^not ok' "$LOG" "$OUT/shape-guest.tap" 2>/dev/null | sort -u)
{
	printf '{"cost":'
	cat "$OUT/shape-cost.json"
	printf ',"spacing":{"where":%s,"skipped":%s,"failures":%s,"path":%s,"rows":[%s]}}\n' \
		"$(jq -n --arg w "$where" '$w')" "$(jq -n --arg s "$skip" 'if $s == "" then null else $s end')" \
		"$(jq -Rn '[inputs | select(. != "")]' <<<"$fails")" \
		"[$(paste -sd, <<<"$pathrow")]" "$(paste -sd, <<<"$rows")"
} | tr -d '\n' >"$OUT/shape.json"
echo >>"$OUT/shape.json"
# The spacing table: tools/bench/render.py, from the JSON.
tools/bench/render.py spacing "$OUT/shape.json" "$OUT/shape-spacing.md"
cat "$OUT/shape-cost.md" "$OUT/shape-spacing.md" >"$OUT/shape.md"
[ "$cost_ok" = 1 ]
