#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A quiet source is not delayed by a noisy one: with --rate 100/s --burst 100
# (keyed by source), a noisy source queues a burst of 100 (a second of
# delay), and meanwhile a quiet source sends 5 packets at 10/s, under its
# rate: they arrive at once (median latency under half an interval, 5 ms;
# the guest's timers add about 1 ms), none later than 100 ms (a stall of the
# emulated guest delayed one by 22 ms once; a quiet source queued behind the
# noisy one would wait 600 ms and more, what is left of the noisy queue
# while it sends), while the noisy source's last packet is a second behind.
# IPv4 and IPv6 (each source in a /64 of its own: the default IPv6 key).
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape isolation"
shape_need_sluice "shape isolation"
shape_lab shis 47 4 || { not_ok "shape isolation: lab set up"; exit 1; }
fq_or_skip "shape isolation"

expect_status 0 "shape attach --rate 100/s --burst 100" \
	tx_sluice shape attach "$IF_TX" --rate 100/s --burst 100 || exit 1

# isolated FAMILY NOISY QUIET DST
isolated() {
	local fam=$1 noisy=$2 quiet=$3 dst=$4 name="IPv$1: a quiet source beside a noisy one" q qm nl
	recv_start "i$fam" -t 2 -n 105 -a || { not_ok "$name: receiver"; return; }
	tx_exec "$SLUICE_PROBE" send -p "$PORT" -s "$noisy" -d "$dst" -n 100 >/dev/null &
	NETNS_PIDS+=($!)
	send_burst -s "$quiet" -d "$dst" -n 5 -r 10 || { not_ok "$name: sender"; return; }
	recv_wait "i$fam" || { not_ok "$name: receiver"; return; }
	recv_show "i$fam"
	q=$(jq -r --arg s "$quiet" '[.sources[] | select(.src == $s) | .packets[][2]] | max // "none"' \
		"$NETNS_TMP/i$fam.json")
	qm=$(jq -r --arg s "$quiet" '[.sources[] | select(.src == $s) | .packets[][2]] | sort
		| if length > 0 then .[length / 2 | floor] else "none" end' "$NETNS_TMP/i$fam.json")
	nl=$(jq -r --arg s "$noisy" '[.sources[] | select(.src == $s) | .packets[][2]] | max // 0' \
		"$NETNS_TMP/i$fam.json")
	diag "IPv$fam: quiet's median latency $qm us, longest $q us; noisy's longest $nl us"
	if [ "$(src_field "i$fam" "$quiet" count)" = 5 ] && fcmp "$qm < 5000 && $q < 100000"; then
		ok "$name: its 5 packets arrive at once"
	else
		not_ok "$name: its 5 packets arrive at once"
	fi
	if fcmp "$nl > 900000"; then ok "$name: the noisy one's burst is queued"; else
		not_ok "$name: the noisy one's burst is queued"; fi
}

# iso FAMILY:K: isolated with sources K (noisy) and K+1 (quiet). A case
# whose checks fail is measured once more from two sources of its own
# (shape_twice): a stall of the emulated guest delays every arrival after it.
iso() {
	local fam=${1%:*} k=${1#*:}
	if [ "$fam" = 4 ]; then
		isolated 4 "${SRC4[k]}" "${SRC4[k + 1]}" "$ADDR4_RX"
	else
		isolated 6 "${SRC6[k]}" "${SRC6[k + 1]}" "$ADDR6_RX"
	fi
}
shape_twice "IPv4: a quiet source beside a noisy one" iso 4:0 4:2
shape_twice "IPv6: a quiet source beside a noisy one" iso 6:0 6:2
expect_status 0 "shape detach" tx_sluice shape detach "$IF_TX"
tap_done
