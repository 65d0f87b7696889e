#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Real clients through a SYN flood and a UDP flood, side by side: the lab of
# tests/net/clients.sh (tests/lib/clients.sh: nginx in a server namespace; a
# client and a flood namespace on one switch) with, in turn,
#   none       no limiter
#   sluice     sluice on the server's veth, the cookbook's two rules:
#              0.0.0.0/0 --proto tcp --tcp-flags syn --rate 20/s (burst 20)
#              0.0.0.0/0 --proto udp --sport 53 --rate 100/s (burst 100)
#   nftables   the same two limits as meters in a netdev ingress chain of the
#              server's veth (the earliest hook nftables has), each drop rule
#              with a named counter
#   hashlimit  the same as iptables-legacy raw PREROUTING hashlimit rules
#              (the real xt_hashlimit), --hashlimit-mode srcip
# For each: the SYN flood (trafgen, CLIENTS_SYN_PPS a second from 256
# spoofed sources in 198.19.70.0/24) and the UDP flood (sluice-gen,
# CLIENTS_UDP_PPS a second from source port 53 out of 16 sources in
# 198.18.71.0/24) run while the legitimate client, from its own address,
# makes CLIENTS_REQ requests with curl at 10 a second, each a new connection
# (completion rate, median and p99 of curl's time_total), then wrk runs
# 4 keep-alive connections for CLIENTS_WRK_S seconds (requests/s, its
# median and p99). The flood's packets offered are the senders' own counts;
# dropped, each system's own counters (sluicectl rule list -j, nft's named
# counters, iptables' rule counters); and what the server's TCP did with the
# SYNs that reached it (TcpExt SyncookiesSent, ListenDrops). CLIENTS_ROUNDS
# rounds (default 2), every other one in the reverse order.
#
# Usage: clients.sh OUTDIR (root; BUILD from run.sh). Writes OUTDIR/clients.json,
# and OUTDIR/clients.md from it (tools/bench/render.py clients).
set -uo pipefail

OUT=$1
BUILD=${BUILD:-build}
SYN_PPS=${CLIENTS_SYN_PPS:-50000}
UDP_PPS=${CLIENTS_UDP_PPS:-50000}
REQ=${CLIENTS_REQ:-100}
WRK_S=${CLIENTS_WRK_S:-4}
ROUNDS=${CLIENTS_ROUNDS:-2}
REQ_RATE=10
# The floods outlast the client's requests and wrk's run.
FLOOD_S=$((REQ / REQ_RATE + WRK_S + 2))

source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/clients.sh

die() { echo "bench clients: $*" >&2; exit 1; }
for t in nginx curl wrk trafgen nft iptables-legacy ethtool jq; do
	command -v "$t" >/dev/null || die "'$t' is missing: run 'sudo make deps'"
done

netns_setup bc 70 || die "could not build the namespaces"
clients_lab || die "could not build the switch, the client's and the flood's namespaces"
clients_nginx || die "nginx does not answer in the server's namespace"
NFT_T="bc$$"
NFT_SYN="ip protocol tcp tcp flags & (syn | ack) == syn"
NFT_SYN="$NFT_SYN meter syn4 { ip saddr limit rate over 20/second burst 20 packets }"
NFT_SYN="$NFT_SYN counter name csyn drop"
NFT_UDP="ip protocol udp udp sport 53"
NFT_UDP="$NFT_UDP meter dns4 { ip saddr limit rate over 100/second burst 100 packets }"
NFT_UDP="$NFT_UDP counter name cudp drop"
HL="bc$$"

setup() {
	case $1 in
	none) ;;
	sluice)
		rx_sluice attach "$IF_RX" --rate 1000000/s --burst 1000000 >/dev/null &&
			rx_ctl -i "$IF_RX" rule add 0.0.0.0/0 --proto tcp --tcp-flags syn \
				--rate 20/s >/dev/null &&
			rx_ctl -i "$IF_RX" rule add 0.0.0.0/0 --proto udp --sport 53 \
				--rate 100/s >/dev/null
		;;
	nftables)
		rx_exec nft -f - <<-EOF
			table netdev $NFT_T {
				counter csyn { }
				counter cudp { }
				chain in {
					type filter hook ingress device "$IF_RX" priority 0;
					$NFT_SYN
					$NFT_UDP
				}
			}
		EOF
		;;
	hashlimit)
		rx_exec iptables-legacy -t raw -A PREROUTING -i "$IF_RX" -p tcp --syn \
			-m hashlimit --hashlimit-mode srcip --hashlimit-above 20/sec \
			--hashlimit-burst 20 --hashlimit-name "${HL}s" -j DROP &&
			rx_exec iptables-legacy -t raw -A PREROUTING -i "$IF_RX" -p udp --sport 53 \
				-m hashlimit --hashlimit-mode srcip --hashlimit-above 100/sec \
				--hashlimit-burst 100 --hashlimit-name "${HL}u" -j DROP
		;;
	esac
}

# dropped SYSTEM: "SYN_DROPPED UDP_DROPPED" by the system's own counters.
dropped() {
	case $1 in
	none) echo "- -" ;;
	sluice)
		rx_ctl -i "$IF_RX" -j rule list | jq -r '
			[(.[] | select(.match == "0.0.0.0/0 --proto tcp --tcp-flags syn") | .dropped),
			 (.[] | select(.match == "0.0.0.0/0 --proto udp --sport 53") | .dropped)] |
			map(tostring) | join(" ")'
		;;
	nftables)
		echo "$(rx_exec nft list counter netdev "$NFT_T" csyn |
			awk '$1 == "packets" { print $2 }') $(rx_exec nft list counter netdev \
			"$NFT_T" cudp | awk '$1 == "packets" { print $2 }')"
		;;
	hashlimit)
		rx_exec iptables-legacy -t raw -nvxL PREROUTING |
			awk '$3 == "DROP" && ($4 == "tcp" || $4 == "6") { s = $1 }
			     $3 == "DROP" && ($4 == "udp" || $4 == "17") { u = $1 }
			     END { print s + 0, u + 0 }'
		;;
	esac
}

teardown() {
	case $1 in
	sluice) rx_sluice detach "$IF_RX" >/dev/null 2>&1 ;;
	nftables) rx_exec nft delete table netdev "$NFT_T" ;;
	hashlimit) rx_exec iptables-legacy -t raw -F PREROUTING ;;
	esac
}

# tcpext: "SYNCOOKIESSENT LISTENDROPS" of the server's namespace (its TcpExt
# counters: the SYN-ACKs that answered with a cookie, the SYNs that no queue
# took).
tcpext() {
	ip netns exec "$NS_RX" awk '$1 == "TcpExt:" {
		if (!h) { for (i = 2; i <= NF; i++) k[$i] = i; h = 1; next }
		print $k["SyncookiesSent"] + 0, $k["ListenDrops"] + 0 }' /proc/net/netstat
}

# wrk_run: "REQUESTS_PER_S P50_MS P99_MS ERRORS" of wrk's keep-alive run.
wrk_run() {
	ip netns exec "$NS_CLI" wrk -t 1 -c 4 -d "${WRK_S}s" --timeout 2s --latency \
		"http://$ADDR4_RX:8080/" 2>&1 | awk '
		function ms(v) {
			if (v ~ /us$/) return v / 1000
			if (v ~ /ms$/) return v + 0
			if (v ~ /s$/) return v * 1000
			return v + 0
		}
		$1 == "Requests/sec:" { rps = $2 }
		$1 == "50%" { p50 = ms($2) }
		$1 == "99%" { p99 = ms($2) }
		$1 == "Socket" { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
		$1 == "Non-2xx" { err += $NF }
		END { printf "%.0f %.3f %.3f %d\n", rps, p50, p99, err }'
}

# run_one SYSTEM ROUND: one row.
run_one() {
	local sys=$1 round=$2 got n med p99 rps wp50 wp99 werr sd ud c0 l0 c1 l1
	echo "bench clients: round $round, $sys" >&2
	setup "$sys" || die "could not set up $sys"
	read -r c0 l0 <<<"$(tcpext)"
	clients_syn_flood $((SYN_PPS * FLOOD_S)) "$SYN_PPS" 198.19.70
	clients_udp_flood -s 198.18.71.0/24 --keys 16 -r "$UDP_PPS" -t "$FLOOD_S"
	sleep 0.5
	read -r got n med p99 <<<"$(clients_curl "$REQ" "$REQ_RATE")"
	read -r rps wp50 wp99 werr <<<"$(wrk_run)"
	gen_stop udp
	clients_syn_stop
	clients_syn_wait || die "trafgen failed ($sys)"
	gen_wait udp || die "sluice-gen failed ($sys)"
	read -r sd ud <<<"$(dropped "$sys")"
	read -r c1 l1 <<<"$(tcpext)"
	teardown "$sys"
	rows+=("$(jq -cn --arg s "$sys" --argjson r "$round" --argjson got "$got" --argjson n "$n" \
		--argjson med "$med" --argjson p99 "$p99" --argjson rps "$rps" \
		--argjson wp50 "$wp50" --argjson wp99 "$wp99" --argjson werr "$werr" \
		--argjson syn "$CLIENTS_SYN_SENT" --argjson udp "$udp_packets" \
		--argjson syns "$CLIENTS_SYN_SECS" --argjson udps "$udp_seconds" \
		--arg sd "$sd" --arg ud "$ud" --argjson ck $((c1 - c0)) --argjson ld $((l1 - l0)) \
		'{system: $s, round: $r, completed: $got, requests: $n, median_ms: $med, p99_ms: $p99,
		  wrk_rps: $rps, wrk_p50_ms: $wp50, wrk_p99_ms: $wp99, wrk_errors: $werr,
		  syn_sent: $syn, syn_seconds: $syns, udp_sent: $udp, udp_seconds: $udps,
		  syn_dropped: (if $sd == "-" then null else ($sd | tonumber) end),
		  udp_dropped: (if $ud == "-" then null else ($ud | tonumber) end),
		  syncookies_sent: $ck, listen_drops: $ld}')")
	sleep 1
}

rows=()
for round in $(seq "$ROUNDS"); do
	# Every other round in the reverse order: what the machine's other load
	# does to one system's turn shows as a difference between its rounds.
	order="none sluice nftables hashlimit"
	[ $((round % 2)) = 0 ] && order="hashlimit nftables sluice none"
	for sys in $order; do
		run_one "$sys" "$round"
	done
done

printf '%s\n' "${rows[@]}" | jq -s --arg k "$(uname -r)" --argjson c "$(nproc)" \
	--arg d "$(date -u +%Y-%m-%d)" --argjson sp "$SYN_PPS" --argjson up "$UDP_PPS" \
	--argjson req "$REQ" --argjson rate "$REQ_RATE" --argjson ws "$WRK_S" \
	--argjson rounds "$ROUNDS" \
	'{kernel: $k, cpus: $c, date: $d, rounds: $rounds, syn_pps: $sp, syn_sources: 256,
	  udp_pps: $up, udp_sources: 16, requests: $req, req_rate: $rate, wrk_s: $ws, rows: .}' \
	>"$OUT/clients.json"
tools/bench/render.py clients "$OUT/clients.json" "$OUT/clients.md"
cat "$OUT/clients.md"
