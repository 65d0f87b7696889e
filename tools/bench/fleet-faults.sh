#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The fleet's promise through its agents' faults (issue 20, B6 to B8), each
# scenario as the issue measured it, counted independently of sluice: an nft
# counter in each box's netdev ingress hook, which sees only what XDP passed.
#
#   dead     three boxes, --rate 200/s --burst 60 --fleet on, --sync-interval
#            50ms; one IPv6 source sprayed at 300, 600 and 1200 pps for 5 s;
#            box 3's agent killed -9 after 1 s. Prints what the fleet
#            admitted against burst + rate x t + (N - 1) x rate x (S + RTT)
#            (the bound without dead boxes) and against docs/fleet.md's bound
#            with one dead box (+ rate x H + burst / N, H = 3 S + 2 RTT).
#   spray    two boxes, --rate 100/s --burst 300 --fleet on, one source at
#            500 pps to each for 3 s: admitted against burst + rate x t.
#   restart  two boxes, --rate 100/s --fleet on (the outage share 50/s), a
#            source at 45 pps to box 1 through a 10 s outage of its agent
#            (killed -9, and stopped with SIGINT), started again: what passed
#            in the next 3 s of 135 sent.
#
# Usage: tools/bench/fleet-faults.sh [dead] [spray] [restart] (root; all
# three by default; BUILD as run.sh, REPEAT runs of each, default 1). Every
# box is a namespace of its own with a veth to one generator namespace, its
# own sluice and its own `sluice run --redis` against one redis-server on a
# unix socket in a temporary directory; all of it is removed on exit.
set -u

BUILD=${BUILD:-build}
SLUICE=${SLUICE:-$BUILD/sluice}
SLUICECTL=${SLUICECTL:-$BUILD/sluicectl}
SLUICE_GEN=${SLUICE_GEN:-$BUILD/sluice-gen}
REPEAT=${REPEAT:-1}
SCENARIOS=${*:-dead spray restart}

for t in redis-server redis-cli jq nft "$SLUICE" "$SLUICECTL" "$SLUICE_GEN"; do
	command -v "$t" >/dev/null || { echo "fleet-faults: $t is missing" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "fleet-faults: needs root" >&2; exit 1; }

P=ff$$
NS_G="ff-gen-$$"
D=$(mktemp -d /tmp/sluice-ff.XXXXXX) || exit 1
SOCK=$D/redis.sock
NSB=() IFT=() IFR=() RUNP=() GENP=()
NBOX=0
REDIS_PID=

cleanup() {
	local pid i
	for pid in "${GENP[@]}" "${RUNP[@]}" $REDIS_PID; do
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	done
	for pid in "${GENP[@]}" "${RUNP[@]}" $REDIS_PID; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
	for ((i = 1; i <= NBOX; i++)); do
		bx "$i" "$SLUICE" detach "${IFR[$i]}" >/dev/null 2>&1
		ip netns del "${NSB[$i]}" 2>/dev/null
	done
	ip netns del "$NS_G" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bx() { local i=$1; shift; nsenter --net="/var/run/netns/${NSB[$i]}" "$@"; }
calc() { awk "BEGIN { printf \"%.1f\", $* }"; }

# lab N: the generator and N boxes; box i is 198.18.i.2 and 2001:2:0:i::2.
lab() {
	local i
	ip netns add "$NS_G" && ip -n "$NS_G" link set lo up || return 1
	for ((i = 1; i <= $1; i++)); do
		NSB[$i]="ff-b$i-$$" IFT[$i]="${P}t$i" IFR[$i]="${P}r$i"
		ip netns add "${NSB[$i]}" || return 1
		NBOX=$i
		ip link add "${IFT[$i]}" netns "$NS_G" type veth peer name "${IFR[$i]}" \
			netns "${NSB[$i]}" || return 1
		ip -n "$NS_G" addr add "198.18.$i.1/24" dev "${IFT[$i]}" &&
			ip -n "$NS_G" addr add "2001:2:0:$i::1/64" dev "${IFT[$i]}" nodad &&
			ip -n "${NSB[$i]}" addr add "198.18.$i.2/24" dev "${IFR[$i]}" &&
			ip -n "${NSB[$i]}" addr add "2001:2:0:$i::2/64" dev "${IFR[$i]}" nodad &&
			ip -n "${NSB[$i]}" link set lo up && ip -n "$NS_G" link set "${IFT[$i]}" up &&
			ip -n "${NSB[$i]}" link set "${IFR[$i]}" up || return 1
		bx "$i" nft -f - <<-EOF || return 1
		table netdev ff {
			counter passed {}
			chain in {
				type filter hook ingress device "${IFR[$i]}" priority 0;
			}
		}
		EOF
	done
}

redis_up() {
	redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' \
		--appendonly no --daemonize no >>"$D/redis.log" 2>&1 &
	REDIS_PID=$!
	for _ in $(seq 100); do
		redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.05
	done
	echo "fleet-faults: redis-server did not start" >&2
	return 1
}

# attach_all N ARGS: sluice on boxes 1..N with ARGS, the default policy fleet-wide.
attach_all() {
	local n=$1 i
	shift
	for ((i = 1; i <= n; i++)); do
		bx "$i" "$SLUICE" detach "${IFR[$i]}" >/dev/null 2>&1
		bx "$i" "$SLUICE" attach "${IFR[$i]}" "$@" >/dev/null &&
			bx "$i" "$SLUICECTL" -i "${IFR[$i]}" set --fleet on >/dev/null || return 1
	done
}

# run_box I FLEET SYNC: box I's agent (RUNP[I]).
run_box() {
	nsenter --net="/var/run/netns/${NSB[$1]}" "$SLUICE" run "${IFR[$1]}" --interval 60 \
		--redis "unix:$SOCK" --fleet "$2" --sync-interval "$3" >>"$D/run$1.log" 2>&1 &
	RUNP[$1]=$!
}

# synced N BOXES: wait until each of boxes 1..N says synced with BOXES boxes.
synced() {
	local i k ok
	for ((k = 0; k < 200; k++)); do
		ok=1
		for ((i = 1; i <= $1; i++)); do
			bx "$i" "$SLUICECTL" -i "${IFR[$i]}" stats -j 2>/dev/null |
				jq -e ".fleet.state == \"synced\" and .fleet.boxes == $2" \
					>/dev/null 2>&1 || { ok=0; break; }
		done
		[ $ok = 1 ] && return 0
		sleep 0.05
	done
	echo "fleet-faults: the boxes did not sync" >&2
	return 1
}

# count SRC BOXES...: (re)start each box's counter of SRC; counted SRC BOXES...
# prints the sum and each box's.
count() {
	local src=$1 i fam=ip
	shift
	case $src in *:*) fam=ip6 ;; esac
	for i in "$@"; do
		bx "$i" nft flush chain netdev ff in &&
			bx "$i" nft reset counter netdev ff passed >/dev/null &&
			bx "$i" nft add rule netdev ff in $fam saddr "$src" counter name passed
	done
}
counted() {
	local sum=0 per="" i v
	for i in "$@"; do
		v=$(bx "$i" nft list counter netdev ff passed |
			awk '$1 == "packets" { print $2 }')
		sum=$((sum + v))
		per+=" $v"
	done
	echo "$sum ($per )"
}

# gen I SRC PPS SECS: a generator to box I in the background (GENP).
gen() {
	local dst="198.18.$1.2"
	case $2 in *:*) dst="2001:2:0:$1::2" ;; esac
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$1]}" -s "$2" -d "$dst" \
		-r "$3" -t "$4" -j >"$D/gen$1.json" 2>"$D/gen$1.err" &
	GENP+=($!)
}
gens_wait() {
	local pid
	for pid in "${GENP[@]}"; do wait "$pid"; done
	GENP=()
	sleep 0.3
}
# gen_secs BOX...: the longest span of the generators to BOX...
gen_secs() {
	local i
	for i in "$@"; do jq -r .seconds "$D/gen$i.json"; done |
		awk '$1 > m { m = $1 } END { print m }'
}
rtt_ms() { bx "$1" "$SLUICECTL" -i "${IFR[$1]}" stats -j | jq .fleet.rtt_ms; }

stop_all() {
	local i
	for ((i = 1; i <= NBOX; i++)); do
		[ -n "${RUNP[$i]:-}" ] && kill -INT "${RUNP[$i]}" 2>/dev/null &&
			wait "${RUNP[$i]}" 2>/dev/null
		RUNP[$i]=
	done
}

dead() {
	local r=$1 fl src t rtt a
	fl="dead$r-$$" src="2001:2::b6:$r"
	attach_all 3 --rate 200/s --burst 60 || return 1
	for i in 1 2 3; do run_box "$i" "$fl" 50ms; done
	synced 3 3 || return 1
	count "$src" 1 2 3
	gen 1 "$src" 300 5
	gen 2 "$src" 600 5
	gen 3 "$src" 1200 5
	sleep 1
	kill -KILL "${RUNP[3]}"
	wait "${RUNP[3]}" 2>/dev/null
	RUNP[3]=
	gens_wait
	t=$(gen_secs 1 2 3)
	rtt=$(rtt_ms 1)
	a=$(counted 1 2 3)
	echo "dead: admitted $a in $t s; bound without dead boxes" \
		"$(calc "60 + 200 * $t + 2 * 200 * (0.05 + $rtt / 1000)"), with one" \
		"$(calc "60 + 200 * $t + 2 * 200 * (0.05 + $rtt / 1000) + 200 * (0.15 + 2 * $rtt / 1000) + 20")" \
		"(rtt $rtt ms)"
	stop_all
}

spray() {
	local r=$1 fl src t a
	fl="spray$r-$$" src="198.18.0.$((70 + r))"
	attach_all 2 --rate 100/s --burst 300 || return 1
	for i in 1 2; do run_box "$i" "$fl" 100ms; done
	synced 2 2 || return 1
	count "$src" 1 2
	gen 1 "$src" 500 3
	gen 2 "$src" 500 3
	gens_wait
	t=$(gen_secs 1 2)
	a=$(counted 1 2)
	echo "spray: admitted $a in $t s; burst + rate x t = $(calc "300 + 100 * $t")"
	stop_all
}

# restart R SIG: box 1's agent stopped with SIG for 10 s under 45 pps.
restart() {
	local r=$1 sig=$2 fl src a
	fl="restart$r$2-$$" src="198.18.0.$((90 + r))"
	attach_all 2 --rate 100/s || return 1
	for i in 1 2; do run_box "$i" "$fl" 100ms; done
	synced 2 2 || return 1
	gen 1 "$src" 45 15500ms
	sleep 1
	kill -"$sig" "${RUNP[1]}"
	wait "${RUNP[1]}" 2>/dev/null
	sleep 10
	run_box 1 "$fl" 100ms
	synced 2 2 || return 1
	count "$src" 1
	sleep 3
	a=$(counted 1)
	echo "restart ($sig): passed ${a%% *} of about 135 sent in the 3 s after the agent" \
		"came back"
	gens_wait
	stop_all
}

lab 3 || { echo "fleet-faults: could not build the lab" >&2; exit 1; }
redis_up || exit 1
for s in $SCENARIOS; do
	for ((r = 1; r <= REPEAT; r++)); do
		case $s in
		dead) dead "$r" ;;
		spray) spray "$r" ;;
		restart) restart "$r" KILL && restart "$r" INT ;;
		*) echo "fleet-faults: no scenario '$s' (dead, spray, restart)" >&2; exit 2 ;;
		esac
	done
done
