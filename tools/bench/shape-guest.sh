#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make bench` part shape, item 2: the shaper's spacing accuracy. Runs INSIDE a
# test-kernels guest (a kernel with fq: Debian 12's 6.1), started by
# tools/bench/shape.sh through `KERNEL_RUN=tools/bench/shape-guest.sh
# scripts/test-kernels.sh`; its stdout is the guest's ttyS1.
#
# For each rate R (SHAPE_RATES, default 1000 10000 100000 packets/s): a fresh
# two-namespace lab (tests/lib/netns.sh, tests/shape/lib/shape.sh: 198.18.N.0/24
# and 2001:2:0:N::/64, names carrying this PID), `sluice shape attach IF_TX
# --rate R/s --burst N` on the sender's veth, one source sending N packets at
# 10 x R through a UDP socket, SHAPE_BATCH (default 64) packets a sendmmsg()
# (sluice-probe send -b: as fast as the socket goes when it cannot keep up),
# the receiver taking every arrival time (SO_TIMESTAMPNS, sluice-probe recv
# -e 1e6/R, recvmmsg()) and counting what its socket dropped (SO_RXQ_OVFL;
# and the namespace's Udp RcvbufErrors, /proc/net/snmp). Per rate one line
#   bench-shape: {JSON}
# with what the receiver saw (count, gaps and their error against 1/R, the
# span against (count - 1)/R), what the sender reached, what the program did
# (sluice_shape_stats: shaped, delayed, max_delay_ns; sluicectl stats limited)
# and fq's own counters (tc -s: throttled, drops). Lines starting "# " are comments; "not ok - ..." a failure.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

RATES=${SHAPE_RATES:-1000 10000 100000}
BATCH=${SHAPE_BATCH:-64}
# SHAPE_PIN=1 (needs 2 CPUs): the sender on CPU 0, the receiver and, through
# RPS on the receiver's veth, its stack on CPU 1, so the sender's CPU pays
# the egress path only (veth hands a packet to the receiving CPU's backlog)
# and not the receive path too. Off by default for the rates: in one TCG run
# it made the sender faster but fq's timer (on the sender's busy CPU) late, the
# 10k/s arrivals bunched; the path is measured both ways.
PIN=${SHAPE_PIN:-0}
[ "$(nproc)" -ge 2 ] || PIN=0

# In a guest (SLUICE_GUEST, from tests/kernels/guest.sh), a throwaway VM:
# socket buffers large enough that the sender's socket does not block on the
# packets fq holds (each queued packet stays charged to it until it leaves)
# and the receiver keeps every arrival. Never on a host: global sysctls.
if [ -n "${SLUICE_GUEST:-}" ]; then
	for f in wmem_max rmem_max wmem_default rmem_default; do
		echo 33554432 >"/proc/sys/net/core/$f" 2>/dev/null
	done
fi

# num V: V when it is a number, else null (a counter that could not be read).
num() { if [[ $1 =~ ^[0-9]+$ ]]; then echo "$1"; else echo null; fi; }

# udp_snmp FIELD: the receiver's namespace's Udp counter FIELD (/proc/net/snmp).
udp_snmp() {
	rx_exec cat /proc/net/snmp | awk -v f="$1" '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
		$1 == "Udp:" && h { print $c[f]; exit }'
}

# burst_for R: the packets of one burst: a span of about 1 s at 1k/s, 0.2 s
# at 10k/s, 50 ms at 100k/s (enough gaps for a p99, a short guest run).
burst_for() {
	case $1 in
	1000) echo 1000 ;;
	10000) echo 2000 ;;
	*) echo 5000 ;;
	esac
}

# pin_lab: SHAPE_PIN's placement on the current lab (needs the receiver's
# namespace's own /sys: ip netns exec); sets SEND_PIN for send().
SEND_PIN=()
pin_lab() {
	[ "$PIN" = 1 ] || return 0
	ip netns exec "$NS_RX" sh -c "echo 2 >/sys/class/net/$IF_RX/queues/rx-0/rps_cpus" ||
		return 1
	RECV_EXEC="rx_exec taskset -c 1"
	SEND_PIN=(taskset -c 0)
}

# send ARGS: sluice-probe send -j ARGS in the sender's namespace (pinned with
# SHAPE_PIN), its JSON in $NETNS_TMP/send.json.
send() {
	if ! tx_exec "${SEND_PIN[@]}" "$SLUICE_PROBE" send -j -p "$PORT" "$@" >"$NETNS_TMP/send.json" \
		2>"$NETNS_TMP/send.err"; then
		diag "sluice-probe send $* failed: $(cat "$NETNS_TMP/send.err")"
		return 1
	fi
}

# path: what this machine's veth path carries with no shaper and no fq: one
# burst of 5000 packets as fast as the sender goes, the receiver's arrival
# rate over it ((arrived - 1) / span). A shaper cannot space packets closer
# than the path delivers them.
path() (
	local n=5000
	PIN=$1
	shape_lab "bp" 45 1 || { echo "not ok - path: lab set up"; exit 1; }
	pin_lab || { echo "not ok - path: RPS on $IF_RX"; exit 1; }
	recv_start rx -t 3 -n "$n" || { echo "not ok - path: receiver"; exit 1; }
	send -s "${SRC4[0]}" -d "$ADDR4_RX" -n "$n" -b "$BATCH" || { echo "not ok - path: sender"; exit 1; }
	recv_wait rx || { echo "not ok - path: receiver"; exit 1; }
	jq -c -n --slurpfile rx "$NETNS_TMP/rx.json" --slurpfile tx "$NETNS_TMP/send.json" \
		--arg src "${SRC4[0]}" --argjson pin "$PIN" \
		--argjson rcvbuf_errors "$(num "$(udp_snmp RcvbufErrors)")" '
		($rx[0].sources[] | select(.src == $src)) as $s
		| {burst: $tx[0].sent, send_batch: $tx[0].batch, pinned: ($pin == 1),
		   send_pps: (if $tx[0].seconds > 0 then $tx[0].sent / $tx[0].seconds else 0 end),
		   arrived: $s.count, span_us: $s.span_us, gap_median_us: $s.gap_median_us,
		   arrive_pps: (if $s.span_us > 0 then ($s.count - 1) / $s.span_us * 1e6 else 0 end),
		   recv_drops: $rx[0].drops, rcvbuf_errors: $rcvbuf_errors}' |
		sed 's/^/bench-shape-path: /'
)

# one RATE: one lab, one burst, one JSON line. In a subshell: the lab's trap
# removes it when the subshell ends.
one() (
	local r=$1 n t_us name fq
	n=$(burst_for "$r")
	t_us=$(awk -v r="$r" 'BEGIN { printf "%.3f", 1e6 / r }')
	name="rate $r/s"
	shape_lab "bs$r" 46 1 || { echo "not ok - $name: lab set up"; exit 1; }
	if ! tx_exec tc qdisc add dev "$IF_TX" root fq 2>/dev/null; then
		echo "not ok - $name: this kernel ($(uname -r)) cannot make an fq qdisc"
		exit 1
	fi
	tx_exec tc qdisc del dev "$IF_TX" root
	if ! tx_sluice shape attach "$IF_TX" --rate "$r/s" --burst "$n" >"$NETNS_TMP/attach" 2>&1; then
		echo "not ok - $name: sluice shape attach $IF_TX --rate $r/s --burst $n: $(cat "$NETNS_TMP/attach")"
		exit 1
	fi
	diag "$name: $(tx_exec tc qdisc show dev "$IF_TX" | tr '\n' ' ')"
	pin_lab || { echo "not ok - $name: RPS on $IF_RX"; exit 1; }
	recv_start rx -t 3 -n "$n" -e "$t_us" || { echo "not ok - $name: receiver"; exit 1; }
	send -s "${SRC4[0]}" -d "$ADDR4_RX" -n "$n" -r $((r * 10)) -b "$BATCH" ||
		{ echo "not ok - $name: sender"; exit 1; }
	recv_wait rx || { echo "not ok - $name: receiver"; exit 1; }
	fq=$(tx_exec tc -s -j qdisc show dev "$IF_TX" | jq -c '[.[] | select(.kind == "fq")][0] // {}')
	jq -c -n --argjson rate "$r" --argjson n "$n" --argjson t "$t_us" \
		--slurpfile rx "$NETNS_TMP/rx.json" --slurpfile tx "$NETNS_TMP/send.json" \
		--arg src "${SRC4[0]}" --argjson fq "$fq" \
		--argjson shaped "$(num "$(shape_stat shaped)")" --argjson delayed "$(num "$(shape_stat delayed)")" \
		--argjson max_delay_ns "$(num "$(shape_stat max_delay_ns)")" \
		--argjson horizon_dropped "$(num "$(shape_stat horizon_dropped)")" \
		--argjson limited "$(num "$(ctl_stat limited)")" \
		--argjson rcvbuf_errors "$(num "$(udp_snmp RcvbufErrors)")" --argjson pin "$PIN" \
		--arg kernel "$(uname -r)" --argjson cpus "$(nproc)" '
		($rx[0].sources[] | select(.src == $src)) as $s
		| {rate: $rate, burst: $n, expect_gap_us: $t, kernel: $kernel, cpus: $cpus,
		   sent: $tx[0].sent, send_errors: $tx[0].errors, send_seconds: $tx[0].seconds,
		   send_batch: $tx[0].batch, pinned: ($pin == 1), recv_drops: $rx[0].drops, rcvbuf_errors: $rcvbuf_errors,
		   send_pps: (if $tx[0].seconds > 0 then $tx[0].sent / $tx[0].seconds else 0 end),
		   arrived: $s.count, lost: $s.lost, reordered: $s.reordered,
		   gap_median_us: $s.gap_median_us, gap_mean_us: $s.gap_mean_us,
		   err_median_us: $s.err_median_us, err_p99_us: $s.err_p99_us,
		   err_max_us: $s.err_max_us, span_us: $s.span_us,
		   span_want_us: (($s.count - 1) * $t), span_err_us: $s.span_err_us,
		   span_err_pct: $s.span_err_pct,
		   shaped: $shaped, delayed: $delayed, max_delay_ns: $max_delay_ns,
		   horizon_dropped: $horizon_dropped, limited: $limited,
		   fq_throttled: ($fq.throttled // null), fq_drops: ($fq.drops // null)}' |
		sed 's/^/bench-shape: /'
	tx_sluice shape detach "$IF_TX" >/dev/null 2>&1
)

echo "# shape-guest: kernel $(uname -r), $(nproc) CPUs, rates: $RATES, batch $BATCH, pinned $PIN"
st=0
path 0 || st=1
[ "$(nproc)" -ge 2 ] && { path 1 || st=1; }
for r in $RATES; do
	case $r in
	'' | *[!0-9]*) echo "not ok - SHAPE_RATES: '$r' is no packet rate (e.g. SHAPE_RATES='1000 10000')"; st=2; continue ;;
	esac
	one "$r" || st=1
done
exit $st
