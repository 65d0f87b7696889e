#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# An operator's day, compressed (make soak; SOAK_S seconds, default 1800).
#
# Three boxes (namespaces) behind one generator namespace, each with sluice
# attached through its config file (sluice attach IFACE --config FILE) and a
# fleet agent (sluice run --redis --fleet) against one real redis-server
# with a password; box 1's run also serves its metrics, scraped every second.
# Each box's file holds: a default policy, a /32 rule that limits (a hashed
# rule), a /32 exempt, a /32 deny, and a fleet rule for 198.18.0.0/24.
#
# The day is a run of windows of WINDOW seconds of traffic. In every window
# every box gets PPS packets a second from each of these sources (one
# sluice-probe sender a box, a socket a source, the addresses on the
# generator's veth: sluice-gen's live frames pay ~25 ms a call when several
# run in one namespace):
#   held     198.18.I.10  the /32 rule, HELD_RATE/s burst HELD_BURST
#   default  198.18.I.11  the default policy, DEF_RATE/s burst DEF_BURST
#   exempt   198.18.I.20  never limited
#   denied   198.18.I.30  every packet dropped
#   fleet    198.18.0.7   sprayed over the three boxes, one FLEET_RATE/s limit
# and, while it flows, the operator works: every window reloads each box's
# file seven times: twice changed (another version of the file, written and
# renamed over it), five times unchanged, three of them reloads that change
# nothing at all, with live rule edits between (reload_batch); and
# each window adds one step of the day, in turn:
#   reloads        nothing more
#   agent-kill     box 2's or 3's agent killed (-9) 1 s in, started again
#                  after the window: its datapath goes on without it
#   redis-restart  redis-server killed (-9) and started again, same socket
#   redis-stop     redis-server stopped (SIGSTOP) for 3 s, then continued
#   upgrade        box 2 attached again with the same binary (the upgrade
#                  path), its run going on
#   rename         box 3's interface renamed (and back, the next time): its
#                  limiter follows, status and commands by the new name work
#   password       a new password: the file rewritten, CONFIG SET requirepass,
#                  the old sessions dropped (CLIENT KILL): agents sync again
#
# What is checked, in every window, by an independent count: nft counters in
# each box's prerouting (after XDP, whatever the interface is called), per
# source; what the senders sent; what the veths dropped before XDP:
#   held and default: at most burst + rate x t (t: the sender's span);
#   exempt: every packet sent passed, but for what the veth dropped;
#   denied: none passed;
#   fleet: the three boxes together at most burst + rate x t +
#          (N - 1) x rate x (S + RTT), plus rate x H + burst/N in a window
#          whose agent was killed (H: 3 intervals + 2 x RTT), a burst more
#          at each switch in a window where Redis went away (to the outage
#          share and back, docs/fleet.md);
#   every box's sluice run is alive (but the one killed) and its open fds
#   (/proc/PID/fd) and VmRSS stay flat: at most FD_SLACK fds and RSS_SLACK
#   kB above what it had after its first window;
#   every metrics scrape of the window answered 200;
#   every reload and rule edit exited 0;
# and each step's own outcome (synced again, upgraded, the new name works).
# At the end: the figures of the day (packets per class, reloads, the runs'
# fds and RSS at start and end).
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/lib/fleetboxes.sh

netns_need_root "soak" jq redis-server redis-cli curl nft
netns_need_sluice "soak"

SOAK_S=${SOAK_S:-1800}
WINDOW=${SOAK_WINDOW:-6}
if ! [[ $SOAK_S =~ ^[1-9][0-9]*$ ]] || ! [[ $WINDOW =~ ^[1-9][0-9]*$ ]]; then
	not_ok "SOAK_S=$SOAK_S, SOAK_WINDOW=$WINDOW: want whole seconds (e.g. SOAK_S=180)"
	exit 1
fi
N=3
DEF_RATE=100 DEF_BURST=100
HELD_RATE=20 HELD_BURST=20
FLEET_RATE=100 FLEET_BURST=30
PPS=200
SYNC_MS=100 REPORT=500ms
FD_SLACK=2 RSS_SLACK=2048
# The password last: the agents that cannot take a new one (they would stay
# in outage) hide nothing of the other steps in the first round.
STEPS=(reloads agent-kill redis-restart redis-stop upgrade rename password)
SLUICE_PROBE=${SLUICE_PROBE:-$BUILD/sluice-probe}
if [ ! -x "$SLUICE_PROBE" ]; then
	skip "sluice-probe is not built ($SLUICE_PROBE): run 'make'" "soak"
	exit 0
fi

P=sk$$
NS_G="soak-gen-$$"
D=$(mktemp -d /tmp/sluice-soak.XXXXXX) || exit 1
chmod 0700 "$D"
SOCK=$D/redis.sock
PASSFILE=$D/redis.pass
declare -a IFORIG IFALT CONF RUN_FD0 RUN_RSS0
REDIS_PID= SCRAPER_PID= URL=
GEN_PIDS=()
CLASSES="held default exempt denied fleet"
declare -A SRC_OF=([held]=10 [default]=11 [exempt]=20 [denied]=30)
src_of() { if [ "$2" = fleet ]; then echo 198.18.0.7; else echo "198.18.$1.${SRC_OF[$2]}"; fi; }

boxes_stop() {
	local pid
	for pid in "${GEN_PIDS[@]}" $SCRAPER_PID "${RUNP[@]}"; do
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	[ -n "$REDIS_PID" ] && kill -CONT "$REDIS_PID" 2>/dev/null &&
		kill -KILL "$REDIS_PID" 2>/dev/null
	for pid in "${GEN_PIDS[@]}" $SCRAPER_PID "${RUNP[@]}" $REDIS_PID; do
		[ -n "$pid" ] && wait "$pid" 2>/dev/null
	done
}
boxes_trap

fleet_of() { ctl "$1" -j stats 2>/dev/null | jq -c .fleet 2>/dev/null; }
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }
now() { printf '%s' "$EPOCHREALTIME"; }
rcli() { REDISCLI_AUTH=$(cat "$PASSFILE") redis-cli -s "$SOCK" "$@" 2>/dev/null; }

# ---- the lab ----

# conf_text I VERSION: box I's file; version b differs from a in rules and
# a setting that no class of traffic meets.
conf_text() {
	local i=$1 v=$2
	echo "# box $i, version $v"
	echo "set --rate $DEF_RATE/s --burst $DEF_BURST"
	echo "rule add 198.18.$i.10/32 --rate $HELD_RATE/s --burst $HELD_BURST"
	echo "rule add 198.18.$i.20/32 --exempt"
	echo "rule add 198.18.$i.30/32 --deny"
	echo "rule add 198.18.0.0/24 --rate $FLEET_RATE/s --burst $FLEET_BURST --fleet"
	if [ "$v" = a ]; then
		echo "rule add 198.18.200.0/24 --rate 5/s --burst 5"
		echo "rule add 198.18.201.1/32 --deny"
	else
		echo "rule add 198.18.200.0/24 --rate 7/s --burst 7"
		echo "rule add 198.18.201.2/32 --rate 3/s --burst 3"
		echo "rule add 198.18.202.0/25 --exempt"
	fi
}

# conf_write I VERSION: write box I's file as an operator should: a new
# file renamed over the old one.
conf_write() {
	conf_text "$1" "$2" >"${CONF[$1]}.new" && mv "${CONF[$1]}.new" "${CONF[$1]}"
	CONF_V[$1]=$2
}
declare -a CONF_V

lab() {
	local i
	boxes_lab 3 soak || return 1
	for i in 1 2 3; do
		IFORIG[$i]="${P}r$i" IFALT[$i]="${P}n$i"
		CONF[$i]=$D/box$i.conf
		# The box's address, for good: a rename takes the link down, and a
		# carrier loss flushes what ARP learnt (packets would wait on a
		# new resolution, and be lost uncounted).
		ip -n "$NS_G" neigh replace "198.18.$i.2" dev "${IFT[$i]}" nud permanent \
			lladdr "$(ip -n "${NSB[$i]}" -j link show dev "${IFR[$i]}" |
				jq -r '.[0].address')" || return 1
		# The senders' sources (the fleet's on every veth: its route is
		# the destination's).
		for c in $CLASSES; do
			ip -n "$NS_G" addr add "$(src_of "$i" "$c")/32" dev "${IFT[$i]}" || return 1
		done
		# The independent count: after XDP, in prerouting, per source,
		# then dropped (no socket, no ICMP back). Not a netdev hook: one
		# follows the interface's name, which the day renames.
		bx "$i" nft -f - <<-EOF || return 1
			table inet soak {
				counter c_held {}
				counter c_default {}
				counter c_exempt {}
				counter c_denied {}
				counter c_fleet {}
				chain pre {
					type filter hook prerouting priority -400;
					ip saddr $(src_of "$i" held) counter name c_held drop
					ip saddr $(src_of "$i" default) counter name c_default drop
					ip saddr $(src_of "$i" exempt) counter name c_exempt drop
					ip saddr $(src_of "$i" denied) counter name c_denied drop
					ip saddr $(src_of "$i" fleet) counter name c_fleet drop
				}
			}
		EOF
	done
}

# redis_start: a redis-server on SOCK with the password of PASSFILE.
redis_start() {
	local i
	redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save '' \
		--appendonly no --daemonize no --requirepass "$(cat "$PASSFILE")" \
		>>"$D/redis.log" 2>&1 &
	REDIS_PID=$!
	for i in $(seq 100); do
		[ "$(rcli ping)" = PONG ] && return 0
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.05
	done
	diag "redis-server did not come up on $SOCK: $(tail -5 "$D/redis.log")"
	return 1
}

# run_box I: box I's agent, in the background; box 1's serves its metrics.
run_box() {
	local i=$1 extra=()
	[ "$i" = 1 ] && extra=(--metrics 127.0.0.1:0)
	echo "---- run started $(date +%T)" >>"${RUNLOG[$i]}"
	box_run "$i" --interval "$REPORT" --redis "unix:$SOCK" --redis-password-file "$PASSFILE" \
		--fleet "soak$$" --fleet-member "box$i" --sync-interval "${SYNC_MS}ms" "${extra[@]}"
	RUN_FD0[$i]= RUN_RSS0[$i]=
}
reports() { grep -c ' pps; top drops:' "${RUNLOG[$1]}"; }

# synced_all SECS: wait until every box's fleet state is synced with 3 boxes.
synced_all() {
	local end=$((SECONDS + $1)) i good
	while [ "$SECONDS" -lt "$end" ]; do
		good=1
		for i in 1 2 3; do
			fleet_of "$i" | jq -e '.state == "synced" and .boxes == 3' >/dev/null 2>&1 ||
				{ good=0; break; }
		done
		[ $good = 1 ] && return 0
		sleep 0.1
	done
	for i in 1 2 3; do diag "box $i: $(fleet_of "$i")"; done
	return 1
}

# scraper: box 1's metrics, every second, each answer's status and time in
# a log. A connection is served within 5 s (docs/operations.md's promise), so
# --max-time 5: a slower answer is a failure (000).
scraper() {
	while :; do
		printf '%s %s\n' "$(now)" \
			"$(bx 1 curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$URL")" \
			>>"$D/scrapes.log"
		sleep 1
	done
}

# ---- the figures of the day ----
declare -A SENT PASSED
for c in held default exempt denied fleet; do SENT[$c]=0 PASSED[$c]=0; done
RELOADS_SAME=0 RELOADS_CHANGED=0 EDITS=0 EDIT_FAILS=0
REDIS_RESTARTS=0 REDIS_STOPS=0 ROTATIONS=0 KILLS=0 UPGRADES=0 RENAMES=0
SCRAPES=0 SCRAPE_FAILS=0

# counters_of I: "name packets" for each counter of box I's count.
counters_of() {
	bx "$1" nft -j list counters table inet soak 2>/dev/null |
		jq -r '.nftables[] | select(.counter) | .counter | "\(.name | ltrimstr("c_")) \(.packets)"'
}
# drops_of I: packets lost between the sender and box I's XDP: the sender's
# veth dropped them (its peer down, or its ring full), or the box's did.
drops_of() {
	local a b
	a=$(gx ip -j -s link show dev "${IFT[$1]}" 2>/dev/null | jq '.[0].stats64.tx.dropped // 0')
	b=$(bx "$1" ip -j -s link show dev "${IFR[$1]}" 2>/dev/null |
		jq '.[0].stats64.rx.dropped // 0')
	echo $((${a:-0} + ${b:-0}))
}
declare -A CNT0 CNT1
snap() { # snap ARRAY: every box's counters and veth drops into ARRAY
	local -n a=$1
	local i name v
	for i in 1 2 3; do
		while read -r name v; do a[$i.$name]=$v; done < <(counters_of "$i")
		a[$i.drops]=$(drops_of "$i")
	done
}
delta() { echo $((${CNT1[$1]:-0} - ${CNT0[$1]:-0})); }

# ---- traffic ----

# gens_start: every class to every box, WINDOW seconds at PPS: one sender a
# box, a socket a source.
gens_start() {
	local i c srcs
	GEN_PIDS=()
	for i in 1 2 3; do
		srcs=
		for c in $CLASSES; do srcs+=${srcs:+,}$(src_of "$i" "$c"); done
		gx "$SLUICE_PROBE" send -s "$srcs" -d "198.18.$i.2" -p 9 -r "$PPS" \
			-n $((PPS * WINDOW)) -j >"$D/gen.$i.json" 2>"$D/gen.$i.err" &
		GEN_PIDS+=($!)
	done
}
# gens_wait: wait for them; GEN_N[I.CLASS] what each source sent (less the
# sends that failed), GEN_T[I] box I's sender's span. Fails when one failed.
declare -A GEN_N GEN_T
gens_wait() {
	local pid st=0 i c f
	for pid in "${GEN_PIDS[@]}"; do
		wait "$pid" || st=1
	done
	GEN_PIDS=()
	for i in 1 2 3; do
		f=$D/gen.$i.json
		GEN_T[$i]=$(jq -r '.seconds // empty' "$f" 2>/dev/null)
		[ -n "${GEN_T[$i]}" ] || {
			diag "sluice-probe send to box $i failed: $(cat "$D/gen.$i.err")"
			GEN_T[$i]=0 st=1
		}
		for c in $CLASSES; do
			GEN_N[$i.$c]=$(jq -r --arg s "$(src_of "$i" "$c")" \
				'.sources[] | select(.src == $s) | .sent - .errors' "$f" 2>/dev/null)
			[ -n "${GEN_N[$i.$c]}" ] || GEN_N[$i.$c]=0
		done
	done
	# The last packets are still on their way through the boxes' NAPI.
	sleep 0.3
	return $st
}

# ---- the operator's work ----

# reload I: sluice reload of box I's file by its current name; counts a failure.
reload() {
	local i=$1 out
	if ! out=$(bx "$i" "$SLUICE" reload "${IFR[$i]}" --config "${CONF[$i]}" 2>&1); then
		EDIT_FAILS=$((EDIT_FAILS + 1))
		W_FAILS+="box $i reload: $out; "
		return 1
	fi
}
# edit I ARGS: one live sluicectl edit on box I.
edit() {
	local i=$1 out
	shift
	EDITS=$((EDITS + 1))
	if ! out=$(ctl "$i" "$@" 2>&1); then
		EDIT_FAILS=$((EDIT_FAILS + 1))
		W_FAILS+="box $i sluicectl $*: $out; "
	fi
}
# reload_batch: on every box, twice: a live rule edit, the changed file, the
# same file again (a reload that changes nothing: what systemctl reload
# does most), another live edit, the same file (which undoes it: the file is
# the whole state); then the same file once more, so that the rest of the
# window runs on what a reload that changed nothing left.
reload_batch() {
	local i k v
	for i in 1 2 3; do
		for k in 1 2; do
			edit "$i" rule add "198.18.203.$k/32" --deny
			v=a
			[ "${CONF_V[$i]}" = a ] && v=b
			conf_write "$i" "$v"
			reload "$i" && RELOADS_CHANGED=$((RELOADS_CHANGED + 1))
			reload "$i" && RELOADS_SAME=$((RELOADS_SAME + 1))
			edit "$i" rule add 198.18.204.0/24 --rate 9/s --burst 9
			reload "$i" && RELOADS_SAME=$((RELOADS_SAME + 1))
		done
		reload "$i" && RELOADS_SAME=$((RELOADS_SAME + 1))
	done
}

# batch_start: reload_batch in the background, beside the window's step;
# batch_wait: its figures back into this shell (once).
BATCH_PID=
batch_start() {
	(
		W_FAILS=
		reload_batch
		echo "$RELOADS_SAME $RELOADS_CHANGED $EDITS $EDIT_FAILS ${CONF_V[*]}" >"$D/batch.counts"
		printf '%s' "$W_FAILS" >"$D/batch.fails"
	) &
	BATCH_PID=$!
}
batch_wait() {
	local v
	[ -n "$BATCH_PID" ] || return 0
	wait "$BATCH_PID"
	BATCH_PID=
	read -r RELOADS_SAME RELOADS_CHANGED EDITS EDIT_FAILS v <"$D/batch.counts"
	read -ra CONF_V <<<"_ $v"
	W_FAILS+=$(cat "$D/batch.fails")
}

# step_* run in the window, while the traffic flows; each sets STEP_CHECKS,
# "name|verdict|diag" lines for after the window.
STEP_CHECKS=()
step_check() { STEP_CHECKS+=("$1|$2|${3:-}"); }

step_reloads() { :; }

step_redis-restart() {
	sleep 1
	{ kill -KILL "$REDIS_PID" && wait "$REDIS_PID"; } 2>/dev/null
	sleep 1
	if redis_start; then
		REDIS_RESTARTS=$((REDIS_RESTARTS + 1))
		synced_all 15 && step_check "every box synced again" 0 ||
			step_check "every box synced again" 1 "$(for i in 1 2 3; do fleet_of $i; done)"
	else
		step_check "redis-server started again" 1
	fi
}

step_redis-stop() {
	sleep 1
	kill -STOP "$REDIS_PID"
	sleep 3
	kill -CONT "$REDIS_PID"
	REDIS_STOPS=$((REDIS_STOPS + 1))
	synced_all 15 && step_check "every box synced again after SIGCONT" 0 ||
		step_check "every box synced again after SIGCONT" 1 \
			"$(for i in 1 2 3; do fleet_of $i; done)"
}

step_password() {
	local old new
	sleep 1
	old=$(cat "$PASSFILE")
	new=soak-$$-$RANDOM$RANDOM
	# The file first (write and rename), then Redis, then the old sessions
	# go: a rotation that has not taken effect until they do is none.
	(umask 077 && echo "$new" >"$PASSFILE.new") && mv "$PASSFILE.new" "$PASSFILE"
	REDISCLI_AUTH=$old redis-cli -s "$SOCK" config set requirepass "$new" >/dev/null 2>&1
	rcli client kill type normal >/dev/null
	ROTATIONS=$((ROTATIONS + 1))
	synced_all 15 && step_check "a new password: every box synced again" 0 ||
		step_check "a new password: every box synced again" 1 \
			"$(for i in 1 2 3; do fleet_of $i; done)"
}

KILL_BOX=3
step_agent-kill() {
	KILL_BOX=$((KILL_BOX == 3 ? 2 : 3))
	sleep 1
	kill -KILL "${RUNP[$KILL_BOX]}" 2>/dev/null
	wait "${RUNP[$KILL_BOX]}" 2>/dev/null
	echo "---- killed -9 $(date +%T)" >>"${RUNLOG[$KILL_BOX]}"
	KILLS=$((KILLS + 1))
	KILLED=$KILL_BOX
	if [ -n "$(bx "$KILL_BOX" ip -d link show dev "${IFR[$KILL_BOX]}" | grep -o 'prog/xdp')" ]; then
		step_check "box $KILL_BOX's agent killed: its limiter stays attached" 0
	else
		step_check "box $KILL_BOX's agent killed: its limiter stays attached" 1
	fi
}

prog_id_of() {
	bx "$1" ip -d link show dev "${IFR[$1]}" | awk '$1 ~ /^prog\/xdp/ {
		for (i = 1; i < NF; i++) if ($i == "id") { print $(i + 1); exit } }'
}
step_upgrade() {
	local before after out r0
	sleep 1
	before=$(prog_id_of 2)
	r0=$(reports 2)
	if out=$(bx 2 "$SLUICE" attach "${IFR[2]}" --config "${CONF[2]}" 2>&1); then
		after=$(prog_id_of 2)
		UPGRADES=$((UPGRADES + 1))
		if [ -n "$after" ] && [ "$after" != "$before" ]; then
			step_check "box 2 attached again (the upgrade): a new program ($before -> $after)" 0
		else
			step_check "box 2 attached again (the upgrade): a new program" 1 \
				"program $before before, '$after' after: $out"
		fi
	else
		step_check "box 2 attached again (the upgrade) exits 0" 1 "$out"
	fi
	sleep 2
	if [ $(($(reports 2) - r0)) -ge 2 ] && kill -0 "${RUNP[2]}" 2>/dev/null; then
		step_check "box 2's run goes on reporting across the upgrade" 0
	else
		step_check "box 2's run goes on reporting across the upgrade" 1 \
			"$(tail -3 "${RUNLOG[2]}")"
	fi
}

step_rename() {
	local old=${IFR[3]} new st out
	new=${IFALT[3]}
	[ "$old" = "${IFALT[3]}" ] && new=${IFORIG[3]}
	# The reloads use the name: they end first.
	batch_wait
	sleep 1
	# A name changes only while the interface is down: a moment without
	# traffic (the veth cannot deliver), which the exempt count allows.
	bx 3 ip link set "$old" down && bx 3 ip link set "$old" name "$new" &&
		bx 3 ip link set "$new" up || {
		step_check "box 3's interface renamed $old -> $new" 1
		return
	}
	IFR[3]=$new
	RENAMES=$((RENAMES + 1))
	st=$(bx 3 "$SLUICE" -j status 2>/dev/null)
	if jq -e --arg n "$new" '.interfaces[] | select(.ifname == $n and .attached == true)' \
		<<<"$st" >/dev/null 2>&1; then
		step_check "renamed $old -> $new: status names $new, attached" 0
	else
		step_check "renamed $old -> $new: status names $new, attached" 1 \
			"$(bx 3 "$SLUICE" status 2>&1 | head -5)"
	fi
	if out=$(ctl 3 rule list 2>&1); then
		step_check "renamed: sluicectl -i $new works" 0
	else
		step_check "renamed: sluicectl -i $new works" 1 "$out"
	fi
	if out=$(bx 3 "$SLUICE" reload "$new" --config "${CONF[3]}" 2>&1); then
		step_check "renamed: sluice reload $new works" 0
	else
		step_check "renamed: sluice reload $new works" 1 "$out"
	fi
	sleep 1
	if kill -0 "${RUNP[3]}" 2>/dev/null; then
		step_check "renamed: box 3's run goes on" 0
	else
		step_check "renamed: box 3's run goes on" 1 "$(tail -3 "${RUNLOG[3]}")"
	fi
}

# ---- a run's fds and memory ----

fds_of() { # the fewest open fds of PID over three looks (a scrape's socket comes and goes)
	local k n m=
	for k in 1 2 3; do
		n=$(ls "/proc/$1/fd" 2>/dev/null | wc -l)
		[ -z "$m" ] || [ "$n" -lt "$m" ] && m=$n
		sleep 0.05
	done
	echo "$m"
}
rss_of() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null; }

# ---- one window ----

# window K STEP: traffic, the reloads and STEP, then every check.
FIRST_FD= FIRST_RSS= LAST_FD= LAST_RSS=
window() {
	local k=$1 step=$2 name i c t n got bound lost fl_sent fl_got fl_t rtt r \
		tag bad fd rss verdict t0 t1 sc fails slow line chk
	name=$(printf 'w%02d %s' "$k" "$step")
	STEP_CHECKS=() W_FAILS= KILLED=
	echo "# $name: $(date +%T)"
	snap CNT0
	t0=$(now)
	gens_start
	batch_start
	"step_$step"
	batch_wait
	gens_wait || not_ok "$name: every sender ran"
	t1=$(now)
	snap CNT1
	local tw=$SECONDS

	# held and default: at most burst + rate x t, on every box
	for c in held default; do
		bad= line=
		for i in 1 2 3; do
			got=$(delta "$i.$c") t=${GEN_T[$i]}
			if [ $c = held ]; then
				bound=$(calc "($HELD_BURST + $HELD_RATE * $t) * 1.02 + 2")
			else
				bound=$(calc "($DEF_BURST + $DEF_RATE * $t) * 1.02 + 2")
			fi
			SENT[$c]=$((SENT[$c] + GEN_N[$i.$c])) PASSED[$c]=$((PASSED[$c] + got))
			line+="box $i $got of ${GEN_N[$i.$c]} (bound $bound); "
			le "$got" "$bound" || bad+="box $i "
		done
		if [ -z "$bad" ]; then ok "$name: the $c sources held"; else
			not_ok "$name: the $c sources held (over: $bad)"; fi
		diag "$c: $line"
	done
	# exempt: all that the veth delivered
	bad= line=
	for i in 1 2 3; do
		got=$(delta "$i.exempt") n=${GEN_N[$i.exempt]}
		lost=$(delta "$i.drops")
		SENT[exempt]=$((SENT[exempt] + n)) PASSED[exempt]=$((PASSED[exempt] + got))
		line+="box $i $got of $n (veth lost $lost); "
		[ "$got" -le "$n" ] && [ $((got + lost)) -ge "$n" ] || bad+="box $i "
	done
	if [ -z "$bad" ]; then ok "$name: the exempt sources passed"; else
		not_ok "$name: the exempt sources passed (not: $bad)"; fi
	diag "exempt: $line"
	# denied: nothing
	bad= line=
	for i in 1 2 3; do
		got=$(delta "$i.denied")
		SENT[denied]=$((SENT[denied] + GEN_N[$i.denied]))
		PASSED[denied]=$((PASSED[denied] + got))
		line+="box $i $got of ${GEN_N[$i.denied]}; "
		[ "$got" = 0 ] || bad+="box $i "
	done
	if [ -z "$bad" ]; then ok "$name: the denied sources passed nothing"; else
		not_ok "$name: the denied sources passed nothing (passed: $bad)"; fi
	diag "denied: $line"
	# fleet: one bound over the three boxes
	fl_sent=0 fl_got=0 fl_t=0 rtt=0 line=
	for i in 1 2 3; do
		got=$(delta "$i.fleet")
		fl_got=$((fl_got + got)) fl_sent=$((fl_sent + GEN_N[$i.fleet]))
		fl_t=$(awk -v a="$fl_t" -v b="${GEN_T[$i]}" 'BEGIN { print (b > a) ? b : a }')
		r=$(fleet_of "$i" | jq -r '.rtt_ms // 0' 2>/dev/null)
		rtt=$(awk -v a="$rtt" -v b="${r:-0}" 'BEGIN { print (b > a) ? b : a }')
		line+="box $i $got; "
	done
	SENT[fleet]=$((SENT[fleet] + fl_sent)) PASSED[fleet]=$((PASSED[fleet] + fl_got))
	# A window in which Redis went away (restarted, stopped, a new password
	# before the agents read it) has the boxes switch to the outage share
	# and back: less than one burst at the switch, and up to one more when
	# Redis is back, as what they admitted meanwhile is never charged
	# (docs/fleet.md, "With Redis down").
	local switch=0
	case $step in redis-restart | redis-stop | password) switch=$((2 * FLEET_BURST)) ;; esac
	# A box whose agent is dead: D x (rate x H + burst/N), H = 3 intervals +
	# 2 x RTT its horizon (docs/fleet.md, "The bound"), D = 1.
	[ -n "$KILLED" ] && switch=$(calc "$FLEET_RATE * (3 * $SYNC_MS + 2 * $rtt) / 1000 + \
		$FLEET_BURST / $N")
	bound=$(calc "($FLEET_BURST + $switch + $FLEET_RATE * $fl_t + ($N - 1) * $FLEET_RATE * \
		($SYNC_MS + $rtt) / 1000) * 1.02")
	tag=
	[ -n "$KILLED" ] && tag=" (box $KILLED's agent dead: + rate x H + burst/N)"
	[ "$switch" != 0 ] && tag=" (Redis away: + a burst at each switch)"
	if le "$fl_got" "$bound"; then
		ok "$name: the fleet source held to the fleet bound$tag"
	else
		not_ok "$name: the fleet source held to the fleet bound$tag"
	fi
	diag "fleet: $fl_got of $fl_sent ($line) bound $FLEET_BURST + $switch + $FLEET_RATE/s x $fl_t s +" \
		"2 x $FLEET_RATE/s x ($SYNC_MS + $rtt) ms, + 2 % = $bound"

	# the runs: alive, fds and memory flat
	bad= line=
	for i in 1 2 3; do
		[ "$i" = "$KILLED" ] && { line+="box $i killed; "; continue; }
		if ! kill -0 "${RUNP[$i]}" 2>/dev/null; then
			bad+="box $i died ($(tail -2 "${RUNLOG[$i]}" | tr '\n' ' ')); "
			continue
		fi
		fd=$(fds_of "${RUNP[$i]}") rss=$(rss_of "${RUNP[$i]}")
		if [ -z "${RUN_FD0[$i]}" ]; then
			RUN_FD0[$i]=$fd RUN_RSS0[$i]=$rss
		fi
		line+="box $i fds ${RUN_FD0[$i]} -> $fd, VmRSS ${RUN_RSS0[$i]} -> $rss kB; "
		[ "$fd" -le $((RUN_FD0[$i] + FD_SLACK)) ] || bad+="box $i fds; "
		[ "$rss" -le $((RUN_RSS0[$i] + RSS_SLACK)) ] || bad+="box $i RSS; "
		if [ "$i" = 1 ]; then
			[ -n "$FIRST_FD" ] || FIRST_FD=$fd FIRST_RSS=$rss
			LAST_FD=$fd LAST_RSS=$rss
		fi
	done
	if [ -z "$bad" ]; then ok "$name: every sluice run alive, its fds and VmRSS flat"; else
		not_ok "$name: every sluice run alive, its fds and VmRSS flat ($bad)"; fi
	diag "runs: $line"
	# the scrapes of the window
	read -r sc fails slow line < <(awk -v a="$t0" -v b="$t1" '
		$1 >= a && $1 <= b { n++; if ($3 > m) m = $3
			if ($2 != 200) { f++; l = l $2 " after " $3 " s; " } }
		END { printf "%d %d %s %s\n", n, f, m + 0, l }' "$D/scrapes.log")
	SCRAPES=$((SCRAPES + sc)) SCRAPE_FAILS=$((SCRAPE_FAILS + fails))
	if [ "$fails" = 0 ] && [ "$sc" -ge $((WINDOW / 2)) ]; then
		ok "$name: metrics scraped every second ($sc scrapes, all 200)"
	else
		not_ok "$name: metrics scraped every second ($sc scrapes, $fails not 200)"
		diag "scrapes: $line"
	fi
	diag "scrapes: $sc, the slowest answered in $slow s"
	# the operator's commands
	if [ -z "$W_FAILS" ]; then
		ok "$name: every reload and rule edit exited 0"
	else
		not_ok "$name: every reload and rule edit exited 0"
		diag "$W_FAILS"
	fi
	for chk in "${STEP_CHECKS[@]}"; do
		IFS='|' read -r c verdict line <<<"$chk"
		if [ "$verdict" = 0 ]; then ok "$name: $c"; else not_ok "$name: $c"; diag "$line"; fi
	done
	diag "$name: traffic and work $(calc "$t1 - $t0") s, checks $((SECONDS - tw)) s"
	# A killed agent comes back after its window, and must sync again.
	if [ -n "$KILLED" ]; then
		run_box "$KILLED"
		if synced_all 15; then ok "$name: box $KILLED's agent started again: synced"; else
			not_ok "$name: box $KILLED's agent started again: synced"; fi
	fi
}

# ---- the day ----

START=$SECONDS
lab || { not_ok "build the generator and three box namespaces"; exit 1; }
(umask 077 && echo "soak-$$-first" >"$PASSFILE")
redis_start || { not_ok "start redis-server on $SOCK"; exit 1; }
for i in 1 2 3; do
	conf_write "$i" a
	if ! out=$(bx "$i" "$SLUICE" attach "${IFR[$i]}" --config "${CONF[$i]}" 2>&1); then
		not_ok "box $i: sluice attach --config"
		diag "$out"
		exit 1
	fi
	run_box "$i"
done
ok "three boxes attached through their config files, each with its agent"
if synced_all 20; then ok "every box synced, 3 boxes"; else
	not_ok "every box synced, 3 boxes"
	for i in 1 2 3; do diag "run $i: $(tail -5 "${RUNLOG[$i]}")"; done
fi
for _ in $(seq 100); do
	URL=$(sed -n 's/^serving the counters at \(http:[^ ]*\)$/\1/p' "${RUNLOG[1]}" | tail -1)
	[ -n "$URL" ] && break
	sleep 0.05
done
if [ -n "$URL" ]; then ok "box 1's run serves its metrics ($URL)"; else
	not_ok "box 1's run serves its metrics"; diag "$(cat "${RUNLOG[1]}")"; fi
: >"$D/scrapes.log"
scraper &
SCRAPER_PID=$!

# Windows until SOAK_S is spent, but every step of the day at least once.
k=1
window "$k" reloads
WLEN=$((SECONDS - START))
s=0
while :; do
	k=$((k + 1))
	window "$k" "${STEPS[s]}"
	s=$(((s + 1) % ${#STEPS[@]}))
	# One more window only if it ends within SOAK_S; but a whole round first.
	wl=$(((SECONDS - START) / k))
	[ "$k" -le "${#STEPS[@]}" ] && continue
	[ $((SECONDS - START + wl)) -le "$SOAK_S" ] || break
done

# ---- the figures of the day ----
echo "# the day: $k windows of $WINDOW s in $((SECONDS - START)) s (SOAK_S=$SOAK_S)"
for c in held default exempt denied fleet; do
	echo "# the day: $c: ${PASSED[$c]} of ${SENT[$c]} packets passed"
done
echo "# the day: reloads: $RELOADS_SAME of the same file, $RELOADS_CHANGED of a changed one;" \
	"$EDITS rule edits; $EDIT_FAILS failed"
echo "# the day: redis restarts $REDIS_RESTARTS, stops $REDIS_STOPS, new passwords $ROTATIONS;" \
	"agents killed $KILLS; upgrades $UPGRADES; renames $RENAMES"
echo "# the day: metrics scrapes $SCRAPES, $SCRAPE_FAILS not 200"
echo "# the day: box 1's run: fds $FIRST_FD at the start, $LAST_FD at the end;" \
	"VmRSS $FIRST_RSS kB at the start, $LAST_RSS kB at the end"
if [ "$RELOADS_SAME" -ge 50 ] && [ "$RELOADS_CHANGED" -ge 50 ]; then
	ok "the day: at least 50 reloads of the same file and 50 of a changed one"
else
	not_ok "the day: at least 50 reloads of the same file and 50 of a changed one" \
		"($RELOADS_SAME, $RELOADS_CHANGED: SOAK_S=$SOAK_S is too short)"
fi
# A limiter that drops everything would pass every bound: the held classes
# got at least half their rate over the day.
for c in held default; do
	if [ $c = held ]; then r=$HELD_RATE; else r=$DEF_RATE; fi
	floor=$((r * 3 * k * WINDOW / 2))
	if [ "${PASSED[$c]}" -ge "$floor" ]; then
		ok "the day: the $c sources were limited, not cut off (${PASSED[$c]} >= $floor)"
	else
		not_ok "the day: the $c sources were limited, not cut off (${PASSED[$c]} < $floor)"
	fi
done
tap_done
