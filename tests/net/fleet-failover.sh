#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Redis Cluster with replicas (issue 24, item 4): two boxes share their fleet
# policy through a real cluster of three primaries, each with one replica
# (redis-cli --cluster create --cluster-replicas 1, six redis-server
# processes in a namespace of the test's own, 198.18.200.1:7001-7006,
# cluster-node-timeout 1000 ms), reached from each box over a veth of its own;
# the boxes are given one node and find the others in the slot map. The
# bound of a source sprayed over both boxes, synced, is that of
# tests/net/fleet-cluster.sh: burst + rate x t + (N - 1) x rate x (2 S +
# RTT) + burst / 4.
#
#   1. both boxes synced, three shards;
#   2. an uneven spray (100 and 300 pps) of one source over the two boxes
#      is held to the bound, and gets at least 0.8 x (burst + rate x t);
#   3. box 2's agent killed -9 mid-spray: box 1 says it silent; started
#      again, it syncs, box 1 says no box is silent; the spray meanwhile is
#      held to tests/net/fleet.sh 6e's bound, the synced one plus, for the
#      dead box, rate x H + burst/N (H = 3 S + 2 RTT);
#   4. a primary (not that of the members) killed -9 mid-flood: its replica
#      is promoted by the cluster; the boxes see the shard down, then follow
#      the new primary (the map read again: the shard answers, shards_down
#      back to 0, each box's log says the fault once and the end of it once);
#      a source of that shard sprayed over both boxes through it is held to
#      the shard-kill bound of tests/net/fleet-cluster.sh (+ burst + N x
#      rate x S) plus one burst for the switch back (the shard's usage
#      meanwhile is not charged);
#   5. after the failover, a fresh source of that shard sprayed over both
#      boxes: its key is written to the new primary, and it is held to the
#      synced bound again;
#   6. box 2's agent started again with the dead primary named first among
#      its nodes: it finds the cluster from the next, synced, three shards,
#      none down;
#   7. the members' primary killed mid-flood: every sync fails (an outage,
#      rate/N, said once), its replica is promoted, the boxes sync again,
#      three shards, none down; a source sprayed through it is held to the
#      bound of 4.
# Every count is nft's at the boxes. Every process is stopped and every
# namespace deleted by the trap. Three runs on the 2-CPU VM (one beside
# fleet-cluster.sh), rate 100/s burst 100, S 100 ms, about 28 s each:
#   2. 493 to 501 admitted in 4.0 s; bound 544.7, floor 399.7;
#   3. 638 to 650 in 5.0 s; bound 724.7 (H 300 ms);
#   4. the replica promoted 2.4 to 2.7 s after the kill, both boxes
#      following within 0.2 s; 918 to 925 in 7.0 s; bound 1064.7 (964.7
#      without the burst of the switch back; burst + rate x t is 800);
#   5. 498 to 503 in 4.0 s; bound 544.7.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh
source tests/lib/fleetcluster.sh

netns_need_root "fleet-failover" jq redis-server redis-cli nft
netns_need_sluice "fleet-failover"

RATE=100 BURST=100 N=2 SYNC_MS=100 PPS=300
RIP=198.18.200.1
PORTS="7001 7002 7003 7004 7005 7006"
SEED=7002
FLEET=ff$$
P=ff$$
NS_G="fleet-fo-g-$$" NS_R="fleet-fo-r-$$"
PIDS=() RPIDS=()
declare -A RPID=()
D=$(mktemp -d /tmp/sluice-fleet-failover.XXXXXX) || exit 1

boxes_stop() { boxes_kill "${PIDS[@]}" "${RUNP[@]}" "${RPIDS[@]}"; }
BOXES_DEL=("$NS_R")
boxes_trap

calc() { awk "BEGIN { printf \"%.1f\", $* }"; }
loglines() { grep -c "$2" "${RUNLOG[$1]}"; }
not_in() { ! grep -q "$1" <<<"$2"; }

cluster_lab fleet-fo || { not_ok "build the generator, the cluster's namespace and two boxes"; exit 1; }
for p in $PORTS; do node_up "$p"; done
for p in $PORTS; do
	for _ in $(seq 100); do
		rcli -p "$p" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
done
# shellcheck disable=SC2046 # the nodes, one word each
rx redis-cli --cluster create $(for p in $PORTS; do echo "$RIP:$p"; done) \
	--cluster-replicas 1 --cluster-yes >"$D/create.log" 2>&1
up=0
for _ in $(seq 300); do
	ok_n=$(for p in $PORTS; do rcli -p "$p" cluster info; done | grep -c 'cluster_state:ok')
	links=$(for p in $PORTS; do rcli -p "$p" info replication; done |
		grep -c 'master_link_status:up')
	if [ "$ok_n" = 6 ] && [ "$links" = 3 ]; then
		up=1
		break
	fi
	sleep 0.05
done
if [ $up = 0 ]; then
	not_ok "three primaries and three replicas joined in one cluster"
	diag "$(tail -5 "$D"/create.log "$D"/redis*.log)"
	exit 1
fi
ok "three primaries and three replicas joined in one cluster"

# K: the primary killed in 4, neither the members' nor the seed's; R its
# replica. SA (4) and SA2 (5) are sources on K's shard; SU (2) and SE (3)
# any sources.
MEMBERS=$(owner "$(rcli -p "$LIVE" cluster keyslot "sluice:{$FLEET}:boxes")")
K=
for p in $(primaries); do
	[ "$p" != "$MEMBERS" ] && [ "$p" != "$SEED" ] && K=$p && break
done
R=$(replica_of "$K")
[ "$K" = "$LIVE" ] && LIVE=$MEMBERS
SA="" SA2=""
for ((h = 10; h < 250; h++)); do
	s=198.18.0.$h
	if [ "$(owner "$(key_slot "p:$s/32")")" = "$K" ]; then
		if [ -z "$SA" ]; then SA=$s; else SA2=$s && break; fi
	fi
done
SU=198.18.0.5 SE=198.18.0.6
diag "members on $MEMBERS, seed $SEED, primary killed $K (replica $R): SA $SA SA2 $SA2 on it"
if [ -z "$K" ] || [ -z "$R" ] || [ -z "$SA2" ]; then
	not_ok "a primary to kill, its replica and two sources of its shard"
	diag "$(rcli -p "$LIVE" cluster nodes)"
	exit 1
fi
for s in "$SU" "$SE" "$SA" "$SA2"; do
	nft_count "$s" 1 2 || { not_ok "nft counts at the boxes"; exit 1; }
done

for i in 1 2; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" --rate "$RATE/s" --burst "$BURST" >/dev/null &&
		ctl "$i" set --fleet on ||
		{ not_ok "attach box $i with a fleet policy"; exit 1; }
done
RUN_ARGS=(--redis-cluster "$RIP:$SEED" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms")
for i in 1 2; do box_run "$i" "${RUN_ARGS[@]}"; done
if boxes_both '.state == "synced" and .boxes == 2 and .shards == 3'; then
	ok "both boxes synced with the cluster, its three shards found from one node"
else
	not_ok "both boxes synced with the cluster, its three shards found from one node"
	diag "$(cat "${RUNLOG[1]}" "${RUNLOG[2]}")"
	exit 1
fi
RTT=$(fleet_of 1 | jq .rtt_ms)

# ---- 2. an uneven spray: 100 pps to box 1, 300 to box 2 ----
SECS=4
spray_at "$SU" 1 100
spray_at "$SU" 2 300
gens_done || { not_ok "the generators ran"; exit 1; }
t=$(secs_of "$SU")
adm=$(counted "$SU" 1 2)
b=$(bound "$t" 0)
lo=$(calc "0.8 * ($BURST + $RATE * $t)")
diag "SU (100 and 300 pps): $adm admitted ($(counted "$SU" 1) + $(counted "$SU" 2), nft at" \
	"the boxes) in $t s; bound $b, floor $lo"
pass_if "an uneven spray over the two boxes is held to the bound" le "$adm" "$b"
pass_if "and gets at least 0.8 x (burst + rate x t)" le "$lo" "$adm"

# ---- 3. box 2's agent killed -9 mid-spray, then started again ----
SILENT_SAID='fleet: 1 of the 2 boxes of fleet .* has not synced within its horizon'
BACK_SAID='fleet: no box of fleet .* is silent any more'
s0=$(loglines 1 "$SILENT_SAID") b0=$(loglines 1 "$BACK_SAID")
SECS=5
spray_at "$SE" 1 "$PPS"
spray_at "$SE" 2 "$PPS"
sleep 1
box_kill 2
saw=0
for _ in $(seq 200); do
	fleet_of 1 | jq -e '.silent == 1 and .boxes == 2' >/dev/null 2>&1 && saw=1 && break
	sleep 0.05
done
pass_if "box 2's agent killed: box 1 says one box silent, N stays 2" [ $saw = 1 ] ||
	diag "box 1: $(fleet_of 1)"
box_run 2 "${RUN_ARGS[@]}"
pass_if "box 2's agent started again: both synced, none silent" \
	boxes_both '.state == "synced" and .boxes == 2 and .silent == 0 and .shards == 3'
gens_done || { not_ok "the generators ran"; exit 1; }
pass_if "box 1's log says once that box 2 went silent, and once that it is back" \
	[ $(($(loglines 1 "$SILENT_SAID") - s0)) = 1 ] &&
	[ $(($(loglines 1 "$BACK_SAID") - b0)) = 1 ] || diag "$(tail -5 "${RUNLOG[1]}")"
t=$(secs_of "$SE")
adm=$(counted "$SE" 1 2)
h=$(calc "3 * $SYNC_MS + 2 * $RTT")
b=$(bound "$t" "$(calc "$RATE * $h / 1000 + $BURST / $N")")
diag "SE (agent 2 killed and started again): $adm admitted ($(counted "$SE" 1) +" \
	"$(counted "$SE" 2)) in $t s; bound (H $h ms) $b"
pass_if "an agent killed and started again mid-spray: the fleet holds the bound" le "$adm" "$b"

# ---- 4. primary K killed mid-flood, its replica R promoted ----
DOWN_SAID='fleet: 1 of the 3 shards of cluster .* did not answer'
UP_SAID='fleet: every shard of cluster .* answers again'
d1=$(loglines 1 "$DOWN_SAID") d2=$(loglines 2 "$DOWN_SAID")
u1=$(loglines 1 "$UP_SAID") u2=$(loglines 2 "$UP_SAID")
sa_slot=$(key_slot "p:$SA/32")
SECS=7
spray_at "$SA" 1 "$PPS"
spray_at "$SA" 2 "$PPS"
sleep 1
{ kill -KILL "${RPID[$K]}" && wait "${RPID[$K]}"; } 2>/dev/null
tk=$(date +%s.%N)
saw=0
for _ in $(seq 200); do
	fleet_of 1 | jq -e '.shards_down >= 1' >/dev/null 2>&1 && saw=1 && break
	sleep 0.02
done
pass_if "primary $K killed: box 1 says a shard down" [ $saw = 1 ]
promoted=0
for _ in $(seq 300); do
	[ "$(owner "$sa_slot")" = "$R" ] && promoted=1 && break
	sleep 0.05
done
tp=$(date +%s.%N)
pass_if "the cluster promotes $K's replica $R" [ $promoted = 1 ] ||
	diag "$(rcli -p "$LIVE" cluster nodes)"
pass_if "the boxes follow the new primary: three shards, none down, one fault" \
	boxes_both '.state == "synced" and .shards == 3 and .shards_down == 0 and
		.shard_faults == 1'
tb=$(date +%s.%N)
# Said, not checked (no check times anything): the figures of docs/fleet.md.
diag "$(awk -v k="$tk" -v p="$tp" -v b="$tb" 'BEGIN { printf "promoted %.1f s after the kill, both boxes followed %.1f s after it", p - k, b - k }')"
gens_done || { not_ok "the generators ran"; exit 1; }
dn=("" $(($(loglines 1 "$DOWN_SAID") - d1)) $(($(loglines 2 "$DOWN_SAID") - d2)))
un=("" $(($(loglines 1 "$UP_SAID") - u1)) $(($(loglines 2 "$UP_SAID") - u2)))
for i in 1 2; do
	pass_if "box $i's log says the shard down once, and once that every shard answers again" \
		[ "${dn[$i]}" = 1 ] && [ "${un[$i]}" = 1 ] || diag "$(tail -8 "${RUNLOG[$i]}")"
done
status=$(bx 1 "$SLUICE" status 2>&1)
pass_if "status says no shard down" not_in "shards down" "$status" || diag "$status"
# The bound: fleet-cluster's for a shard killed (+ burst for the switch to
# the outage share, + N x rate x S), and one burst more for the switch back:
# what the boxes admitted while the shard was down is not charged, so the
# key's bucket on the new primary has filled meanwhile (as with one Redis
# back). Three runs measured 918 to 925 where the first bound alone is
# 964.7 and burst + rate x t 800: most of the return's burst is taken.
t=$(secs_of "$SA")
adm=$(counted "$SA" 1 2)
b0=$(bound "$t" "$(calc "$BURST + $N * $RATE * $SYNC_MS / 1000")")
b=$(calc "$b0 + $BURST")
diag "SA (through the failover): $adm admitted ($(counted "$SA" 1) + $(counted "$SA" 2)) in" \
	"$t s; bound $b (the shard-kill bound alone $b0)"
pass_if "a source of the failed-over shard sprayed through the failover is held to the bound" \
	le "$adm" "$b"

# ---- 5. after the failover: synced again ----
# SA2's key is looked for on R while the spray runs: it expires once its
# bucket is full again, a second after.
SECS=4
key=$(key_name "p:$SA2/32")
spray_at "$SA2" 1 "$PPS"
spray_at "$SA2" 2 "$PPS"
there=0
for _ in $(seq 60); do
	[ "$(rcli -p "$R" exists "$key")" = 1 ] && there=1 && break
	sleep 0.05
done
pass_if "SA2's key is written to the new primary $R" [ $there = 1 ]
gens_done || { not_ok "the generators ran"; exit 1; }
t=$(secs_of "$SA2")
adm=$(counted "$SA2" 1 2)
b=$(bound "$t" 0)
diag "SA2 (after the failover): $adm admitted ($(counted "$SA2" 1) + $(counted "$SA2" 2))" \
	"in $t s; bound $b"
pass_if "after the failover a source of that shard is held to the synced bound" le "$adm" "$b"
pass_if "and both boxes stayed synced, no shard down since" \
	boxes_both '.state == "synced" and .shards_down == 0 and .shard_faults == 1'

# ---- 6. an agent started again whose first node is the dead one ----
# The node an operator named first (K) is dead since 4: box 2's agent,
# killed and started with K first and the seed after it, reads the map from
# the seed, and the shards are the three primaries of now.
box_kill 2
# Until its ok_until has passed, the state the dead agent left says
# synced: the check below must read the new agent's.
gone=0
for _ in $(seq 200); do
	fleet_of 2 | jq -e '.state != "synced"' >/dev/null 2>&1 && gone=1 && break
	sleep 0.05
done
pass_if "box 2's agent killed again: its state leaves synced once its ok_until passes" \
	[ $gone = 1 ] || diag "box 2: $(fleet_of 2)"
box_run 2 --redis-cluster "$RIP:$K,$RIP:$SEED" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms"
pass_if "an agent started with a dead node first finds the cluster from the next: synced, three shards, none down" \
	boxes_both '.state == "synced" and .boxes == 2 and .shards == 3 and .shards_down == 0' ||
	diag "$(tail -5 "${RUNLOG[2]}")"

# ---- 7. the members' primary killed mid-flood, its replica promoted ----
# The shard of the members is every box's N: with it down a sync fails as
# a whole, an outage (rate/N and burst/N on each box), said once; its
# replica promoted, the boxes read the map again from its other nodes and
# sync again. A fresh source through it is held to the bound of 4.
M=$MEMBERS
RM=$(replica_of "$M")
for p in $(primaries); do [ "$p" != "$M" ] && LIVE=$p && break; done
m_slot=$(rcli -p "$LIVE" cluster keyslot "sluice:{$FLEET}:boxes")
S7=198.18.0.7
nft_count "$S7" 1 2 || { not_ok "nft counts at the boxes"; exit 1; }
FAILED_SAID='fleet: sync with Redis at .* failed: '
SYNCED_SAID='fleet: synced with Redis at .* again'
fa0=("" "$(loglines 1 "$FAILED_SAID")" "$(loglines 2 "$FAILED_SAID")")
sy0=("" "$(loglines 1 "$SYNCED_SAID")" "$(loglines 2 "$SYNCED_SAID")")
SECS=7
spray_at "$S7" 1 "$PPS"
spray_at "$S7" 2 "$PPS"
sleep 1
{ kill -KILL "${RPID[$M]}" && wait "${RPID[$M]}"; } 2>/dev/null
saw=0
for _ in $(seq 200); do
	fleet_of 1 | jq -e '.state != "synced"' >/dev/null 2>&1 && saw=1 && break
	sleep 0.02
done
pass_if "the members' primary $M killed: box 1 is out of sync (an outage)" [ $saw = 1 ] ||
	diag "box 1: $(fleet_of 1)"
promoted=0
for _ in $(seq 300); do
	[ "$(owner "$m_slot")" = "$RM" ] && promoted=1 && break
	sleep 0.05
done
pass_if "the cluster promotes $M's replica $RM" [ $promoted = 1 ] ||
	diag "$(rcli -p "$LIVE" cluster nodes)"
pass_if "the boxes sync again on the new primary: both synced, three shards, none down" \
	boxes_both '.state == "synced" and .boxes == 2 and .shards == 3 and .shards_down == 0'
gens_done || { not_ok "the generators ran"; exit 1; }
for i in 1 2; do
	fa=$(($(loglines "$i" "$FAILED_SAID") - fa0[i]))
	sy=$(($(loglines "$i" "$SYNCED_SAID") - sy0[i]))
	pass_if "box $i's log says the outage once, and once that it synced again" \
		[ "$fa" = 1 ] && [ "$sy" = 1 ] || diag "$(tail -8 "${RUNLOG[$i]}")"
done
t=$(secs_of "$S7")
adm=$(counted "$S7" 1 2)
b=$(calc "$(bound "$t" "$(calc "$BURST + $N * $RATE * $SYNC_MS / 1000")") + $BURST")
diag "S7 (through the members' failover): $adm admitted ($(counted "$S7" 1) +" \
	"$(counted "$S7" 2)) in $t s; bound $b"
pass_if "a source sprayed through the members' failover is held to the bound of 4" \
	le "$adm" "$b"
exit $((TAP_FAILED > 0))
