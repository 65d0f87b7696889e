#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Real TCP clients through a SYN flood and a UDP flood: nginx (Debian's)
# serves in the server's namespace, sluice on its veth holds the cookbook's
# two rules,
#   0.0.0.0/0 --proto tcp --tcp-flags syn --rate 20/s
#   0.0.0.0/0 --proto udp --sport 53 --rate 100/s
# (a bucket per source under each). A legitimate client (curl, from its own
# namespace and address: 40 requests at 10 a second, each a new connection,
# so each a SYN) keeps completing its requests while a flood namespace sends,
# through the same switch, 20,000 SYNs a second from 256 spoofed sources
# (trafgen, 198.19.49.0/24) and 20,000 UDP packets a second from source port
# 53 out of 16 sources (sluice-gen, 198.18.50.0/24). The completion rate and
# the median and 99th percentile latency are in the TAP lines; what is
# asserted is functional: every request completes, each rule counted the
# flood and dropped most of it, nothing else was dropped, and the client's
# own key never dropped. The lab is tests/lib/clients.sh's (four namespaces:
# server, switch, client, flood); the same scenario side by side with no
# limiter, nftables and hashlimit is the bench's clients part.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/clients.sh

netns_need_root "clients" nginx curl trafgen ethtool jq
netns_need_sluice "clients"

SYN="0.0.0.0/0 --proto tcp --tcp-flags syn" UDP="0.0.0.0/0 --proto udp --sport 53"
SYN_SRC=198.19.49 SYN_N=80000 SYN_PPS=20000 UDP_PPS=20000 REQ=40 REQ_RATE=10

netns_setup cl 49 || { not_ok "build the namespaces and the veth pair"; exit 1; }
clients_lab || { not_ok "build the switch, the client's and the flood's namespaces"; exit 1; }
clients_nginx || { not_ok "nginx answers in the server's namespace"; exit 1; }

read -r got n med p99 <<<"$(clients_curl 20 "$REQ_RATE")"
if [ "$got" = "$n" ]; then
	ok "nginx answers the client with no limiter and no flood ($got of $n, median $med ms," \
		"p99 $p99 ms)"
else
	not_ok "nginx answers the client with no limiter and no flood ($got of $n)"
	exit 1
fi

expect_status 0 "attach" rx_sluice attach "$IF_RX" --rate 100000/s --burst 100000 || exit 1
# shellcheck disable=SC2086 # a rule's CIDR and match are words
expect_status 0 "rule add $SYN --rate 20/s" rx_ctl -i "$IF_RX" rule add $SYN --rate 20/s ||
	exit 1
# shellcheck disable=SC2086
expect_status 0 "rule add $UDP --rate 100/s" rx_ctl -i "$IF_RX" rule add $UDP --rate 100/s ||
	exit 1

# path_drops: what the veths on the floods' way dropped (queues full on a busy
# machine: before the receiver's XDP saw them): IF_FLD's into the switch and
# IF_TX's into IF_RX; both floods' and the client's.
path_drops() {
	local a b
	a=$(ip -n "$NS_FLD" -j -s link show "$IF_FLD" | jq '.[0].stats64.tx.dropped')
	b=$(ip -n "$NS_TX" -j -s link show "$IF_TX" | jq '.[0].stats64.tx.dropped')
	echo $((${a:-0} + ${b:-0}))
}
lost=$(path_drops)
# The floods for the client's 4 s and a little more.
clients_syn_flood "$SYN_N" "$SYN_PPS" "$SYN_SRC"
clients_udp_flood -s 198.18.50.0/24 --keys 16 -r "$UDP_PPS" -t 4.5
sleep 0.3
read -r got n med p99 <<<"$(clients_curl "$REQ" "$REQ_RATE")"
clients_syn_wait || not_ok "send the SYN flood with trafgen"
gen_wait udp || not_ok "send the UDP flood with sluice-gen"
lost=$(($(path_drops) - lost))
diag "offered: $CLIENTS_SYN_SENT SYNs from 256 sources, ${udp_packets:-?} UDP packets" \
	"from source port 53 out of 16 sources; the veths on the way dropped $lost"
rate=$(awk -v g="$got" -v n="$n" 'BEGIN { printf "%.1f", n ? 100 * g / n : 0 }')
if [ "$got" = "$n" ]; then
	ok "under both floods the client completes every request: $got of $n ($rate %)," \
		"median $med ms, p99 $p99 ms"
else
	not_ok "under both floods the client completes every request ($got of $n, $rate %)"
fi

rows=$(rx_ctl -i "$IF_RX" -j rule list)
field() { jq -r --arg m "$1" ".[] | select(.match == \$m) | .$2" <<<"$rows"; }
# held PASSED DROPPED SENT MOST: the rule counted at least 90 % of what was
# sent but what the veths on the way dropped ($lost, of both floods: a veth
# queue full on a busy machine, before XDP), passed at most MOST (every source's burst and its rate over the
# flood's span, and a little more) and dropped at least a third (a source's
# share is about 20 + 20 x 4 SYNs of its 310; 100 + 100 x 4.5 UDP packets of
# its 5,600).
held() {
	[ -n "$3" ] && [ $(($1 + $2 + lost)) -ge $(($3 * 9 / 10)) ] && [ "$1" -le "$4" ] &&
		[ "$2" -ge $(($3 / 3)) ]
}
# most SOURCES BURST RATE SECS [MORE]: SOURCES x (BURST + RATE x (SECS + 0.5)) + MORE.
most() {
	awk -v n="$1" -v b="$2" -v r="$3" -v t="$4" -v m="${5:-0}" \
		'BEGIN { printf "%d", n * (b + r * (t + 0.5)) + m }'
}
sp=$(field "$SYN" passed) sd=$(field "$SYN" dropped)
max=$(most 256 20 20 "${CLIENTS_SYN_SECS:-0}" "$REQ")
if held "$sp" "$sd" "$CLIENTS_SYN_SENT" "$max"; then
	ok "the SYN rule holds the spoofed sources to their shares (passed $sp with the" \
		"client's, at most $max; dropped $sd of $CLIENTS_SYN_SENT)"
else
	not_ok "the SYN rule holds the spoofed sources to their shares"
	diag "passed $sp (at most $max), dropped $sd, sent ${CLIENTS_SYN_SENT:-?}" \
		"over ${CLIENTS_SYN_SECS:-?} s; the veths on the way dropped $lost"
fi
up=$(field "$UDP" passed) ud=$(field "$UDP" dropped)
max=$(most 16 100 100 "${udp_seconds:-0}")
if held "$up" "$ud" "${udp_packets:-}" "$max"; then
	ok "the source port 53 rule holds the UDP flood to its shares (passed $up, at most" \
		"$max; dropped $ud of $udp_packets)"
else
	not_ok "the source port 53 rule holds the UDP flood to its shares"
	diag "passed $up (at most $max), dropped $ud, sent ${udp_packets:-?} over" \
		"${udp_seconds:-?} s; the veths on the way dropped $lost"
fi
stats=$(rx_ctl -i "$IF_RX" -j stats)
dropped=$(jq -r .dropped <<<"$stats") dd=$(field default dropped)
keys=$(jq -r .keys <<<"$stats")
if [ "$dropped" = $((sd + ud)) ] && [ "$dd" = 0 ] && [ "$keys" -ge $((256 + 16)) ]; then
	ok "sluice dropped only what the two rules dropped ($dropped), and took a key for each" \
		"source ($keys)"
else
	not_ok "sluice dropped only what the two rules dropped"
	diag "stats: $stats"
	diag "default policy dropped $dd"
fi
out=$(rx_ctl -i "$IF_RX" show "$ADDR4_TX")
if grep -q "^l4 rule   $SYN" <<<"$out" && [ "$(grep -c '^dropped   0$' <<<"$out")" = 2 ] &&
	! grep '^dropped' <<<"$out" | grep -qv '^dropped   0$'; then
	ok "the client's own key never dropped, under the SYN rule nor the default policy"
else
	not_ok "the client's own key never dropped"
	diag "$out"
fi
rx_sluice detach "$IF_RX" >/dev/null 2>&1
tap_done
