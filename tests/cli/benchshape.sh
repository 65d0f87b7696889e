#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `make bench` part shape, without timing anything:
# - sluice-bench tccost runs every case (tc_bare, sluice_tc at once, delaying
#   and dropping, sluice_xdp passing and dropping) and each one's counters
#   agree with what it is (valid), in its JSON and in the JSON and Markdown
#   tools/bench/render.py tccost makes of it; bad -r/-n are usage errors (exit
#   status 2, naming the value and the limit);
# - tools/bench/shape.sh on a host whose kernel has no fq and no qemu says so
#   and skips the spacing table (no number), the cost table still there;
# - scripts/test-kernels.sh's KERNEL_RUN: a path outside the tree or no
#   such script is a usage error (2), before any guest boots.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh

BENCH=$BUILD/sluice-bench
netns_need_root "bench shape" jq python3
if [ ! -x "$BENCH" ]; then
	skip "sluice-bench is not built ($BENCH is missing): run 'make'" "bench shape"
	exit 0
fi
TMP=$(mktemp -d)
NS=bsh$$
trap 'rm -rf "$TMP"; ip netns del "$NS" 2>/dev/null' EXIT

# ---- sluice-bench tccost: 1,000 packets a run, 2 runs ----
if expect_status 0 "sluice-bench tccost -r 1000 -n 2" \
		"$BENCH" tccost -o "$TMP/c-runs.json" -r 1000 -n 2 &&
	expect_status 0 "render.py tccost" \
		tools/bench/render.py tccost "$TMP/c-runs.json" "$TMP/c.json" "$TMP/c.md"; then
	n=$(jq '[.cases[] | select(.valid and .packets == 2000)] | length' "$TMP/c.json")
	if [ "$n" = 6 ]; then ok "tccost: six cases, each valid over 2 x 1000 packets"; else
		not_ok "tccost: six cases, each valid over 2 x 1000 packets"
		diag "$(cat "$TMP/c.md")"; fi
	d=$(jq -r '.cases[] | select(.case == "tc-delay") | .delayed' "$TMP/c.json")
	l=$(jq -r '.cases[] | select(.case == "tc-drop") | .limited' "$TMP/c.json")
	if [ "${d:-0}" -ge 1996 ] && [ "${l:-0}" = 2000 ]; then
		ok "tccost: tc-delay stamped all but the first (or two) of a run, tc-drop dropped all"
	else
		not_ok "tccost: tc-delay stamped all but the first (or two) of a run, tc-drop dropped all (delayed '$d', limited '$l')"
	fi
	for c in tc-bare tc-nodelay tc-delay tc-drop xdp-pass xdp-drop; do
		grep -q "^| $c | " "$TMP/c.md" || { not_ok "tccost: the Markdown has a row $c"; continue; }
		ok "tccost: the Markdown has a row $c"
	done
fi
expect_usage "tccost -r 1" "want 2 .. 100000000" "$BENCH" tccost -o "$TMP/x" -r 1
expect_usage "tccost -n 99" "want 1 .. 21 runs" "$BENCH" tccost -o "$TMP/x" -n 99

# ---- shape.sh without fq and without qemu ----
ip netns add "$NS" || { not_ok "shape.sh: a namespace $NS for the fq probe"; exit 1; }
if tc -n "$NS" qdisc add dev lo root fq 2>/dev/null; then
	skip "this kernel can make an fq qdisc: shape.sh measures on it" "shape.sh: skips the spacing without qemu"
else
	mkdir "$TMP/bin" "$TMP/out"
	for f in /usr/bin/* /usr/local/bin/*; do
		case ${f##*/} in qemu-system-*) continue ;; esac
		[ -e "$TMP/bin/${f##*/}" ] || ln -s "$f" "$TMP/bin/${f##*/}"
	done
	PATH=$TMP/bin:/usr/sbin:/sbin BENCH_REPEAT=1000 BENCH_RUNS=1 BUILD=$BUILD \
		tools/bench/shape.sh "$TMP/out" >"$TMP/shape.log" 2>&1
	st=$?
	if [ "$st" = 0 ] && grep -q "^Skipped: .*qemu-system-x86_64 is not installed" "$TMP/out/shape.md"; then
		ok "shape.sh: no fq, no qemu: the spacing is skipped, saying why"
	else
		not_ok "shape.sh: no fq, no qemu: the spacing is skipped, saying why (exit status $st)"
		diag "$(cat "$TMP/shape.log" "$TMP/out/shape.md" 2>/dev/null)"
	fi
	if jq -e '.spacing.rows == [] and (.spacing.skipped | test("qemu")) and
		(.cost.cases | length) == 6' "$TMP/out/shape.json" >/dev/null 2>&1; then
		ok "shape.sh: its JSON has the cost cases, no spacing row, the reason"
	else
		not_ok "shape.sh: its JSON has the cost cases, no spacing row, the reason"
		diag "$(cat "$TMP/out/shape.json" 2>/dev/null)"
	fi
	if grep -q '^| tc-delay | ' "$TMP/out/shape.md" && ! grep -q '^| 1000/s' "$TMP/out/shape.md"; then
		ok "shape.sh: the cost table is there, no spacing row"
	else
		not_ok "shape.sh: the cost table is there, no spacing row"
	fi
fi

# ---- test-kernels.sh KERNEL_RUN: checked before anything boots ----
expect_usage "test-kernels KERNEL_RUN=/bin/true" "want a path inside the tree" \
	env KERNELS=linux-image-no-such-kernel KERNEL_RUN=/bin/true scripts/test-kernels.sh
expect_usage "test-kernels KERNEL_RUN=no/such.sh" "no executable script" \
	env KERNELS=linux-image-no-such-kernel KERNEL_RUN=no/such.sh scripts/test-kernels.sh
tap_done
