#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Fleet-wide limits (issue 11): three boxes share one real redis-server.
#
# A generator namespace has one veth pair to each of three box namespaces;
# every box runs `sluice attach` with a fleet policy (sluicectl set --fleet
# on) and `sluice run --redis unix:SOCK --fleet NAME`; one redis-server
# listens on a unix socket in a temporary directory. Every count comes from
# `sluicectl stats -j` (passed, dropped, rx and its "fleet" object) and the
# runs' logs, or from an nft counter in each box's ingress hook (after XDP:
# what sluice passed, counted by another); every flood uses a source of its
# own, so that no phase inherits another's buckets or Redis keys.
#
# The design's bounds (docs/fleet.md, "The bound") for one source sprayed evenly
# over N boxes for t seconds:
#
#   about burst + rate x t  <=  admitted  <=  burst + rate x t + (N - 1) x rate x (S + RTT)
#                                              + N x theta (issue 24: THETA x burst)
#
# S the longest time between two syncs of a box, RTT the last sync's round
# trip (the largest of the boxes'): between two syncs each other box admits
# at most rate x (S + RTT) that this box has not yet folded in. S is the
# sync interval while the agents keep time; on a loaded 2-core machine they
# do not, so the checks take its worst case, twice the interval (a box that
# has not synced for longer, and a sync's duration, admits rate/N). In an
# outage each box holds rate/N and burst/N: the fleet admits at most burst +
# rate x t. A box whose agent is gone adds at most rate x H + burst/N (H = 3
# x the interval + 2 RTT: its horizon, after which the others hold its share
# in reserve).
#
#   1. three boxes: every box says fleet boxes 3, synced;
#   2. a sprayed source (a rule of burst 300: one burst, not burst/N) is held
#      to the bound, and gets at least 0.9 x (burst + rate x t) ("# fleet
#      ratio up"); measured again with a fresh source when it went beyond
#      while an agent missed syncs (as 5 and 9);
#   3. a source on one box only gets the whole rate (>= 0.9 x rate x t,
#      <= burst + rate x t + rate x S; burst 300, so that a sender held off
#      the CPU for up to 1 s forfeits nothing);
#   4. Redis SIGKILLed mid-flood: every box says outage, shared, once in its
#      log; from then on the fleet holds burst + rate x t ("# fleet ratio down");
#   5. Redis started again on the same socket: every box synced again (its log
#      says so), and a sprayed source is held as in 2 ("# fleet ratio back");
#   6. Redis SIGSTOPped: every packet received is still decided, the policy
#      still limits, run keeps reporting, sync errors grow and name the
#      deadline; SIGCONT: synced again; 6b. --sync-keys; 6c. an IPv6 source;
#   6d. agents killed (-9) and stopped (SIGINT) for 1.5 s under a source below
#      the outage share: after they are back, not one packet is refused (what
#      was admitted without an agent is never charged);
#   6e. box 3's agent killed -9 one second into an uneven spray (300, 600,
#      1200 pps; 200/s burst 60): counted by nft at the boxes, the fleet holds
#      the bound with one dead box, and the live ones say it is silent;
#   7. requirepass: the right password file works; a wrong one, or none, make
#      run exit 1 saying so, and leave nothing attached;
#   8. usage errors exit 2;
#   9. the set table: every box attached again with --table sets, 1 and 2
#      again ("# fleet ratio sets"), each box holding the source's key.
#
# t of a flood is the generators' own "seconds" (the span of their frames),
# the largest of the three: they are started together, one right after the
# other. No check times anything: states are waited for with generous polls.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh

netns_need_root "fleet" jq redis-server redis-cli nft
netns_need_sluice "fleet"

RATE=100          # packets/s of the fleet policy
BURST=30          # its burst: burst/N = 10 on each of 3 boxes
BIG_SRCS=198.18.0.8/29 BIG_BURST=300  # phase 2's sources (.8 to .10): a burst larger than rate x t
ONE_SRCS=198.18.0.16/28            # phase 3's sources (.20 to .22): a rule of burst 300 too
DEAD_SRC=198.18.0.90 DEAD_RATE=200 DEAD_BURST=60   # 6e's, as issue 20 measured it
SYNC_MS=100       # --sync-interval
# --redis-timeout, given although it is the default (1 s): the SIGSTOP checks
# read it in the error. A deadline as short as the interval was missed now and
# then on a loaded 2-core machine (seen in make test), an outage of its own;
# every outage here must be the test's.
TIMEOUT=1s
PPS=1000          # each generator
SECS=3            # a flood
N=3
# --sync-threshold's default: the boxes hold back up to N x theta = THETA x
# burst of a key's usage (docs/fleet.md, "Pushing only what can move the
# bound"), a term of every upper bound here
THETA=0.25
FLEET=fl$$

P=fl$$
NS_G="fleet-gen-$$"
GEN_PIDS=()
REDIS_PID=
REDIS2_PID=
D=$(mktemp -d /tmp/sluice-fleet.XXXXXX) || exit 1
SOCK=$D/redis.sock
SOCK2=$D/redis-auth.sock

boxes_stop() {
	local pid
	for pid in "${GEN_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${RUNP[@]}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	for pid in "$REDIS_PID" "$REDIS2_PID"; do
		[ -n "$pid" ] && kill -CONT "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	done
	for pid in "${GEN_PIDS[@]}" "${RUNP[@]}" "$REDIS_PID" "$REDIS2_PID"; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
}
boxes_trap

stats() { ctl "$1" stats -j; }
# fleet_of I: box I's fleet object, one line.
# (Quiet: a poll may meet a run that is still attaching.)
fleet_of() { stats "$1" 2>/dev/null | jq -c .fleet; }

# redis_start SOCK [ARGS]: a redis-server of our own, no persistence; waits
# until it answers. Sets REDIS_LAST to its pid.
redis_start() {
	local sock=$1 i
	shift
	redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save '' \
		--appendonly no --daemonize no "$@" >>"$D/redis.log" 2>&1 &
	REDIS_LAST=$!
	for i in $(seq 100); do
		[ -S "$sock" ] && redis-cli -s "$sock" ping 2>&1 | grep -qE 'PONG|NOAUTH' && return 0
		kill -0 "$REDIS_LAST" 2>/dev/null || break
		sleep 0.05
	done
	diag "redis-server did not come up on $sock: $(tail -5 "$D/redis.log")"
	return 1
}

# all_boxes JQ: wait (up to 10 s) until JQ holds of the fleet object of
# every box of WAIT_BOXES; fails showing them when it does not.
WAIT_BOXES="1 2 3"
all_boxes() {
	local q=$1 i k good
	for ((k = 0; k < 200; k++)); do
		good=1
		for i in $WAIT_BOXES; do
			fleet_of "$i" | jq -e "$q" >/dev/null 2>&1 || { good=0; break; }
		done
		[ $good = 1 ] && return 0
		sleep 0.05
	done
	for i in $WAIT_BOXES; do
		diag "box $i: $(fleet_of "$i")"
	done
	return 1
}

# loglines I PATTERN: how many lines of box I's run log match PATTERN.
loglines() { grep -cE -- "$2" "${RUNLOG[$1]}"; }
reports() { loglines "$1" ' pps; top drops:'; }
# said_once WHAT PATTERN BEFORE: every run's log has one line more matching
# PATTERN than the array BEFORE says it had.
said_once() {
	local i n
	local -n before=$3
	for i in 1 2 3; do
		n=$(($(loglines "$i" "$2") - before[$i]))
		pass_if "$1: run $i says so once" [ "$n" = 1 ] ||
			diag "said $n times: $(cat "${RUNLOG[$i]}")"
	done
}
FAILED_SAID='fleet: sync with Redis at .* failed: '
SYNCED_SAID='fleet: synced with Redis at .* again'

# counters: C_rx[I] C_passed[I] C_dropped[I] C_syncs[I] of every box, now.
counters() {
	local i s
	for i in 1 2 3; do
		s=$(stats "$i")
		C_rx[$i]=$(jq .rx <<<"$s")
		C_passed[$i]=$(jq .passed <<<"$s")
		C_dropped[$i]=$(jq .dropped <<<"$s")
		C_syncs[$i]=$(jq .fleet.syncs <<<"$s")
	done
}
declare -a C_rx C_passed C_dropped C_syncs

# gens_start SRC SECS BOX...: one generator per BOX, SRC to the box's address.
gens_start() {
	local src=$1 secs=$2 i
	shift 2
	GEN_PIDS=()
	GEN_BOXES=("$@")
	for i in "$@"; do
		nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$i]}" -s "$src" \
			-d "198.18.$i.2" -r "$PPS" -t "$secs" -j >"$D/gen$i.json" 2>"$D/gen$i.err" &
		GEN_PIDS+=($!)
	done
}

# gens_wait: waits for them; GEN_T the largest "seconds", GEN_LAG the largest
# max_lag_ms, GEN_DELIVERED[I] what box I's veth took, GEN_END the wall
# clock when the last of them ended: its report's mtime, written after its
# last frame.
gens_wait() {
	local i pid st=0 s
	for pid in "${GEN_PIDS[@]}"; do
		wait "$pid" || st=1
	done
	GEN_PIDS=()
	GEN_T=0 GEN_LAG=0 GEN_END=0
	for i in "${GEN_BOXES[@]}"; do
		s=$(jq -r .seconds "$D/gen$i.json" 2>/dev/null)
		if [ "$st" != 0 ] || [ -z "$s" ] || [ "$s" = null ]; then
			diag "sluice-gen to box $i failed: $(cat "$D/gen$i.err")"
			return 1
		fi
		GEN_T=$(awk -v a="$GEN_T" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
		GEN_LAG=$(awk -v a="$GEN_LAG" -v b="$(jq -r .max_lag_ms "$D/gen$i.json")" \
			'BEGIN { print (b > a) ? b : a }')
		GEN_DELIVERED[$i]=$(jq -r .delivered "$D/gen$i.json")
		GEN_END=$(awk -v a="$GEN_END" -v b="$(date -r "$D/gen$i.json" +%s.%N)" \
			'BEGIN { print (b > a) ? b : a }')
	done
	# The last frames are still on their way through the boxes' NAPI.
	sleep 0.3
}
declare -a GEN_DELIVERED

# admitted_since BOX...: the sum over BOX... of passed now minus C_passed
# (call counters first): ADMITTED, and PER_BOX ("box1 N box2 N ...");
# SYNCED[I] the syncs box I made since.
admitted_since() {
	local i p s
	ADMITTED=0 PER_BOX=
	for i in "$@"; do
		s=$(stats "$i")
		p=$(jq .passed <<<"$s")
		SYNCED[$i]=$(($(jq .fleet.syncs <<<"$s") - C_syncs[$i]))
		ADMITTED=$((ADMITTED + p - C_passed[$i]))
		PER_BOX+="box$i $((p - C_passed[$i])) "
	done
}
declare -a SYNCED

# max_rtt_ms: the round trip of each box's last sync, the largest of them.
max_rtt_ms() {
	local i m=0 r
	for i in 1 2 3; do
		r=$(fleet_of "$i" | jq .rtt_ms)
		m=$(awk -v a="$m" -v b="$r" 'BEGIN { print (b > a) ? b : a }')
	done
	echo "$m"
}

# pass_if NAME CMD...: ok NAME when CMD succeeds, else not ok (and fails).
pass_if() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; return 1; fi
}
calc() { awk "BEGIN { printf \"%.4f\", $* }"; }

# spray SRC [BURST]: SRC at PPS out of every box's generator for SECS; sets
# ADMITTED, PER_BOX, GEN_T, SPRAY_BURST (BURST, default the policy's),
# UP_BOUND (the design's bound with this t and RTT), and SYNCS_LATE to 1 when
# an agent missed more than one sync of the flood (its box's view was older
# than the bound's 2 intervals: the machine, not the fleet, broke its terms).
spray() {
	local i late=0
	SPRAY_BURST=${2:-$BURST}
	counters
	gens_start "$1" "$SECS" 1 2 3
	gens_wait || return 1
	admitted_since 1 2 3
	RTT_MS=$(max_rtt_ms)
	UP_BOUND=$(calc "$SPRAY_BURST + $RATE * $GEN_T +" \
		"($N - 1) * $RATE * (2 * $SYNC_MS + $RTT_MS) / 1000 + $THETA * $SPRAY_BURST")
	for i in 1 2 3; do
		awk -v d="${SYNCED[$i]}" -v t="$GEN_T" -v s="$SYNC_MS" \
			'BEGIN { exit !(d < int(t * 1000 / s) - 1) }' && late=1
	done
	SYNCS_LATE=$late
}

# spray_check NAME WHAT BURST SRC...: spray the first SRC and check_up; a
# spray beyond the bound while an agent fell behind is measured again with
# the next SRC (a fresh source), as the one-box floor is for a late sender.
spray_check() {
	local name=$1 what=$2 burst=$3 src
	shift 3
	for src in "$@"; do
		SPRAY_SRC=$src
		spray "$src" "$burst" || { not_ok "$name: the generators ran"; return 1; }
		le "$ADMITTED" "$UP_BOUND" || [ "$SYNCS_LATE" = 0 ] || {
			diag "$name: $ADMITTED beyond $UP_BOUND while an agent missed syncs: again"
			continue
		}
		break
	done
	check_up "$name" "$what"
}

# check_up NAME WHAT: the spray just measured is held to UP_BOUND and gets
# at least 0.9 x (burst + rate x t): the fleet's one burst, not burst/N;
# prints "# fleet ratio WHAT: X".
check_up() {
	local floor
	floor=$(calc "0.9 * ($SPRAY_BURST + $RATE * $GEN_T)")
	echo "# fleet ratio $2: $(ratio "$ADMITTED" "$UP_BOUND")"
	diag "admitted $ADMITTED ($PER_BOX) of bound $SPRAY_BURST + $RATE/s x $GEN_T s +" \
		"($N - 1) x $RATE/s x (2 x $SYNC_MS + $RTT_MS) ms + $THETA x burst = $UP_BOUND;" \
		"floor $floor"
	pass_if "$1: held to the fleet bound" le "$ADMITTED" "$UP_BOUND"
	pass_if "$1: at least 0.9 x (burst + rate x t) admitted" le "$floor" "$ADMITTED"
}

boxes_lab 3 fleet && boxes_ingress 3 ||
	{ not_ok "build the generator and three box namespaces"; exit 1; }
redis_start "$SOCK" || { not_ok "start redis-server on $SOCK"; exit 1; }
REDIS_PID=$REDIS_LAST

for i in 1 2 3; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" --rate "$RATE/s" --burst "$BURST" >/dev/null &&
		ctl "$i" set --fleet on &&
		ctl "$i" rule add "$BIG_SRCS" --rate "$RATE/s" --burst "$BIG_BURST" --fleet \
			>/dev/null &&
		ctl "$i" rule add "$ONE_SRCS" --rate "$RATE/s" --burst "$BIG_BURST" --fleet \
			>/dev/null &&
		ctl "$i" rule add "$DEAD_SRC/32" --rate "$DEAD_RATE/s" --burst "$DEAD_BURST" \
			--fleet >/dev/null ||
		{ not_ok "attach box $i with a fleet policy"; exit 1; }
	box_run "$i" --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms" \
		--redis-timeout "$TIMEOUT"
done

# ---- 1. three boxes ----
if all_boxes '.state == "synced" and .boxes == 3 and .outage_share == false'; then
	ok "every box: fleet synced, 3 boxes"
else
	not_ok "every box: fleet synced, 3 boxes"
	for i in 1 2 3; do diag "run $i: $(cat "${RUNLOG[$i]}")"; done
	exit 1
fi

# The metrics of a synced box: the fleet's samples, which promtool accepts.
prom=$(ctl 1 stats --prometheus)
pass_if "metrics: sluice_fleet_state 1 (synced)" \
	grep -qF "sluice_fleet_state{interface=\"${IFR[1]}\"} 1" <<<"$prom" ||
	diag "$(grep sluice_fleet_ <<<"$prom")"
pass_if "metrics: sluice_fleet_boxes 3" \
	grep -qF "sluice_fleet_boxes{interface=\"${IFR[1]}\"} 3" <<<"$prom"
promtool_check "metrics of a synced box: promtool check metrics accepts them" \
	<(printf '%s\n' "$prom")

# ---- 2. one source sprayed over the three boxes ----
spray_check "sprayed over 3 boxes, burst $BIG_BURST" up "$BIG_BURST" \
	198.18.0.8 198.18.0.9 198.18.0.10 || exit 1

# ---- 3. a source on one box only: the whole rate ----
# ONE_SRCS' rule (burst 300): its bucket there is burst/N deep, 1 s at the
# rate. A sender held off the CPU longer than that forfeits what it would
# have earned, so a count below the floor is measured again with a fresh
# source when the sender says it fell that far behind (an excess fails at
# once). With burst 30 (100 ms deep) a loaded 2-core machine did that to all
# three tries.
for try in 1 2 3; do
	counters
	gens_start "198.18.0.$((19 + try))" "$SECS" 1
	gens_wait || { not_ok "one box: the generator ran"; break; }
	admitted_since 1
	lo=$(calc "0.9 * $RATE * $GEN_T")
	hi=$(calc "$BIG_BURST + $RATE * $GEN_T + $RATE * $SYNC_MS / 1000")
	diag "one box: admitted $ADMITTED, want $lo to $hi (t $GEN_T s, sender at most" \
		"$GEN_LAG ms late)"
	le "$ADMITTED" "$hi" || break
	le "$lo" "$ADMITTED" && break
	awk -v l="$GEN_LAG" 'BEGIN { exit !(l > 1000) }' || break
done
pass_if "one box: at most burst + rate x t + rate x S" le "$ADMITTED" "$hi"
pass_if "one box: the whole rate (at least 0.9 x rate x t)" le "$lo" "$ADMITTED"

# ---- 4. Redis killed mid-flood ----
# What is allowed: nothing beyond burst + rate x t. Counting starts only once
# every box says outage, and the agent zeroes ok_until before it sets that
# state, so from then on every box admits at rate/N with burst/N: the three
# add up to burst + rate x t over any t. The switch itself (the interval
# whose sync failed, admitted at the whole rate and never pushed) lies before
# the count. t is the wall time from before the first counter is read to
# when the last generator ended: it brackets every frame counted.
# outage_begin: start counting; outage_end NAME: wait for the generators and
# check what the fleet admitted since.
outage_begin() {
	OUT_T0=$(date +%s.%N)
	counters
}
outage_end() {
	local t bound
	gens_wait || not_ok "$1: the generators ran"
	admitted_since 1 2 3
	t=$(calc "$GEN_END - $OUT_T0")
	bound=$(calc "$BURST + $RATE * $t")
	DOWN_RATIO=$(ratio "$ADMITTED" "$bound")
	diag "$1: admitted $ADMITTED ($PER_BOX) in $t s of outage, bound $BURST +" \
		"$RATE/s x $t s = $bound"
	pass_if "$1: the fleet holds burst + rate x t" le "$ADMITTED" "$bound"
	# A floor, so that dropping everything fails: at the switch a box may
	# owe the fleet up to (N - 1) x S of debt, paid at rate/N.
	pass_if "$1: at least 0.7 x rate x t admitted" le "$(calc "0.7 * $RATE * $t")" "$ADMITTED"
}
# shellcheck disable=SC2034 # said_once reads it
for i in 1 2 3; do said0[$i]=$(loglines "$i" "$FAILED_SAID"); done
gens_start 198.18.0.40 5 1 2 3
sleep 1.5
{ kill -KILL "$REDIS_PID" && wait "$REDIS_PID"; } 2>/dev/null
REDIS_PID=
if all_boxes '.state == "outage" and .outage_share == true and .boxes == 3'; then
	ok "Redis killed: every box in outage, rate/3"
else
	not_ok "Redis killed: every box in outage, rate/3"
fi
outage_begin
outage_end "Redis killed"
echo "# fleet ratio down: $DOWN_RATIO"
said_once "Redis killed" "$FAILED_SAID" said0

# ---- 5. Redis back on the same socket ----
# shellcheck disable=SC2034 # said_once reads it
for i in 1 2 3; do back0[$i]=$(loglines "$i" "$SYNCED_SAID"); done
redis_start "$SOCK" || not_ok "start redis-server again on $SOCK"
REDIS_PID=$REDIS_LAST
if all_boxes '.state == "synced" and .outage_share == false and .boxes == 3'; then
	ok "Redis back: every box synced again, 3 boxes"
else
	not_ok "Redis back: every box synced again, 3 boxes"
fi
said_once "Redis back" "$SYNCED_SAID" back0
# The restarted Redis knows no box until each has synced: the first box back
# must not take itself for the only one (and hold the whole burst alone).
# shellcheck disable=SC2034 # said_once reads it
for i in 1 2 3; do none[$i]=0; done
said_once "Redis back: N stays 3 while the boxes re-register" \
	'fleet: synced with Redis at .* again \(3 boxes\)' none
spray_check "Redis back: sprayed over 3 boxes" back "$BURST" \
	198.18.0.50 198.18.0.51 198.18.0.52

# ---- 6. Redis stopped (SIGSTOP) ----
for i in 1 2 3; do
	err0[$i]=$(fleet_of "$i" | jq .sync_errors)
	rep0[$i]=$(reports "$i")
done
counters
for i in 1 2 3; do
	R_rx[$i]=${C_rx[$i]} R_passed[$i]=${C_passed[$i]} R_dropped[$i]=${C_dropped[$i]}
done
gens_start 198.18.0.60 5 1 2 3
sleep 0.5
kill -STOP "$REDIS_PID"
if all_boxes '.state == "outage" and .outage_share == true and (.last_error | test("did not answer within '"$TIMEOUT"'"))'; then
	ok "Redis stopped: every box in outage, the error names the deadline"
else
	not_ok "Redis stopped: every box in outage, the error names the deadline"
fi
outage_begin
# Stopped until every run has reported three times more and its agent failed three
# more syncs (one a deadline of 1 s): a sync that waited on Redis past its
# deadline would fail once.
for ((k = 0; k < 200; k++)); do
	more=1
	for i in 1 2 3; do
		[ $(($(reports "$i") - rep0[$i])) -ge 3 ] &&
			[ $(($(fleet_of "$i" | jq .sync_errors) - err0[$i])) -ge 3 ] || more=0
	done
	[ $more = 1 ] && break
	sleep 0.05
done
for i in 1 2 3; do
	r=$(($(reports "$i") - rep0[$i]))
	e=$(($(fleet_of "$i" | jq .sync_errors) - err0[$i]))
	pass_if "Redis stopped: run $i keeps reporting" [ $r -ge 3 ] ||
		diag "$r reports: $(tail -5 "${RUNLOG[$i]}")"
	pass_if "Redis stopped: box $i's sync errors grow" [ $e -ge 3 ] ||
		diag "$e errors: $(fleet_of "$i")"
done
# The fleet policy still limits: from the outage on, as in 4.
outage_end "Redis stopped"
for i in 1 2 3; do
	s=$(stats "$i")
	rx=$(($(jq .rx <<<"$s") - R_rx[$i]))
	pa=$(($(jq .passed <<<"$s") - R_passed[$i]))
	dr=$(($(jq .dropped <<<"$s") - R_dropped[$i]))
	if [ $((pa + dr)) = "$rx" ] && [ "$rx" -ge "${GEN_DELIVERED[$i]}" ] && [ "$dr" -gt 0 ]; then
		ok "Redis stopped: box $i decides every packet, and drops"
	else
		not_ok "Redis stopped: box $i decides every packet, and drops"
	fi
	diag "box $i: rx $rx (the veth delivered ${GEN_DELIVERED[$i]}), passed $pa, dropped $dr"
done
# shellcheck disable=SC2034 # said_once reads it
for i in 1 2 3; do back0[$i]=$(loglines "$i" "$SYNCED_SAID"); done
kill -CONT "$REDIS_PID"
if all_boxes '.state == "synced" and .outage_share == false and .boxes == 3'; then
	ok "Redis continued: every box synced again"
else
	not_ok "Redis continued: every box synced again"
fi
said_once "Redis continued" "$SYNCED_SAID" back0

# ---- 6b. --sync-keys: a sync pushes at most K keys, the busiest first ----
# Box 1's agent again, with --sync-keys 1, and two sources on box 1 only: one
# at 500 pps (admitted at the rate: about 10 packets of usage per sync), one
# at 20 pps (2 a sync). The busier goes first; the other's usage waits, and
# grows, and is counted as skipped; no sync pushes more than one key.
kill -INT "${RUNP[1]}"
wait "${RUNP[1]}"
RUNP[1]=
box_run 1 --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms" \
	--redis-timeout "$TIMEOUT" --sync-keys 1
WAIT_BOXES=1
all_boxes '.state == "synced"' || not_ok "--sync-keys 1: box 1 synced"
WAIT_BOXES="1 2 3"
k0=$(fleet_of 1)
nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[1]}" -s 198.18.0.60 \
	-d 198.18.1.2 -r 500 -t 2 -j >"$D/genk1.json" 2>&1 &
g1=$!
nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[1]}" -s 198.18.0.61 \
	-d 198.18.1.2 -r 20 -t 2 -j >"$D/genk2.json" 2>&1 &
g2=$!
# Mid-flood, what the busier source has admitted but not pushed yet: with the
# busiest first, at most a few syncs' worth (10 packets a sync); it would be
# nearly all it admitted if the quieter one went first.
sleep 1.5
pending=$(bpftool map dump pinned "${NETDIR[1]}/${IFR[1]}/sluice_fleet_use" -j |
	jq '[.[] | .formatted | select(.key.addr[0:4] == [198, 18, 0, 60]) | .value.used[0]] | add // 0')
# Which keys have reached Redis, asked mid-flood: a key lives there for its
# debt and a second after its last push, and what comes after the flood (a
# loaded machine's waits and polls) may take longer than that.
busy=$(redis-cli -s "$SOCK" exists "sluice:{$FLEET}:p:198.18.0.60/32")
quiet=$(redis-cli -s "$SOCK" exists "sluice:{$FLEET}:p:198.18.0.61/32")
wait "$g1" "$g2" || not_ok "--sync-keys 1: the generators ran"
sleep 0.3
k1=$(fleet_of 1)
syncs=$(($(jq .syncs <<<"$k1") - $(jq .syncs <<<"$k0")))
pushed=$(($(jq .keys_pushed <<<"$k1") - $(jq .keys_pushed <<<"$k0")))
skipped=$(($(jq .keys_skipped <<<"$k1") - $(jq .keys_skipped <<<"$k0")))
diag "--sync-keys 1 over 2 s: $syncs syncs, $pushed keys pushed, $skipped skipped"
one_a_sync() { [ "$syncs" -gt 10 ] && [ "$pushed" -le "$syncs" ] && [ "$pushed" -gt 10 ]; }
pass_if "--sync-keys 1: no sync pushes more than one key" one_a_sync
pass_if "--sync-keys 1: the key left waiting is counted as skipped" [ "$skipped" -gt 5 ]
pass_if "--sync-keys 1: the busier source was pushed" [ "$busy" = 1 ]
# 50 packets at 100/s: 50 x 10 ms in ticks (1/16 ns).
PKT_TICKS=$((10 * 1000000 * 16))
pass_if "--sync-keys 1: the busier source goes first (mid-flood it had $((pending / PKT_TICKS)) packets waiting, at most 50)" \
	[ "$pending" -le $((50 * PKT_TICKS)) ]
# Its usage waits, it does not vanish: the quiet source's grows until it is
# the busier and goes.
pass_if "--sync-keys 1: the quieter one went when its waiting usage was the larger" \
	[ "$quiet" = 1 ]

# ---- 6c. an IPv6 source: shared under its /64 key ----
nsenter --net="/var/run/netns/$NS_G" sysctl -qw "net.ipv6.conf.${IFT[1]}.disable_ipv6=0"
bx 1 sysctl -qw "net.ipv6.conf.${IFR[1]}.disable_ipv6=0"
ip -n "$NS_G" addr add 2001:2:0:1::1/64 dev "${IFT[1]}" nodad
ip -n "${NSB[1]}" addr add 2001:2:0:1::2/64 dev "${IFR[1]}" nodad
nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[1]}" -s 2001:2::60 \
	-d 2001:2:0:1::2 -r 500 -t 1 -j >"$D/gen6.json" 2>&1 ||
	not_ok "an IPv6 source: the generator ran"
sleep 0.3
v6=$(redis-cli -s "$SOCK" exists "sluice:{$FLEET}:p:2001:2::/64")
pass_if "an IPv6 source: its usage reaches Redis under its /64 key" [ "$v6" = 1 ] ||
	diag "keys: $(redis-cli -s "$SOCK" keys '*' | tr '\n' ' ')"

# ---- 6d. agents gone for a while: what their boxes admitted is never charged ----
# Box 1's agent killed -9, box 2's stopped with SIGINT, for 1.5 s; a source
# on each at 30 pps, under the outage share (rate/3: 33.3/s), so that no
# packet is ever refused, before, during or after. An agent that pushed what
# its box admitted on its own would find the fleet 0.45 s in debt when it
# came back, past the burst (0.3 s), and refuse the next packets. A sender
# held off the CPU for longer than the box's share of the burst (10 packets,
# 300 ms) sends what it owes at once, and may lose some of it: then the try
# is measured again with fresh sources.
gen_one() {
	nsenter --net="/var/run/netns/$NS_G" "$SLUICE_GEN" -i "${IFT[$1]}" -s "$2" \
		-d "198.18.$1.2" -r "$3" -t "$4" -j >"$D/gen$1.json" 2>"$D/gen$1.err" &
	GEN_PIDS+=($!)
	GEN_BOXES+=("$1")
}
for try in 1 2 3; do
	src=(x "198.18.0.$((78 + 2 * try))" "198.18.0.$((79 + 2 * try))")
	GEN_PIDS=() GEN_BOXES=()
	nft_count "${src[1]}" 1 && nft_count "${src[2]}" 2 ||
		not_ok "an nft counter on boxes 1 and 2"
	gen_one 1 "${src[1]}" 30 3500ms
	gen_one 2 "${src[2]}" 30 3500ms
	sleep 0.5
	kill -KILL "${RUNP[1]}"
	kill -INT "${RUNP[2]}"
	wait "${RUNP[1]}" "${RUNP[2]}" 2>/dev/null
	sleep 1.5
	for i in 1 2; do
		box_run "$i" --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval "${SYNC_MS}ms" \
			--redis-timeout "$TIMEOUT"
	done
	WAIT_BOXES="1 2"
	all_boxes '.state == "synced"' || not_ok "agents back: boxes 1 and 2 synced again"
	WAIT_BOXES="1 2 3"
	gens_wait || not_ok "agents gone: the generators ran"
	again=0
	for i in 1 2; do
		got[$i]=$(nft_counted "${src[$i]}" "$i")
		lag=$(jq -r .max_lag_ms "$D/gen$i.json")
		diag "try $try, box $i: passed ${got[$i]} of ${GEN_DELIVERED[$i]} delivered" \
			"(sender at most $lag ms late)"
		[ "${got[$i]}" -lt "${GEN_DELIVERED[$i]}" ] &&
			awk -v l="$lag" 'BEGIN { exit !(l > 250) }' && again=1
	done
	[ $again = 0 ] && break
done
what="refuses none of a source under the outage share, then or after"
pass_if "agent killed -9 for 1.5 s: box 1 $what" [ "${got[1]}" -ge "${GEN_DELIVERED[1]}" ]
pass_if "agent stopped (SIGINT) for 1.5 s: box 2 $what" [ "${got[2]}" -ge "${GEN_DELIVERED[2]}" ]

# ---- 6e. a box whose agent dies keeps its share reserved ----
# 200/s burst 60 (DEAD_SRC's rule), sprayed unevenly for 5 s; box 3's agent
# killed -9 after 1 s. Box 3's datapath goes on admitting rate/3 on its own:
# the other two must leave it that share once it has been silent past its
# horizon H, not take the whole rate between them. Counted by nft at the
# boxes. The bound: burst + rate x t + (N - 1) x rate x (S + RTT) (S as in
# 2), plus for the dead box rate x H + burst/N (H = 3 x the interval + 2
# RTT). The floor, 0.8 x (burst + rate x t), is looser than a spray's: the
# dead box gets its share only of what its sender manages to send it, on a
# loaded machine too.
if all_boxes '.state == "synced" and .boxes == 3 and .silent == 0'; then
	ok "before an agent dies: 3 boxes synced, none silent"
else
	not_ok "before an agent dies: 3 boxes synced, none silent"
fi
nft_count "$DEAD_SRC" 1 2 3 || not_ok "an nft counter of $DEAD_SRC on every box"
GEN_PIDS=() GEN_BOXES=()
gen_one 1 "$DEAD_SRC" 300 5
gen_one 2 "$DEAD_SRC" 600 5
gen_one 3 "$DEAD_SRC" 1200 5
SILENT_SAID='fleet: 1 of the 3 boxes of fleet .* has not synced within its horizon'
silent0=$(loglines 1 "$SILENT_SAID")
sleep 1
box_kill 3
WAIT_BOXES="1 2"
if all_boxes '.state == "synced" and .silent == 1 and .boxes == 3'; then
	ok "an agent killed: the live boxes say one box is silent, N stays 3"
else
	not_ok "an agent killed: the live boxes say one box is silent, N stays 3"
fi
WAIT_BOXES="1 2 3"
said=$(($(loglines 1 "$SILENT_SAID") - silent0))
pass_if "an agent killed: run 1 says once that the silent box's share is held in reserve" \
	[ "$said" = 1 ] || diag "said $said times: $(tail -5 "${RUNLOG[1]}")"
RTT_MS=$(max_rtt_ms)
gens_wait || not_ok "an agent killed: the generators ran"
ADMITTED=0 PER_BOX=
for i in 1 2 3; do
	c=$(nft_counted "$DEAD_SRC" "$i")
	ADMITTED=$((ADMITTED + c)) PER_BOX+="box$i $c "
done
H_MS=$(calc "3 * $SYNC_MS + 2 * $RTT_MS")
up=$(calc "$DEAD_BURST + $DEAD_RATE * $GEN_T +" \
	"($N - 1) * $DEAD_RATE * (2 * $SYNC_MS + $RTT_MS) / 1000 + $THETA * $DEAD_BURST +" \
	"$DEAD_RATE * $H_MS / 1000 + $DEAD_BURST / $N")
lo=$(calc "0.8 * ($DEAD_BURST + $DEAD_RATE * $GEN_T)")
echo "# fleet ratio dead: $(ratio "$ADMITTED" "$up")"
diag "admitted $ADMITTED ($PER_BOX) in $GEN_T s; bound $DEAD_BURST + $DEAD_RATE/s x t +" \
	"($N - 1) x $DEAD_RATE/s x (2 x $SYNC_MS + $RTT_MS) ms + $DEAD_RATE/s x $H_MS ms +" \
	"$DEAD_BURST/$N = $up; floor $lo"
pass_if "an agent killed mid-spray: the fleet holds the bound with one dead box (nft count)" \
	le "$ADMITTED" "$up"
pass_if "an agent killed mid-spray: at least 0.8 x (burst + rate x t) admitted (nft count)" \
	le "$lo" "$ADMITTED"

# ---- 7. requirepass ----
# Box 3 leaves the fleet: its run is gone (6e killed it; the limiter stays,
# as it found it attached) and sluice detach frees the interface for runs
# that attach on their own.
bx 3 "$SLUICE" detach "${IFR[3]}" >/dev/null || not_ok "detach box 3"
redis_start "$SOCK2" --requirepass "pw-$$-right" || not_ok "start redis-server with requirepass"
REDIS2_PID=$REDIS_LAST
umask 077
echo "pw-$$-right" >"$D/right.pw"
echo "pw-$$-wrong" >"$D/wrong.pw"
echo "pw-$$-right" >"$D/open.pw"
chmod 644 "$D/open.pw"
umask 022
auth=(--rate "$RATE/s" --redis "unix:$SOCK2" --fleet "$FLEET-pw")

# nothing_left NAME: no XDP program on box 3 and no pins of it.
nothing_left() {
	if ip -n "${NSB[3]}" link show "${IFR[3]}" | grep -q 'xdp' || [ -e "${NETDIR[3]}/${IFR[3]}" ]; then
		not_ok "$1: nothing left attached"
		diag "$(ip -n "${NSB[3]}" link show "${IFR[3]}"; ls "${NETDIR[3]}" 2>&1)"
	else
		ok "$1: nothing left attached"
	fi
}

box_run 3 "${auth[@]}" --redis-password-file "$D/right.pw"
WAIT_BOXES=3
if all_boxes '.state == "synced" and .outage_share == false and .name == "'"$FLEET-pw"'"'; then
	ok "the right password file: synced"
else
	not_ok "the right password file: synced"
	diag "$(cat "${RUNLOG[3]}")"
fi
kill -INT "${RUNP[3]}"
wait "${RUNP[3]}"
st=$?
RUNP[3]=
pass_if "the right password file: run exits 0 on SIGINT" [ "$st" = 0 ] ||
	diag "exit $st: $(tail -5 "${RUNLOG[3]}")"
nothing_left "the right password file, after run"

# auth_refused WHAT SAYS [ARGS]: run on box 3 with ARGS exits 1, says SAYS,
# and leaves nothing attached.
auth_refused() {
	local what=$1 says=$2
	shift 2
	expect_status 1 "$what: run exits 1" timeout 10 \
		nsenter --net="/var/run/netns/${NSB[3]}" "$SLUICE" run "${IFR[3]}" "${auth[@]}" "$@"
	pass_if "$what: says '$says'" grep -qF -- "$says" <<<"$OUT" || diag "$OUT"
	nothing_left "$what"
}
auth_refused "a wrong password" "refused the password in $D/wrong.pw" \
	--redis-password-file "$D/wrong.pw"
auth_refused "no password" "wants a password"
auth_refused "a password file others can read" "chmod 600 $D/open.pw" \
	--redis-password-file "$D/open.pw"

# ---- 8. usage errors ----
runu() { timeout 10 nsenter --net="/var/run/netns/${NSB[3]}" "$SLUICE" run "${IFR[3]}" --rate "$RATE/s" "$@"; }
expect_usage "--redis without --fleet" "--redis needs --fleet" runu --redis "unix:$SOCK"
expect_usage "--fleet with a bad name" "is not a fleet name" runu --redis "unix:$SOCK" --fleet 'a b'
expect_usage "--sync-interval 1ms" "out of range: 10ms to 1m" \
	runu --redis "unix:$SOCK" --fleet "$FLEET" --sync-interval 1ms
nothing_left "usage errors"

# ---- 9. the set table (--table sets): 1 and 2 again ----
# Every box attached afresh with --table sets: the agent's apply program then
# finds (or claims) a key's way in sluice_sets4/6, and a sprayed source is
# held to the fleet bound only if it does (without the fold each box would
# admit the whole rate: three times it).
for i in 1 2; do
	kill -INT "${RUNP[$i]}"
	wait "${RUNP[$i]}"
	RUNP[$i]=
	bx "$i" "$SLUICE" detach "${IFR[$i]}" >/dev/null || not_ok "the set table: detach box $i"
done
for i in 1 2 3; do
	bx "$i" "$SLUICE" attach "${IFR[$i]}" --table sets --rate "$RATE/s" --burst "$BURST" \
		>/dev/null && ctl "$i" set --fleet on ||
		{ not_ok "the set table: attach box $i with a fleet policy"; exit 1; }
	box_run "$i" --redis "unix:$SOCK" --fleet "$FLEET-sets" --sync-interval "${SYNC_MS}ms" \
		--redis-timeout "$TIMEOUT"
done
for i in 1 2 3; do
	t=$(bx "$i" "$SLUICE" status -j "${IFR[$i]}" | jq -r ".interfaces[0].key_table.table")
	pass_if "the set table: box $i's state is of the set table" [ "$t" = sets ] ||
		diag "box $i: keys.table $t"
done
if all_boxes '.state == "synced" and .boxes == 3 and .outage_share == false'; then
	ok "the set table: every box: fleet synced, 3 boxes"
else
	not_ok "the set table: every box: fleet synced, 3 boxes"
	for i in 1 2 3; do diag "run $i: $(tail -5 "${RUNLOG[$i]}")"; done
fi
spray_check "the set table: sprayed over 3 boxes" sets "$BURST" \
	198.18.0.70 198.18.0.71 198.18.0.72
for i in 1 2 3; do
	b=$(ctl "$i" -j show "$SPRAY_SRC" | jq -c .bucket)
	pass_if "the set table: box $i holds the sprayed source's key" \
		test -n "$b" -a "$b" != null || diag "box $i: $(ctl "$i" -j show "$SPRAY_SRC")"
done

tap_done
