#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice-gen itself: it refuses every address outside the benchmarking ranges
# (exit 2, nothing sent), and what it sends is valid: the receiver's stack
# counts every frame as a UDP datagram to a closed port, none with a bad
# checksum or header, with fixed and with rewritten sources, IPv4 and IPv6.
# It reports what the veth delivered: into a receiver that takes no XDP
# frames (no XDP program, GRO off) it says so, names the fix and exits 1.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "sluice-gen"
if [ ! -x "$SLUICE_GEN" ]; then
	skip "sluice-gen not built ($SLUICE_GEN is missing): run 'make'" "sluice-gen"
	exit 0
fi

netns_setup nt || { not_ok "build the namespaces and the veth pair"; exit 1; }
rx_counter_add udp_in meta l4proto udp || { not_ok "count at the receiver with nft"; exit 1; }

# refuse NAME ARGS: sluice-gen exits 2, names the ranges, and sends nothing.
refuse() {
	local name=$1 before
	shift
	before=$(rx_counter udp_in)
	expect_status 2 "refused: $name" tx_gen "$@" -n 10 || return
	if ! grep -q "198.18.0.0/15 and 2001:2::/48" <<<"$OUT"; then
		not_ok "the refusal of $name names the allowed ranges"
		diag "$OUT"
	fi
	sleep 0.1
	[ "$(rx_counter udp_in)" = "$before" ] || not_ok "nothing was sent for $name"
}
refuse "an IPv4 source outside 198.18.0.0/15" -s 203.0.113.1 -d "$ADDR4_RX"
refuse "an IPv4 destination outside 198.18.0.0/15" -s "$ADDR4_TX" -d 192.0.2.1
refuse "a source prefix wider than 198.18.0.0/15" -s 198.16.0.0/14 -d "$ADDR4_RX"
refuse "a source next to the range" -s 198.20.0.1 -d "$ADDR4_RX"
refuse "an IPv6 source outside 2001:2::/48" -s 2001:db8::1 -d "$ADDR6_RX"
refuse "an IPv6 destination outside 2001:2::/48" -s "$ADDR6_TX" -d 2001:3::1
refuse "an IPv6 source prefix wider than 2001:2::/48" -s 2001::/16 -d "$ADDR6_RX"
expect_status 2 "refused: an IPv4 source with an IPv6 destination" \
	tx_gen -s "$ADDR4_TX" -d "$ADDR6_RX" -n 1
expect_status 2 "refused: --keys beyond the prefix's size" \
	tx_gen -s 198.18.1.0/30 --keys 5 -d "$ADDR4_RX" -n 1

# snmp PROTO FIELD: a counter of the receiver's /proc/net/snmp (IPv4).
snmp() {
	rx_exec cat /proc/net/snmp | awk -v p="$1:" -v f="$2" '
		$1 == p && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
		$1 == p && h { for (i = 2; i <= NF; i++) if (n[i] == f) print $i }'
}
snmp6() { rx_exec cat /proc/net/snmp6 | awk -v f="$1" '$1 == f { print $2 }'; }

# valid FAMILY NAME ARGS: 2000 frames, each a good datagram at the receiver.
valid() {
	local fam=$1 name=$2 np ce he np1 ce1 he1 lost
	shift 2
	lost=$(tx_lost)
	if [ "$fam" = 4 ]; then
		np=$(snmp Udp NoPorts) ce=$(snmp Udp InCsumErrors) he=$(snmp Ip InHdrErrors)
	else
		np=$(snmp6 Udp6NoPorts) ce=$(snmp6 Udp6InCsumErrors) he=$(snmp6 Ip6InHdrErrors)
	fi
	if ! tx_gen "$@" -n 2000 -r 20000 >/dev/null; then
		not_ok "valid frames: $name (sluice-gen failed)"
		return
	fi
	sleep 0.3
	lost=$(($(tx_lost) - lost))
	if [ "$fam" = 4 ]; then
		np1=$(snmp Udp NoPorts) ce1=$(snmp Udp InCsumErrors) he1=$(snmp Ip InHdrErrors)
	else
		np1=$(snmp6 Udp6NoPorts) ce1=$(snmp6 Udp6InCsumErrors) he1=$(snmp6 Ip6InHdrErrors)
	fi
	# All delivered, but for what a starved receiver had no room for.
	if [ $((np1 - np)) -le 2000 ] && [ $((np1 - np + lost)) -ge 2000 ] &&
		[ "$ce1" = "$ce" ] && [ "$he1" = "$he" ]; then
		ok "valid frames: $name ($((np1 - np)) of 2000 delivered to UDP)"
	else
		not_ok "valid frames: $name"
		diag "UDP no-port +$((np1 - np)), checksum errors +$((ce1 - ce))," \
			"header errors +$((he1 - he)) (want 2000, 0, 0); $lost lost before XDP"
	fi
}
valid 4 "IPv4, one source" -s "$ADDR4_TX" -d "$ADDR4_RX"
# Not the receiver's /24: a source equal to its own or its broadcast address
# would be dropped by its stack as martian, whatever the checksums.
valid 4 "IPv4, random sources in 198.18.128.0/17" -s 198.18.128.0/17 -d "$ADDR4_RX"
valid 4 "IPv4, 7 sources, 1000-byte frames, XDP_REDIRECT" -s 198.18.64.0/24 --keys 7 \
	-d "$ADDR4_RX" -l 1000 --redirect
valid 6 "IPv6, one source" -s "$ADDR6_TX" -d "$ADDR6_RX"
valid 6 "IPv6, random sources in 2001:2::/48, odd length" -s 2001:2::/48 -d "$ADDR6_RX" -l 201
valid 6 "IPv6, random sources in a /112" -s 2001:2:0:1:2:3:4:0/112 -d "$ADDR6_RX"

# -n is exact, and --keys N gives exactly N sources: sluice (if built) keys
# them by /32, and its table must hold N IPv4 keys afterwards (the LRU
# table's entries, which bpftool lists by key).
if [ -x "$SLUICE" ]; then
	rx_sluice attach "$IF_RX" --table lru --rate 1000000/s >/dev/null 2>&1 ||
		{ not_ok "sluice attach, to count sources"; exit 1; }
	before=$(rx_counter udp_in) lost=$(tx_lost)
	tx_gen -s 198.18.128.0/20 --keys 50 -d "$ADDR4_RX" -n 5000 -r 50000 >/dev/null
	sleep 0.3
	lost=$(($(tx_lost) - lost))
	keys=$(bpftool -j map dump pinned "$RX_PINS/sluice_buckets" |
		grep -o '"family":4' | wc -l)
	got=$(($(rx_counter udp_in) - before))
	if [ "$keys" = 50 ] && all_passed "$got" 5000 "$lost"; then
		ok "-n 5000 --keys 50: 5000 frames from exactly 50 sources"
	else
		not_ok "-n 5000 --keys 50: 5000 frames from exactly 50 sources"
		diag "the receiver got $got frames ($lost lost before XDP);" \
			"sluice saw $keys IPv4 sources"
	fi
else
	skip "sluice not built" "-n 5000 --keys 50: 5000 frames from exactly 50 sources"
fi

# Which way this kernel lets sluice-gen send: live frames, or (where it
# refuses them) a packet socket. The report names it.
via=$(tx_gen -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1 -j | sed -n 's/.*"via":"\([a-z-]*\)".*/\1/p')
case $via in
live-frames | socket) ok "the report names the way the frames went: $via" ;;
*) not_ok "the report names the way the frames went (live-frames or socket)" ;;
esac

# A veth takes the generator's live frames only into a peer that runs NAPI:
# an XDP program in native mode, or GRO (which netns_setup turns on). Without
# either it drops every one, while every test run reports success.
rx_sluice detach "$IF_RX" >/dev/null 2>&1
if ! rx_exec ethtool -K "$IF_RX" gro off >/dev/null 2>&1; then
	not_ok "turn GRO off on the receiver (ethtool -K $IF_RX gro off)"
	tap_done
	exit
fi
if [ "$via" = socket ]; then
	# Out of a packet socket the veth takes every frame into its peer's
	# stack, XDP or not: nothing to warn of, and nothing lost.
	before=$(rx_counter udp_in)
	if expect_status 0 "through a socket, no XDP on the receiver, GRO off: sluice-gen succeeds" \
		tx_gen -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1000 -r 10000; then
		grep -q "^delivered 1000 to $IF_RX: .*0 with the queue full, 0 not taken" \
			<<<"$OUT" && ! grep -qi "warning" <<<"$OUT" &&
			ok "through a socket, no XDP on the receiver: 1000 delivered, no warning" ||
			{ not_ok "through a socket, no XDP on the receiver: 1000 delivered, no warning"; diag "$OUT"; }
	fi
	sleep 0.1
	got=$(($(rx_counter udp_in) - before))
	[ "$got" = 1000 ] && ok "through a socket, no XDP on the receiver: its stack got the 1000" ||
		{ not_ok "through a socket, no XDP on the receiver: its stack got the 1000"; diag "it got $got"; }
	for t in "sluice-gen fails (exit 1)" "sluice-gen says why" "it really got nothing" \
		"--expect-drops: the report says 0 delivered, 1000 not taken"; do
		skip "this kernel refuses live frames, so sluice-gen sends through a socket, which a veth takes without XDP" \
			"no XDP on the receiver, live frames: $t"
	done
else
	before=$(rx_counter udp_in)
	if expect_status 1 "no XDP on the receiver, GRO off: sluice-gen fails (exit 1)" \
		tx_gen -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1000; then
		for want in "$IF_RX, the veth's peer, has no XDP program" \
			"sluice attach $IF_RX --mode native" "nsenter --net=/var/run/netns/$NS_RX" \
			"delivered 0 to $IF_RX"; do
			if grep -qF -- "$want" <<<"$OUT"; then
				ok "no XDP on the receiver: sluice-gen says '$want'"
			else
				not_ok "no XDP on the receiver: sluice-gen says '$want'"
				diag "$OUT"
			fi
		done
	fi
	sleep 0.1
	got=$(($(rx_counter udp_in) - before))
	[ "$got" = 0 ] && ok "no XDP on the receiver: it really got nothing" ||
		{ not_ok "no XDP on the receiver: it really got nothing"; diag "it got $got frames"; }
	if expect_status 0 "no XDP on the receiver, --expect-drops: exit 0" \
		tx_gen -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1000 -r 10000 -j --expect-drops; then
		grep -q '"delivered":0,.*"not_taken":1000' <<<"$OUT" &&
			ok "--expect-drops: the report says 0 delivered, 1000 not taken" ||
			{ not_ok "--expect-drops: the report says 0 delivered, 1000 not taken"; diag "$OUT"; }
	fi
fi
if [ -x "$SLUICE" ]; then
	rx_sluice attach "$IF_RX" --rate 1000000/s --mode native >/dev/null 2>&1 ||
		{ not_ok "sluice attach $IF_RX --mode native"; exit 1; }
	before=$(rx_counter udp_in)
	if expect_status 0 "sluice in native mode on the receiver: sluice-gen succeeds" \
		tx_gen -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1000 -r 10000; then
		if grep -q "^delivered 1000 to $IF_RX: .*0 with the queue full, 0 not taken" \
			<<<"$OUT" && ! grep -qi "warning" <<<"$OUT"; then
			ok "native XDP on the receiver: 1000 delivered, no warning"
		else
			not_ok "native XDP on the receiver: 1000 delivered, no warning"
			diag "$OUT"
		fi
	fi
	sleep 0.1
	got=$(($(rx_counter udp_in) - before))
	[ "$got" = 1000 ] && ok "native XDP on the receiver: it got the 1000 frames" ||
		{ not_ok "native XDP on the receiver: it got the 1000 frames"; diag "it got $got"; }
else
	skip "sluice not built" "native XDP on the receiver: 1000 delivered, no warning"
fi
tap_done
