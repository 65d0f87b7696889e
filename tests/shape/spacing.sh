#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The shaper spaces a burst: `sluice shape attach IF --rate 100/s --burst 100`
# on the sender's veth, one source sending 100 packets at 10 times the rate
# (1000/s): all are accepted (the queue has room for them), the first goes at
# once, the rest depart 10 ms apart (their EDT), measured at the receiver.
# The shaper's counters must agree with what the receiver saw: the mean and
# the longest delay (delay_ns / delayed, max_delay_ns) those of the arrivals,
# the histogram holding every delayed packet, and as many delayed as the
# shaper's algorithm gives on the sender's send times (99, all but the first,
# unless the sender stalled for an interval: then the next one found the
# queue drained). IPv4, then IPv6
# from a fresh source (a key of its own).
#
# Tolerances, from the guest's timers under qemu's software emulation
# (tests/shape/reference.sh measures the same on fq's own pacing): fq
# releases a packet when its timer fires, up to about a millisecond late now
# and then; a departure time is absolute, so one late packet does not move
# the next. The span of 99 gaps is asserted within 5 % of 990 ms and the
# median gap within 10 % of 10 ms; delays compared with the receiver's
# (arrival - send, less the first packet's) within 5 %.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape spacing"
shape_need_sluice "shape spacing"
shape_lab shsp 45 2 || { not_ok "shape spacing: lab set up"; exit 1; }
fq_or_skip "shape spacing"

T=10000 # us: 100/s
if ! expect_status 0 "shape attach --rate 100/s --burst 100" \
	tx_sluice shape attach "$IF_TX" --rate 100/s --burst 100; then
	exit 1
fi
diag "$(tx_exec tc qdisc show dev "$IF_TX")"

# spaced FAMILY SRC DST: one burst of 100 at 1000/s; the spacing checks.
spaced() {
	local fam=$1 src=$2 dst=$3 json=b$1 name
	name="IPv$fam: a burst of 100 at 10x the rate"
	recv_start "$json" -t 2 -n 100 -e "$T" -a || { not_ok "$name: receiver"; return 1; }
	send_burst -s "$src" -d "$dst" -n 100 -r 1000 -a || { not_ok "$name: sender"; return 1; }
	recv_wait "$json" || { not_ok "$name: receiver"; return 1; }
	recv_show "$json"
	local n span med
	n=$(src_field "$json" "$src" count)
	span=$(src_field "$json" "$src" span_us)
	med=$(src_field "$json" "$src" gap_median_us)
	diag "IPv$fam: $n arrived, span $span us (want 990000), median gap $med us," \
		"p99 |error| $(src_field "$json" "$src" err_p99_us) us"
	if [ "$n" = 100 ]; then ok "$name: all 100 arrive"; else not_ok "$name: all 100 arrive"; fi
	if within 5 "$span" 990000; then ok "$name: span 99 x 10 ms (5 %)"; else
		not_ok "$name: span 99 x 10 ms (5 %)"; fi
	if within 10 "$med" "$T"; then ok "$name: median gap 10 ms (10 %)"; else
		not_ok "$name: median gap 10 ms (10 %)"; fi
}

# Receiver's delays of recv NAME, source SRC: latency of every packet but the
# first, less the first's (which was not delayed), in us.
rx_delays() {
	jq -r --arg s "$2" '.sources[] | select(.src == $s) | .packets
		| (.[0][2]) as $base | .[1:][] | .[2] - $base' "$NETNS_TMP/$1.json"
}

spaced 4 "${SRC4[0]}" "$ADDR4_RX"
want4=$(delayed_range "${SRC4[0]}" "$T" 100 0)

read -r delayed delay_ns max_ns hist < <(shape_stat delayed delay_ns max_delay_ns hist)
read -r hsum top_bin < <(jq -r \
	'"\(add // 0) \([to_entries[] | select(.value > 0) | .key] | max // -1)"' <<<"$hist")
# The receiver's mean and longest delay, from one jq.
read -r rx_mean rx_max < <(rx_delays b4 "${SRC4[0]}" |
	awk '{ s += $1; n++; if (n == 1 || $1 > m) m = $1 } END { printf "%.1f %s\n", n ? s / n : 0, m }')
diag "counters: delayed $delayed, delay_ns $delay_ns, max_delay_ns $max_ns, hist $hist;" \
	"receiver: mean delay $rx_mean us, longest $rx_max us; delayed on the send times: $want4"
if in_range "$delayed" "$want4"; then
	ok "counters: delayed as the send times say (all but the first, or fewer after a stall)"
else
	not_ok "counters: delayed as the send times say (all but the first, or fewer after a stall)"
fi
if [ "${delayed:-0}" -gt 0 ] &&
	within 5 "$(awk -v d="$delay_ns" -v n="$delayed" 'BEGIN { print d / n / 1000 }')" "$rx_mean"; then
	ok "counters: mean delay (delay_ns / delayed) that of the arrivals (5 %)"
else
	not_ok "counters: mean delay (delay_ns / delayed) that of the arrivals (5 %)"
fi
if within 5 "$(awk -v d="${max_ns:-0}" 'BEGIN { print d / 1000 }')" "${rx_max:-0}"; then
	ok "counters: max_delay_ns that of the last arrival (5 %)"
else
	not_ok "counters: max_delay_ns that of the last arrival (5 %)"
fi
if [ -n "$delayed" ] && [ "$hsum" = "$delayed" ]; then ok "counters: the histogram holds every delayed packet"; else
	not_ok "counters: the histogram holds every delayed packet"; fi
# The longest delay's bucket: [i] holds delays under 2^i us.
rx_bin=$(awk -v d="${rx_max:-0}" 'BEGIN { i = 0; while (i < 23 && d >= 2 ^ i) i++; print i }')
if [ "$top_bin" -ge $((rx_bin - 1)) ] && [ "$top_bin" -le $((rx_bin + 1)) ]; then
	ok "counters: the histogram's longest bucket holds the receiver's longest delay"
else
	not_ok "counters: the histogram's longest bucket holds the receiver's longest delay (bucket $top_bin, receiver's $rx_bin)"
fi
limited=$(ctl_stat limited)
if [ "$limited" = 0 ]; then ok "sluicectl stats: nothing limited within the queue"; else
	not_ok "sluicectl stats: nothing limited within the queue (limited '$limited')"; fi

spaced 6 "${SRC6[0]}" "$ADDR6_RX"
want6=$(delayed_range "${SRC6[0]}" "$T" 100 0)
d6=$(shape_stat delayed)
if [ -n "$d6" ] && [ -n "$delayed" ] && in_range $((d6 - delayed)) "$want6"; then
	ok "counters: IPv6: as many more delayed as the send times say ($want6)"
else
	not_ok "counters: IPv6: as many more delayed as the send times say ($want6; before '$delayed', after '$d6')"
fi

expect_status 0 "shape detach" tx_sluice shape detach "$IF_TX"
tap_done
