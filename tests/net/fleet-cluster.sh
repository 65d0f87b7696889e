#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Redis Cluster (issue 24, items 2 and 4): two boxes share their fleet
# policy through a real three-primary cluster (Debian's redis-server
# --cluster-enabled yes, joined by redis-cli --cluster create), all of it in
# a namespace of the test's own (198.18.200.1:7001-7003, reached from each
# box over a veth of its own); the boxes are given one node, and find the
# others in the slot map:
#
#   1. both boxes synced, three shards; each key of a source on the shard
#      of its group's slot (found there with redis-cli);
#   2. a slot migrated mid-flood: SETSLOT IMPORTING / MIGRATING, MIGRATE of
#      its keys (the agent then gets ASK), SETSLOT NODE (then MOVED): the
#      boxes follow (ASK and MOVED counted), stay synced, no shard fault,
#      and the spray of a source of that slot is held to the bound
#      burst + rate x t + (N - 1) x rate x (2 S + RTT) + burst / 4;
#   3. a shard killed (-9) mid-flood: each box says so once (log, status,
#      metrics), stays synced; a source of that shard sprayed over both
#      boxes is held to the bound with an outage's terms (+ burst for the
#      switch, + N x rate x S: the interval before a box knew); a source of
#      that shard on box 1 alone gets at most its outage share, rate/N,
#      from then on; a source of another shard on box 1 alone still gets the
#      whole rate (its shard syncs).
# Every count is nft's at the boxes. Every process is stopped and every
# namespace deleted by the trap. A cluster with replicas, a primary failed
# over and agents killed and started again: tests/net/fleet-failover.sh.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh
source tests/lib/fleetcluster.sh

netns_need_root "fleet-cluster" jq redis-server redis-cli nft
netns_need_sluice "fleet-cluster"

RATE=100 BURST=100 N=2 SYNC_MS=100 PPS=300
RIP=198.18.200.1
FLEET=fc$$
P=fc$$
NS_G="fleet-clu-g-$$" NS_R="fleet-clu-r-$$"
PIDS=() RPIDS=()
declare -A RPID=()
D=$(mktemp -d /tmp/sluice-fleet-cluster.XXXXXX) || exit 1

boxes_stop() { boxes_kill "${PIDS[@]}" "${RUNP[@]}" "${RPIDS[@]}"; }
BOXES_DEL=("$NS_R")
boxes_trap

cluster_lab fleet-clu || { not_ok "build the generator, the cluster's namespace and two boxes"; exit 1; }
for p in 7001 7002 7003; do node_up $p; done
for _ in $(seq 100); do
	rcli -p 7003 ping >/dev/null 2>&1 && rcli -p 7001 ping >/dev/null 2>&1 &&
		rcli -p 7002 ping >/dev/null 2>&1 && break
	sleep 0.05
done
rx redis-cli --cluster create "$RIP:7001" "$RIP:7002" "$RIP:7003" --cluster-yes \
	>"$D/create.log" 2>&1
up=0
for _ in $(seq 200); do
	if [ "$(for p in 7001 7002 7003; do rcli -p $p cluster info; done |
		grep -c 'cluster_state:ok')" = 3 ]; then
		up=1
		break
	fi
	sleep 0.05
done
if [ $up = 0 ]; then
	not_ok "three primaries joined in one cluster"
	diag "$(tail -5 "$D"/create.log "$D"/redis*.log)"
	exit 1
fi
ok "three primaries joined in one cluster"

# The shard of the members, and sources by shard: SD for the migration;
# SA (sprayed) and SC (box 1 alone) on the shard killed, K, which does not
# hold the members; SB (box 1 alone) on another shard.
MEMBERS=$(owner "$(rcli -p 7001 cluster keyslot "sluice:{$FLEET}:boxes")")
K=7001
[ "$MEMBERS" = 7001 ] && K=7002
SA= SB= SC= SD=
declare -A SLOT=()
for ((h = 10; h < 250; h++)); do
	s=198.18.0.$h
	SLOT[$s]=$(key_slot "p:$s/32")
	o=$(owner "${SLOT[$s]}")
	if [ "$o" = "$K" ]; then
		[ -z "$SA" ] && SA=$s && continue
		[ -z "$SC" ] && SC=$s && continue
	elif [ -z "$SB" ]; then
		SB=$s
		continue
	fi
	[ -z "$SD" ] && [ "$o" != "$K" ] && SD=$s
	[ -n "$SA" ] && [ -n "$SB" ] && [ -n "$SC" ] && [ -n "$SD" ] && break
done
diag "members on $MEMBERS, shard killed $K: SA $SA SC $SC (on it), SB $SB, SD $SD (slot ${SLOT[$SD]})"
nft_count "$SA" 1 2 && nft_count "$SB" 1 && nft_count "$SC" 1 && nft_count "$SD" 1 2 ||
	{ not_ok "nft counts at the boxes"; exit 1; }

for i in 1 2; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" --rate "$RATE/s" --burst "$BURST" >/dev/null &&
		ctl "$i" set --fleet on ||
		{ not_ok "attach box $i with a fleet policy"; exit 1; }
	box_run "$i" --redis-cluster "$RIP:7002" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms"
done
if boxes_both '.state == "synced" and .boxes == 2 and .shards == 3'; then
	ok "both boxes synced with the cluster, its three shards found from one node"
else
	not_ok "both boxes synced with the cluster, its three shards found from one node"
	diag "$(cat "${RUNLOG[1]}" "${RUNLOG[2]}")"
	exit 1
fi
RTT=$(fleet_of 1 | jq .rtt_ms)

# ---- 2. a slot migrated mid-flood: ASK, then MOVED ----
SECS=4
spray "$SD" 1 2
sleep 1
from=$(owner "${SLOT[$SD]}")
to=7003
[ "$from" = 7003 ] && to=7002
[ "$to" = "$K" ] && to=$MEMBERS
idf=$(rcli -p "$from" cluster myid) idt=$(rcli -p "$to" cluster myid)
key="sluice:{$FLEET#g$(($(rcli -p 7001 cluster keyslot "p:$SD/32") % 1024))}:p:$SD/32"
pass_if "SD's key is on its shard ($from) before the migration" \
	[ "$(rcli -p "$from" exists "$key")" = 1 ]
rcli -p "$to" cluster setslot "${SLOT[$SD]}" importing "$idf" >/dev/null &&
	rcli -p "$from" cluster setslot "${SLOT[$SD]}" migrating "$idt" >/dev/null
sleep 0.4
# shellcheck disable=SC2046 # the keys, one word each
rcli -p "$from" migrate "$RIP" "$to" "" 0 2000 keys \
	$(rcli -p "$from" cluster getkeysinslot "${SLOT[$SD]}" 100) >"$D/migrate.log" 2>&1
sleep 0.6
for p in "$to" "$from" 7001 7002 7003; do
	rcli -p "$p" cluster setslot "${SLOT[$SD]}" node "$idt" >/dev/null 2>&1
done
gens_done || { not_ok "the generators ran"; exit 1; }
sleep 0.3
pass_if "SD's key now on shard $to, written since" [ "$(rcli -p "$to" exists "$key")" = 1 ] ||
	diag "$(cat "$D/migrate.log")"
asked=$(($(fleet_of 1 | jq .asked) + $(fleet_of 2 | jq .asked)))
moved=$(($(fleet_of 1 | jq .moved) + $(fleet_of 2 | jq .moved)))
pass_if "the boxes followed ASK ($asked) and then MOVED ($moved)" \
	[ "$asked" -ge 1 ] && [ "$moved" -ge 1 ] || diag "$(fleet_of 1)"
pass_if "through the migration both stayed synced, no shard fault, no failed sync" \
	boxes_both '.state == "synced" and .shards_down == 0 and .shard_faults == 0 and
		.sync_errors == 0'
t=$(secs_of "$SD")
adm=$(counted "$SD" 1 2)
b=$(bound "$t" 0)
diag "SD: $adm admitted (nft at the boxes) in $t s; bound $b"
pass_if "the spray of the migrated slot is held to the bound" le "$adm" "$b"

# ---- 3. a shard killed mid-flood ----
SECS=6
spray "$SA" 1 2
spray "$SB" 1
spray "$SC" 1
sleep 2
{ kill -KILL "${RPID[$K]}" && wait "${RPID[$K]}"; } 2>/dev/null
saw=0
for _ in $(seq 100); do
	if fleet_of 1 | jq -e '.shards_down >= 1' >/dev/null 2>&1; then
		saw=1
		break
	fi
	sleep 0.02
done
c0=$(counted "$SC" 1)
t0=$(date +%s.%N)
pass_if "shard $K killed: box 1 says a shard is down" [ $saw = 1 ]
gens_done || { not_ok "the generators ran"; exit 1; }
t1=$(date +%s.%N)
sleep 0.3
pass_if "both boxes stay synced (the other shards), one of three shards down" \
	boxes_both '.state == "synced" and .shards == 3 and .shards_down == 1 and .shard_faults == 1'
status=$(bx 1 "$SLUICE" status 2>&1)
pass_if "status says the shard down and its keys' share" \
	grep -q "1 of 3 shards down, their keys admit rate/2" <<<"$status" || diag "$status"
prom=$(ctl 1 stats --prometheus)
pass_if "the metrics say it: sluice_fleet_shards_down 1" \
	grep -qE '^sluice_fleet_shards_down(\{[^}]*\})? 1$' <<<"$prom" ||
	diag "$(grep fleet_shard <<<"$prom")"
for i in 1 2; do
	n=$(grep -c "fleet: 1 of the 3 shards of cluster .* did not answer" "${RUNLOG[$i]}")
	pass_if "box $i's log says the shard down once" [ "$n" = 1 ] || diag "$(cat "${RUNLOG[$i]}")"
done

t=$(secs_of "$SA")
adm=$(counted "$SA" 1 2)
b=$(bound "$t" "$(awk -v b=$BURST -v n=$N -v r=$RATE -v s=$SYNC_MS 'BEGIN { print b + n * r * s / 1000 }')")
diag "SA: $adm admitted (nft at the boxes) in $t s; bound $b"
pass_if "the spray of the killed shard is held to the bound" le "$adm" "$b"

tf=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
c=$(($(counted "$SC" 1) - c0))
share=$(awk -v b=$BURST -v r=$RATE -v n=$N -v t="$tf" -v s=$SYNC_MS \
	'BEGIN { printf "%.1f", b / n + r / n * t + r * s / 1000 }')
diag "SC (box 1 alone, shard down): $c admitted in the $tf s after the fault was seen;" \
	"rate/N: burst/N + rate/N x t + rate x S = $share"
pass_if "a source of the killed shard on box 1 alone gets its outage share, rate/N" \
	le "$c" "$share"

t=$(secs_of "$SB")
adm=$(counted "$SB" 1)
alone=$(awk -v b=$BURST -v r=$RATE -v n=$N -v t="$t" 'BEGIN { printf "%.1f", 1.25 * (b / n + r / n * t) }')
whole=$(awk -v b=$BURST -v r=$RATE -v t="$t" -v s=$SYNC_MS 'BEGIN { printf "%.1f", b + r * t + r * s / 1000 }')
diag "SB (box 1 alone, shard up): $adm admitted in $t s; rate/N would be under $alone, the whole" \
	"limit is $whole"
pass_if "a source of a shard up on box 1 alone still gets the whole rate (its shard syncs)" \
	le "$alone" "$adm" && le "$adm" "$whole"
exit $((TAP_FAILED > 0))
