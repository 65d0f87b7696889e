#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice-gen -p tcp: the SYNs of a SYN flood, IPv4 and IPv6, from one source
# and from random sources in a prefix. --check gives copies of the frame
# their sources through both ways out (the XDP program, in test runs without
# live frames, and the packet socket's sender) and checks every checksum, so
# both are checked whichever this kernel sends with. Then real frames: the
# receiver's nftables counts them as SYNs (SYN without ACK, to the port
# asked), and its TCP takes each as a segment with no checksum or header
# error (Tcp InSegs, InCsumErrors, InErrs; a source on the link is answered
# with a RST, the closed port's reply to a SYN). With sluice built, a rule
# --proto tcp --tcp-flags syn holds the flood per source.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "sluice-gen -p tcp" nft jq
if [ ! -x "$SLUICE_GEN" ]; then
	skip "sluice-gen not built ($SLUICE_GEN is missing): run 'make'" "sluice-gen -p tcp"
	exit 0
fi

netns_setup gs 47 || { not_ok "build the namespaces and the veth pair"; exit 1; }
PORT=8080
SYN='tcp flags & (syn | ack) == syn'
rx_counter_add syn4 meta protocol ip tcp dport $PORT "$SYN" &&
	rx_counter_add syn6 meta protocol ip6 tcp dport $PORT "$SYN" ||
	{ not_ok "count SYNs at the receiver with nft"; exit 1; }

# ---- usage ----
expect_usage "-p icmp" "udp or tcp" tx_gen -p icmp -s "$ADDR4_TX" -d "$ADDR4_RX" -n 1
expect_usage "-p tcp -l 50 (shorter than a SYN's headers)" "need 54" \
	tx_gen -p tcp -s "$ADDR4_TX" -d "$ADDR4_RX" -l 50 -n 1
expect_usage "-p tcp from outside the benchmarking ranges" "198.18.0.0/15 and 2001:2::/48" \
	tx_gen -p tcp -s 203.0.113.0/24 -d "$ADDR4_RX" -n 1

# ---- both ways out, checked frame by frame, nothing sent ----
checked() {
	local name=$1
	shift
	if expect_status 0 "--check: $name" tx_gen -p tcp --dport $PORT "$@" --check 5000; then
		grep -q "^checked 5000 TCP SYN frames out of the XDP program and 5000 out of the packet socket's sender: all valid" \
			<<<"$OUT" && ok "--check: $name: 5000 valid SYNs each way" ||
			{ not_ok "--check: $name: 5000 valid SYNs each way"; diag "$OUT"; }
	fi
}
checked "IPv4, random sources in 198.18.0.0/15" -s 198.18.0.0/15 -d "$ADDR4_RX"
checked "IPv4, 7 sources, VLAN tag, 1000-byte frames, XDP_REDIRECT" -s 198.18.64.0/24 \
	--keys 7 --vlan 12 -l 1000 --redirect -d "$ADDR4_RX"
checked "IPv6, random sources in 2001:2::/48" -s 2001:2::/48 -d "$ADDR6_RX"
checked "IPv6, random sources in a /112, odd length" -s 2001:2:0:1:2:3:4:0/112 -l 201 \
	-d "$ADDR6_RX"

# tcp FIELD: a Tcp counter of the receiver's /proc/net/snmp (TCP's counters
# are one MIB for IPv4 and IPv6).
tcp() {
	rx_exec cat /proc/net/snmp | awk -v f="$1" '
		$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
		$1 == "Tcp:" && h { for (i = 2; i <= NF; i++) if (n[i] == f) print $i }'
}
hdr_errors() {
	if [ "$1" = 4 ]; then
		rx_exec cat /proc/net/snmp |
			awk '$1 == "Ip:" && !h { for (i = 2; i <= NF; i++) if ($i == "InHdrErrors") c = i; h = 1; next }
			     $1 == "Ip:" && h { print $c }'
	else
		rx_exec cat /proc/net/snmp6 | awk '$1 == "Ip6InHdrErrors" { print $2 }'
	fi
}
snap() { echo "$(rx_counter "syn$1") $(tcp InSegs) $(tcp InCsumErrors) $(tcp InErrs) $(tcp OutRsts) $(hdr_errors "$1")"; }

# sent FAM NAME ARGS: 2000 SYNs, each counted by nft as a SYN to PORT and
# taken by TCP as a good segment. The generator's own count of what the veth
# took ("delivered") is what must arrive.
sent() {
	local fam=$1 name=$2 s0 s1 dl a b c d e f a1 b1 c1 d1 e1 f1
	shift 2
	s0=$(snap "$fam")
	if ! OUT=$(tx_gen -p tcp --dport $PORT "$@" -n 2000 -r 20000 -j 2>&1); then
		not_ok "SYNs: $name (sluice-gen failed)"
		diag "$OUT"
		return 1
	fi
	dl=$(sed -n 's/.*"delivered":\([0-9]*\).*/\1/p' <<<"$OUT")
	sleep 0.3
	s1=$(snap "$fam")
	read -r a b c d e f <<<"$s0"
	read -r a1 b1 c1 d1 e1 f1 <<<"$s1"
	if [ -n "$dl" ] && [ "$dl" -ge 1900 ] && [ $((a1 - a)) = "$dl" ] &&
		[ $((b1 - b)) = "$dl" ] && [ "$c1" = "$c" ] && [ "$d1" = "$d" ] && [ "$f1" = "$f" ]; then
		ok "SYNs: $name ($dl of 2000 delivered: nft counted $dl SYNs to port $PORT, TCP took $dl segments, no checksum or header error)"
	else
		not_ok "SYNs: $name"
		diag "delivered ${dl:-?} of 2000; nft SYNs +$((a1 - a)), Tcp InSegs +$((b1 - b))," \
			"InCsumErrors +$((c1 - c)), InErrs +$((d1 - d)), IP header errors +$((f1 - f))" \
			"(want delivered, delivered, 0, 0, 0)"
	fi
	RSTS=$((e1 - e)) DELIVERED=${dl:-0}
}
sent 4 "IPv4, one source" -s "$ADDR4_TX" -d "$ADDR4_RX"
[ "$RSTS" = "$DELIVERED" ] &&
	ok "IPv4, one source on the link: TCP answered each SYN to the closed port with a RST ($RSTS)" ||
	not_ok "IPv4, one source on the link: TCP answered each SYN with a RST (OutRsts +$RSTS of $DELIVERED)"
# Not the receiver's /24: its own address or its broadcast would be martian.
sent 4 "IPv4, random sources in 198.18.128.0/17" -s 198.18.128.0/17 -d "$ADDR4_RX"
sent 6 "IPv6, one source" -s "$ADDR6_TX" -d "$ADDR6_RX"
sent 6 "IPv6, random sources in 2001:2::/48, 300-byte frames" -s 2001:2::/48 -d "$ADDR6_RX" \
	-l 300
sent 6 "IPv6, random sources in a /112" -s 2001:2:0:1:2:3:4:0/112 -d "$ADDR6_RX"

# ---- sluice sees them as SYNs, one bucket per source ----
if [ -x "$SLUICE" ] && [ -x "$SLUICECTL" ]; then
	rx_sluice attach "$IF_RX" --rate 1000000/s >/dev/null 2>&1 &&
		rx_ctl -i "$IF_RX" rule add 0.0.0.0/0 --proto tcp --tcp-flags syn --rate 1/h \
			--burst 5 >/dev/null &&
		rx_ctl -i "$IF_RX" rule add ::/0 --proto tcp --tcp-flags syn --rate 1/h \
			--burst 5 >/dev/null ||
		{ not_ok "sluice attach, and a SYN rule per family"; tap_done; exit; }
	rx_counter_reset syn4
	rx_counter_reset syn6
	for fam in 4 6; do
		if [ "$fam" = 4 ]; then src=198.18.128.0/17 dst=$ADDR4_RX m="0.0.0.0/0"
		else src=2001:2::/48 dst=$ADDR6_RX m="::/0"; fi
		m="$m --proto tcp --tcp-flags syn"
		OUT=$(tx_gen -p tcp --dport $PORT -s "$src" --keys 10 -d "$dst" -n 1000 -r 20000 -j 2>&1)
		dl=$(sed -n 's/.*"delivered":\([0-9]*\).*/\1/p' <<<"$OUT")
		sleep 0.3
		got=$(row "$m" | jq -r '"\(.passed) \(.dropped)"' 2>/dev/null)
		after=$(rx_counter "syn$fam")
		# 10 sources (distinct /64s for IPv6), a burst of 5 each: 50 pass.
		if [ "$dl" = 1000 ] && [ "$got" = "50 950" ] && [ "$after" = 50 ]; then
			ok "IPv$fam: rule $m holds 1000 SYNs from 10 sources to 5 each (50 passed, 950 dropped; nft after XDP saw 50)"
		else
			not_ok "IPv$fam: rule $m holds 1000 SYNs from 10 sources to 5 each"
			diag "delivered ${dl:-?}; rule passed, dropped: ${got:-?} (want 50 950); nft after XDP: $after"
		fi
	done
	rx_sluice detach "$IF_RX" >/dev/null 2>&1
else
	skip "sluice not built" "sluice holds SYNs from sluice-gen per source"
fi
tap_done
