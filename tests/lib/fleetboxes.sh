# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
# Boxes behind one gateway, the lab of the fleet tests (tests/net/fleet*.sh,
# tests/soak/day.sh); source it after tap.sh and netns.sh (pins_watch,
# pins_release). The script names the gateway's namespace NS_G, its
# interfaces' prefix P and its temporary directory D before it calls these.
#
#   boxes_trap           boxes_cleanup on exit, failure and Ctrl-C included
#   boxes_lab N NAME     the gateway's namespace NS_G and N box namespaces, a
#                        veth pair between the gateway and each box I:
#       NSB[I]     box I's namespace, NAME-bI-$$
#       IFT[I]     the gateway's end, ${P}tI, 198.18.I.1/24
#       IFR[I]     the box's end,     ${P}rI, 198.18.I.2/24
#       NETDIR[I]  box I's pin directory, /sys/fs/bpf/sluice/netns:INODE, the
#                  test's to clean up (pins_watch)
#       RUNLOG[I]  $D/runI.log, for box I's `sluice run`
#     lo up in every namespace; no IPv6 on the veths (nothing but the
#     generators' frames: no RS, MLD, DAD). What a box needs besides (an nft
#     count, another link) the script adds afterwards.
#   boxes_ingress N      in each of boxes 1..N, an nft netdev table "fleet"
#                        whose chain "in" hooks IFR[I]'s ingress: it runs after
#                        XDP, a count of what sluice passed by another
#   nft_count SRC BOX... count from now what each BOX passes from SRC
#   nft_counted SRC BOX  how many it has
#   box_run I ARGS       `sluice run IFR[I] ARGS` in box I, in the background:
#                        RUNP[I] is sluice's own pid, its output goes to RUNLOG[I]
#   box_kill I           that run killed -9 and waited for; RUNP[I] emptied
#   boxes_cleanup        the trap: boxes_stop (the script's, when it defines
#                        one: stops its processes), sluice detached on each box,
#                        pins_release, the box namespaces deleted, then NS_G and
#                        every namespace in BOXES_DEL, and D removed
#   boxes_redis_ns NS IP N  a namespace NS for Redis, IP on its lo, reached
#                        from each of boxes 1..N over a veth of its own
#                        (198.18.20I.0/24); the caller puts NS in BOXES_DEL
#   boxes_kill PID...    kill -9 each PID given (empty ones skipped), then reap
#                        them: the script's boxes_stop, for its processes
#   bx I CMD / gx CMD    run CMD in box I's namespace / the gateway's
#   ctl I ARGS           $SLUICECTL on box I's interface IFR[I]
#   le A B               true when the number A <= B
#   pass_if NAME CMD...  ok NAME when CMD succeeds, else not_ok (and false)
#   fleet_of I           box I's fleet object (sluicectl stats -j)
#   boxes_both JQ        wait (up to 20 s) until JQ holds of boxes 1 and 2's
#                        fleet objects; else say both and fail

NSB=() IFT=() IFR=() NETDIR=() RUNLOG=() RUNP=()
BOXES_DEL=() # more namespaces of the test's, deleted after NS_G

bx() { local i=$1; shift; nsenter --net="/var/run/netns/${NSB[$i]}" "$@"; }
gx() { nsenter --net="/var/run/netns/$NS_G" "$@"; }
ctl() { local i=$1; shift; bx "$i" "$SLUICECTL" -i "${IFR[$i]}" "$@"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
pass_if() { local n=$1; shift; if "$@"; then ok "$n"; else not_ok "$n"; return 1; fi; }
fleet_of() { ctl "$1" stats -j 2>/dev/null | jq -c .fleet; }
boxes_both() {
	local k
	for ((k = 0; k < 400; k++)); do
		fleet_of 1 | jq -e "$1" >/dev/null 2>&1 && fleet_of 2 | jq -e "$1" >/dev/null 2>&1 &&
			return 0
		sleep 0.05
	done
	diag "box 1: $(fleet_of 1)"
	diag "box 2: $(fleet_of 2)"
	return 1
}

boxes_kill() {
	local pid
	for pid in "$@"; do
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	return 0
}

boxes_redis_ns() {
	local ns=$1 ip=$2 n=$3 i
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up && ip -n "$ns" addr add "$ip/32" dev lo || return 1
	for ((i = 1; i <= n; i++)); do
		ip link add "${P}s$i" netns "$ns" type veth peer name "${P}c$i" \
			netns "${NSB[$i]}" || return 1
		ip -n "$ns" addr add "198.18.20$i.1/24" dev "${P}s$i" &&
			ip -n "${NSB[$i]}" addr add "198.18.20$i.2/24" dev "${P}c$i" &&
			ip -n "$ns" link set "${P}s$i" up &&
			ip -n "${NSB[$i]}" link set "${P}c$i" up &&
			ip -n "${NSB[$i]}" route add "$ip/32" via "198.18.20$i.1" || return 1
	done
}

boxes_trap() {
	trap boxes_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

boxes_lab() {
	local n=$1 name=$2 i
	ip netns add "$NS_G" || return 1
	ip -n "$NS_G" link set lo up || return 1
	for ((i = 1; i <= n; i++)); do
		NSB[i]="$name-b$i-$$"
		IFT[i]="${P}t$i"
		IFR[i]="${P}r$i"
		RUNLOG[i]=$D/run$i.log
		ip netns add "${NSB[i]}" || return 1
		NETDIR[i]="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/${NSB[i]}")"
		pins_watch "${NETDIR[i]}" "${NSB[i]}" || return 1
		ip link add "${IFT[i]}" netns "$NS_G" type veth peer name "${IFR[i]}" \
			netns "${NSB[i]}" || return 1
		gx sysctl -qw "net.ipv6.conf.${IFT[i]}.disable_ipv6=1" || return 1
		bx "$i" sysctl -qw "net.ipv6.conf.${IFR[i]}.disable_ipv6=1" || return 1
		ip -n "$NS_G" addr add "198.18.$i.1/24" dev "${IFT[i]}" &&
			ip -n "${NSB[i]}" addr add "198.18.$i.2/24" dev "${IFR[i]}" &&
			ip -n "${NSB[i]}" link set lo up &&
			ip -n "$NS_G" link set "${IFT[i]}" up &&
			ip -n "${NSB[i]}" link set "${IFR[i]}" up || return 1
	done
}

boxes_ingress() {
	local i
	for ((i = 1; i <= $1; i++)); do
		bx "$i" nft -f - <<-EOF || return 1
		table netdev fleet {
			chain in {
				type filter hook ingress device "${IFR[i]}" priority 0;
			}
		}
		EOF
	done
}

nft_count() {
	local src=$1 i name
	shift
	name=c${src//./_}
	for i in "$@"; do
		bx "$i" nft add counter netdev fleet "$name" &&
			bx "$i" nft add rule netdev fleet in ip saddr "$src" counter name "$name" ||
			return 1
	done
}
nft_counted() {
	bx "$2" nft list counter netdev fleet "c${1//./_}" |
		awk '$1 == "packets" { print $2; found = 1 } END { if (!found) exit 1 }'
}

box_run() {
	local i=$1
	shift
	# nsenter execs sluice: $! is sluice's own pid.
	nsenter --net="/var/run/netns/${NSB[i]}" "$SLUICE" run "${IFR[i]}" "$@" \
		>>"${RUNLOG[i]}" 2>&1 &
	# shellcheck disable=SC2034 # the script's (its boxes_stop stops it)
	RUNP[i]=$!
}

box_kill() {
	local i=$1
	kill -KILL "${RUNP[i]}" 2>/dev/null
	wait "${RUNP[i]}" 2>/dev/null
	RUNP[i]=
}

boxes_cleanup() {
	local st=$? i ns
	trap - EXIT INT TERM
	if declare -F boxes_stop >/dev/null; then
		boxes_stop
	fi
	for i in "${!NSB[@]}"; do
		if [ -n "${NSB[i]}" ] && ip netns list | grep -qw "${NSB[i]}"; then
			bx "$i" "$SLUICE" detach "${IFR[i]}" >/dev/null 2>&1
		fi
	done
	# What is left of the boxes' pins, only what this test made (pins_watch).
	pins_release
	for i in "${!NSB[@]}"; do
		[ -n "${NSB[i]}" ] && ip netns del "${NSB[i]}" 2>/dev/null
	done
	for ns in "${NS_G:-}" "${BOXES_DEL[@]}"; do
		[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	done
	[ -n "${D:-}" ] && rm -rf "$D"
	return $st
}
