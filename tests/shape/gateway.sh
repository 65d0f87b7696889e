#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The shaper on a router: client -- gateway -- server, three namespaces, the
# gateway forwarding, its veth toward the server shaped (--rate 100/s
# --burst 100). Receive timestamps are on in the gateway (a socket there asks
# for SO_TIMESTAMPNS, which makes the kernel stamp every packet it receives:
# a forwarded packet can then carry a CLOCK_REALTIME tstamp that fq would read
# as a departure decades ahead): the shaper must still space a burst of 100
# sent at 10x the rate, IPv4 and IPv6. Tolerances as tests/shape/spacing.sh.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape gateway"
shape_need_sluice "shape gateway"
# client = NS_TX (198.18.51.1), gateway = NS_RX (198.18.51.2 and 198.18.52.1),
# server = NS_SV (198.18.52.2).
shape_lab shgw 51 || { not_ok "shape gateway: lab set up"; exit 1; }
NS_SV="shgw-sv-$$" IF_GW="shgwg$$" IF_SV="shgws$$"
shape_extra_cleanup() {
	rx_exec "$SLUICE" shape detach "$IF_GW" >/dev/null 2>&1
	netns_kill_all "$NS_SV"
	ip netns del "$NS_SV" 2>/dev/null
}
sv_exec() { nsenter --net="/var/run/netns/$NS_SV" "$@"; }
gw_up() {
	ip netns add "$NS_SV" &&
		ip link add "$IF_GW" netns "$NS_RX" type veth peer name "$IF_SV" netns "$NS_SV" &&
		ip -n "$NS_RX" addr add 198.18.52.1/24 dev "$IF_GW" &&
		ip -n "$NS_RX" addr add 2001:2:0:52::1/64 dev "$IF_GW" nodad &&
		ip -n "$NS_SV" addr add 198.18.52.2/24 dev "$IF_SV" &&
		ip -n "$NS_SV" addr add 2001:2:0:52::2/64 dev "$IF_SV" nodad &&
		ip -n "$NS_SV" link set lo up && ip -n "$NS_RX" link set "$IF_GW" up &&
		ip -n "$NS_SV" link set "$IF_SV" up &&
		ip netns exec "$NS_RX" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv6.conf.all.forwarding=1 &&
		ip -n "$NS_TX" route add 198.18.52.0/24 via "$ADDR4_RX" &&
		ip -n "$NS_TX" route add 2001:2:0:52::/64 via "$ADDR6_RX" &&
		ip -n "$NS_SV" route add 198.18.51.0/24 via 198.18.52.1 &&
		ip -n "$NS_SV" route add 2001:2:0:51::/64 via 2001:2:0:52::1 || return 1
	local mac_sv mac_gw
	mac_sv=$(ip -n "$NS_SV" -br link show dev "$IF_SV" | awk '{print $3}')
	mac_gw=$(ip -n "$NS_RX" -br link show dev "$IF_GW" | awk '{print $3}')
	ip -n "$NS_RX" neigh replace 198.18.52.2 lladdr "$mac_sv" dev "$IF_GW" nud permanent &&
		ip -n "$NS_RX" neigh replace 2001:2:0:52::2 lladdr "$mac_sv" dev "$IF_GW" nud permanent &&
		ip -n "$NS_SV" neigh replace 198.18.52.1 lladdr "$mac_gw" dev "$IF_SV" nud permanent &&
		ip -n "$NS_SV" neigh replace 2001:2:0:52::1 lladdr "$mac_gw" dev "$IF_SV" nud permanent
}
gw_up || { not_ok "shape gateway: three namespaces set up"; exit 1; }
if ! nsenter --net="/var/run/netns/$NS_RX" tc qdisc add dev "$IF_GW" root fq 2>/dev/null; then
	skip "this kernel ($(uname -r)) cannot make an fq qdisc (CONFIG_NET_SCH_FQ): tests/run.sh runs the shape suite in a qemu guest then" "shape gateway"
	exit 0
fi
rx_exec tc qdisc del dev "$IF_GW" root

# Receive timestamps on: a socket in the gateway that wants them.
rx_exec "$SLUICE_PROBE" recv -p 9999 -t 120 >/dev/null 2>&1 &
NETNS_PIDS+=($!)

expect_status 0 "shape attach on the gateway's veth toward the server" \
	rx_exec "$SLUICE" shape attach "$IF_GW" --rate 100/s --burst 100 || exit 1
SHAPE_PINS="$RX_NETNS_DIR/shape:$IF_GW" SHAPE_IF=$IF_GW SHAPE_EXEC=rx_exec
RECV_EXEC=sv_exec

forwarded() {
	local fam=$1 src=$2 dst=$3 json=g$1 name n span med
	name="IPv$fam through the gateway: a burst of 100 at 10x the rate"
	recv_start "$json" -t 2 -n 100 -e 10000 || { not_ok "$name: receiver"; return; }
	send_burst -s "$src" -d "$dst" -n 100 -r 1000 || { not_ok "$name: sender"; return; }
	recv_wait "$json" || { not_ok "$name: receiver"; return; }
	recv_show "$json"
	n=$(src_field "$json" "$src" count)
	span=$(src_field "$json" "$src" span_us)
	med=$(src_field "$json" "$src" gap_median_us)
	if [ "$n" = 100 ]; then ok "$name: all 100 arrive"; else not_ok "$name: all 100 arrive"; fi
	if within 5 "$span" 990000; then ok "$name: span 99 x 10 ms (5 %)"; else
		not_ok "$name: span 99 x 10 ms (5 %)"; fi
	if within 10 "$med" 10000; then ok "$name: median gap 10 ms (10 %)"; else
		not_ok "$name: median gap 10 ms (10 %)"; fi
}

forwarded 4 "$ADDR4_TX" 198.18.52.2
forwarded 6 "$ADDR6_TX" 2001:2:0:52::2
read -r c_sh c_de c_re c_ho < <(shape_stat shaped delayed restamped horizon_dropped)
diag "counters: shaped $c_sh, delayed $c_de, restamped $c_re (foreign tstamps cleared; 0 where" \
	"the kernel's forwarding cleared them first), horizon_dropped $c_ho"
if [ "$c_ho" = 0 ]; then ok "gateway: nothing dropped at the horizon"; else
	not_ok "gateway: nothing dropped at the horizon"; fi
expect_status 0 "shape detach on the gateway" rx_exec "$SLUICE" shape detach "$IF_GW"
tap_done
