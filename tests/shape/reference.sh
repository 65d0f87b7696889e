#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The measurement the shaper's tests rely on, proven without sluice: fq
# spaces a burst of 100 UDP packets at a known interval, and sluice-probe
# recv, at the receiver, must see that interval; with no pacing the same
# burst must look like a burst. Two ways of spacing: fq's own per-flow pacing
# (maxrate), and departure times the sender puts on every packet (SO_TXTIME,
# CLOCK_MONOTONIC), which fq honours exactly as it does the shaper's
# (EDT). At 1 ms and 10 ms, IPv4 and IPv6.
#
# fq paces a flow by packet length / maxrate; at rates above its
# low_rate_threshold (550 kbit by default) it spends a quantum (2 MTU) per
# pause instead, so the threshold is raised above the rates used here. The
# length fq sees is the frame: 14 (Ethernet) + 20 (IPv4) or 40 (IPv6) + 8
# (UDP) + payload = 100 bytes with a payload of 58 (IPv4) or 38 (IPv6):
# 800 kbit/s (100000 bytes/s) is one packet a millisecond, 80 kbit/s one
# every 10 ms.
#
# Tolerances. Under qemu's software emulation the guest's timers fire late by
# up to about a millisecond now and then (the spike for issue 12 saw single
# gaps off by up to 1.2 ms at a 1 ms interval, 0.46 ms at 10 ms). fq charges
# a late packet's lateness to the next gap, but at most half a gap: a stall
# of several intervals (the host's two cores shared with other guests) is
# only partly won back (measured: +0.02 % .. +4.4 % at 10 ms, +6.5 % ..
# +42 % at 1 ms), so its span is reported, not asserted. Departure
# times are absolute: a late packet does not move the next; only a stall at
# either end of the burst moves the span (up to 10 ms seen: -1.5 % at 1 ms),
# so it is asserted within 5 % at 10 ms and 10 % at 1 ms. Median gap within 10 % at 10 ms and
# 20 % at 1 ms (where one late timer is a whole interval); the p99 error is
# reported, not asserted. Unpaced, fq adds no wait: every packet's latency
# is within 10 % of the paced span of the quickest's.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape reference"
shape_lab shref 41 || { not_ok "shape reference: lab set up"; exit 1; }
fq_or_skip "shape reference"

# paced HOW FAMILY INTERVAL_US RATE SPAN_PCT MEDIAN_PCT: HOW maxrate (fq
# paces at RATE) or edt (the sender stamps departures, SO_TXTIME); SPAN_PCT
# "-": the span is reported, not asserted.
paced() {
	local how=$1 fam=$2 us=$3 rate=$4 spct=$5 mpct=$6 src dst len name json span med
	local opt=()
	if [ "$fam" = 4 ]; then src=$ADDR4_TX dst=$ADDR4_RX len=58; else
		src=$ADDR6_TX dst=$ADDR6_RX len=38; fi
	# A fresh fq each time: `replace` of an fq keeps the options not given.
	tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
	if [ "$how" = maxrate ]; then
		name="fq maxrate $rate paces 100 IPv$fam packets at $((us / 1000)) ms"
		tx_exec tc qdisc add dev "$IF_TX" root fq maxrate "$rate" \
			low_rate_threshold 1gbit flow_limit 1000 || { not_ok "$name: fq set up"; return; }
	else
		name="fq releases 100 IPv$fam packets at SO_TXTIME departures $((us / 1000)) ms apart"
		tx_exec tc qdisc add dev "$IF_TX" root fq flow_limit 1000 ||
			{ not_ok "$name: fq set up"; return; }
		opt=(-T "$us")
	fi
	# A guest that loses its vCPU for tens of ms (software emulation on a
	# busy host) gets every departure due meanwhile released at once: the
	# gaps then show one stall of many intervals and a run of near-zero
	# gaps, which at 1 ms makes the median a few us. That is the host
	# starving the guest, not fq's spacing: a run whose largest gap is
	# over 10 intervals (and 20 ms) is measured again, at most 3 runs, and
	# the checks read the last one.
	local try max
	for try in 1 2 3; do
		json=$how$fam$us.$try
		recv_start "$json" -t 3 -n 100 -e "$us" || { not_ok "$name: receiver"; return; }
		send_burst -s "$src" -d "$dst" -n 100 -l "$len" "${opt[@]}" ||
			{ not_ok "$name: sender"; return; }
		recv_wait "$json" || { not_ok "$name: receiver"; return; }
		recv_show "$json"
		max=$(src_field "$json" "$src" gap_max_us)
		[ -n "$max" ] && [ "$max" != null ] || break
		fcmp "$max > 10 * $us && $max > 20000" || break
		diag "$how IPv$fam at $us us: run $try had a stall of $max us (the guest lost" \
			"its CPU): measuring again"
	done
	span=$(src_field "$json" "$src" span_us)
	med=$(src_field "$json" "$src" gap_median_us)
	diag "$how IPv$fam at $us us: span $span us (want $((99 * us))), median gap $med us," \
		"p99 |error| $(src_field "$json" "$src" err_p99_us) us," \
		"span error $(src_field "$json" "$src" span_err_pct) %"
	if [ "$(src_field "$json" "$src" count)" = 100 ]; then ok "$name: all arrive"; else
		not_ok "$name: all arrive"; fi
	if [ "$spct" = - ]; then
		:
	elif within "$spct" "$span" $((99 * us)); then
		ok "$name: span 99 intervals ($spct %)"
	else
		not_ok "$name: span 99 intervals ($spct %)"
	fi
	if within "$mpct" "$med" "$us"; then ok "$name: median gap ($mpct %)"; else
		not_ok "$name: median gap ($mpct %)"; fi
}

paced maxrate 4 10000 80kbit - 10
paced maxrate 4 1000 800kbit - 20
paced maxrate 6 10000 80kbit - 10
paced maxrate 6 1000 800kbit - 20
paced edt 4 10000 - 5 10
paced edt 4 1000 - 10 20
paced edt 6 10000 - 5 10
paced edt 6 1000 - 10 20

# Unpaced: the control that shows the measurement can tell a burst (measured
# once more when it fails). What is checked is what the qdisc added: each
# packet's latency (arrival - send, -a) less the quickest's, all under 10 %
# of the 1 ms pacing's span (99 ms, which paced packets reach). The arrival
# span itself is shown, not asserted: the emulated sender alone has taken
# 18 to 36 ms for the 100, with pauses, while fq added nothing.
name="fq without maxrate: the receiver sees a burst"
unpaced() {
	local span spread
	if recv_start burst -t 3 -n 100 -e 1000 -a &&
		send_burst -s "$1" -d "$ADDR4_RX" -n 100 -l 58 -a && recv_wait burst; then
		span=$(src_field burst "$1" span_us)
		spread=$(jq -r --arg s "$1" '[.sources[] | select(.src == $s) | .packets[][2]]
			| if length == 100 then max - min else "lost" end' "$NETNS_TMP/burst.json")
		diag "unpaced: span $span us, latencies within $spread us of the quickest"
		if [ "$spread" != lost ] && fcmp "$spread < 9900"; then ok "$name"; else
			not_ok "$name"; fi
	else
		not_ok "$name"
	fi
}
tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
tx_exec tc qdisc add dev "$IF_TX" root fq flow_limit 1000
shape_twice "$name" unpaced "$ADDR4_TX" "$ADDR4_TX"
tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
tap_done
