#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The systemd unit sluice@.service, as installed by `make install`, does what
# its comments promise. There is no systemd as PID 1 here, so the test runs
# the unit's own Exec lines the way systemd would for the instance IF_RX
# (%i/%I the interface, /etc/sluice/ a temporary directory, $VARS from its
# EnvironmentFile), in the receiver's namespace:
#   start    without the file: fails (its attach refuses it, naming the file;
#            a Condition would skip it and exit 0), nothing attached;
#   start    (ExecStart)  attaches with the file's policy and the .env's options;
#   reload   (ExecReload) makes settings and rules exactly the file;
#   restart  (ExecStop, then ExecStart) under a flood keeps the held source
#            held: the program is replaced, the pinned maps stay;
#   stop     (ExecStop)   leaves sluice attached and limiting;
#   sluice-fleet@ (ExecStart) syncs through the Redis of its .fleet file, and
#            its stop leaves sluice attached, the fleet state "stopped";
#   `sluice detach` removes it for good.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "service"
netns_need_sluice "service"

RATE=1000 BURST=1000 SECS=4

netns_setup sv || { not_ok "build the namespaces and the veth pair"; exit 1; }

# The pins of a limiter in a test namespace live where sluice says
# (status -j "pin_dir"); the lab's cleanup removes what is left of them
# (pins_release: only what this test made).
PIN_DIR=

# ---- install the unit as `make install` does ----

prefix=$NETNS_TMP/prefix
ETC=$NETNS_TMP/etc/sluice
CONF=$ETC/$IF_RX.conf
mkdir -p "$ETC"
expect_status 0 "make install PREFIX=TMP" \
	make -s --no-print-directory BUILD="$BUILD" install PREFIX="$prefix" || exit 1
UNIT=$prefix/lib/systemd/system/sluice@.service
if grep -q "^ExecStart=$prefix/sbin/sluice " "$UNIT"; then
	ok "the installed unit runs the installed sluice"
else
	not_ok "the installed unit runs the installed sluice"
	diag "$(grep -n '^Exec' "$UNIT")"
	exit 1
fi

# ---- running the unit's lines as systemd would ----

declare -A UNIT_ENV

# unit_values KEY: the value of every KEY= line of the [Service] section, in order.
unit_values() {
	sed -n '/^\[Service\]/,/^\[/p' "$UNIT" | sed -n "s/^[[:space:]]*$1=//p"
}

# unit_path PATH: PATH of the unit for the instance, with /etc/sluice/ moved
# into the test's directory.
unit_path() {
	local w=$1
	w=${w//%i/$IF_RX}
	w=${w//%I/$IF_RX}
	printf '%s' "${w//\/etc\/sluice\//$ETC/}"
}

# load_env: UNIT_ENV from the unit's EnvironmentFile= lines ('-': may be missing).
load_env() {
	local v f line k
	UNIT_ENV=()
	while IFS= read -r v; do
		f=$(unit_path "${v#-}")
		if [ ! -r "$f" ]; then
			[ "${v:0:1}" = - ] && continue
			echo "EnvironmentFile $f is missing" >&2
			return 1
		fi
		while IFS= read -r line; do
			[[ $line =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
			k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]}
			[[ $v =~ ^\"(.*)\"$ ]] && v=${BASH_REMATCH[1]}
			UNIT_ENV[$k]=$v
		done <"$f"
	done < <(unit_values EnvironmentFile)
}

# expand_line VALUE: CMD, the command of one Exec line: systemd's prefixes
# (-@:+!) dropped, %i/%I the interface, a word $VAR the variable split at
# whitespace (zero or more words). Fails on anything this does not emulate.
expand_line() {
	local raw=$1 w words parts
	CMD=()
	while [[ $raw == [-@:+!]* ]]; do raw=${raw:1}; done
	read -ra words <<<"$raw"
	for w in "${words[@]}"; do
		if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			read -ra parts <<<"${UNIT_ENV[${BASH_REMATCH[1]}]-}"
			CMD+=("${parts[@]}")
			continue
		fi
		w=$(unit_path "$w")
		if [[ $w == *[%\$\"\'\\]* ]]; then
			echo "the unit's word '$w' is not emulated by this test" >&2
			return 1
		fi
		CMD+=("$w")
	done
}

# unit_gate: what systemd checks before a start job runs the unit's lines:
# every Condition*= and Assert*= of the [Unit] section (PathExists= only,
# with '!'; anything else fails as not emulated). A failed Condition skips
# the unit, and systemctl start exits 0 (status 0 and UNIT_SKIPPED=1); a
# failed Assert fails the start (status 1), as systemctl start does.
UNIT_SKIPPED=0
unit_gate() {
	local kind key v p neg
	UNIT_SKIPPED=0
	while IFS= read -r v; do
		[[ $v =~ ^(Condition|Assert)([A-Za-z]+)=(.*)$ ]] || continue
		kind=${BASH_REMATCH[1]} key=${BASH_REMATCH[2]} p=${BASH_REMATCH[3]}
		if [ "$key" != PathExists ]; then
			echo "the unit's $kind$key= is not emulated by this test" >&2
			return 1
		fi
		neg=0
		[ "${p:0:1}" = '!' ] && neg=1 p=${p:1}
		p=$(unit_path "$p")
		if { [ -e "$p" ] && [ $neg = 0 ]; } || { [ ! -e "$p" ] && [ $neg = 1 ]; }; then
			continue
		fi
		if [ "$kind" = Condition ]; then
			echo "skipped: $kind$key=$p was not met (systemctl start exits 0)"
			UNIT_SKIPPED=1
			return 0
		fi
		echo "Assertion failed: $kind$key=$p was not met"
		return 1
	done < <(sed -n '/^\[Unit\]/,/^\[/p' "$UNIT" | sed 's/^[[:space:]]*//')
}

# start_unit: a start job: unit_gate, then ExecStartPre and ExecStart.
start_unit() {
	unit_gate || return
	[ "$UNIT_SKIPPED" = 1 ] && return 0
	run_unit ExecStartPre ExecStart
}

# run_unit KEY...: run every line of each KEY in turn in the receiver's
# namespace, stopping at the first failure, as systemd does. No line: nothing
# runs, success.
run_unit() {
	local key v lines
	load_env || return 1
	for key in "$@"; do
		mapfile -t lines < <(unit_values "$key")
		for v in "${lines[@]}"; do
			expand_line "$v" || return 1
			echo "+ ${CMD[*]}"
			rx_exec "${CMD[@]}" || return
		done
	done
}

# ---- reading the state, through sluice ----

# status_obj: the `sluice status -j` object of IF_RX (empty when none).
status_obj() {
	rx_sluice -j status | sed 's/{"ifname":/\n&/g' | grep -F "{\"ifname\":\"$IF_RX\","
}
# jget JSON NAME: the first value of "NAME" in JSON, unquoted.
jget() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2- | tr -d '"'; }
# rule_row MATCH: the `rule list -j` object of one rule ("default": the default policy).
rule_row() {
	rx_ctl -i "$IF_RX" -j rule list | sed 's/{"match":/\n&/g' | grep -F "{\"match\":\"$1\","
}
# rules_now: the CIDR of every rule, sorted. rules_in FILE: those of FILE.
rules_now() {
	rx_ctl -i "$IF_RX" -j rule list | grep -o '"match":"[^"]*"' | cut -d'"' -f4 |
		grep -vx default | sort
}
rules_in() {
	sed -n 's/^[[:space:]]*rule add[[:space:]]\{1,\}\([^[:space:]#]*\).*/\1/p' "$1" | sort
}
# pinned_maps: "name:id" of every map pinned in PIN_DIR: the same ids are the same maps.
pinned_maps() {
	local f id maps=()
	[ -n "$PIN_DIR" ] && [ -d "$PIN_DIR" ] || return 1
	for f in "$PIN_DIR"/*; do
		id=$(bpftool -j map show pinned "$f" 2>/dev/null | grep -o '"id":[0-9]*' | head -1)
		[ -n "$id" ] && maps+=("$(basename "$f"):${id#*:}")
	done
	echo "${maps[*]}"
}

# rules_are NAME FILE: the rules are exactly FILE's.
rules_are() {
	local now want
	now=$(rules_now) want=$(rules_in "$2")
	if [ -n "$want" ] && [ "$now" = "$want" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "rules: $(echo $now)"
		diag "the file's: $(echo $want)"
	fi
}
# has NAME NEEDLE HAYSTACK
has() {
	if grep -qF -- "$2" <<<"$3"; then
		ok "$1"
	else
		not_ok "$1"
		diag "no '$2' in: $3"
	fi
}

# ---- start without the file: it fails, saying so, and attaches nothing ----
# (A start skipped by a Condition would exit 0 with nothing attached: an
# `enable --now` that looks done and limits nothing.)
OUT=$(start_unit 2>&1)
st=$?
if [ "$st" != 0 ] && ! grep -q '^skipped:' <<<"$OUT"; then
	ok "start without $IF_RX.conf: the start fails (exit status $st), not skipped"
else
	not_ok "start without $IF_RX.conf: the start fails, not skipped"
	diag "exit status $st: $OUT"
fi
has "start without $IF_RX.conf: says which file is missing" "$CONF: No such file" "$OUT"
if [ -z "$(xdp_prog_id)" ] && [ ! -e "$RX_PINS" ]; then
	ok "start without $IF_RX.conf: nothing attached or pinned"
else
	not_ok "start without $IF_RX.conf: nothing attached or pinned"
	diag "program '$(xdp_prog_id)'; $(ls "$RX_PINS" 2>&1)"
fi

# ---- start: the example config and an attach option from the .env ----

cp "$prefix/share/doc/sluice/sluice.conf.example" "$CONF"
echo 'SLUICE_ATTACH_OPTS=--max-keys 65536' >"$ETC/$IF_RX.env"
expect_status 0 "start (ExecStart) with the example config" start_unit || exit 1
diag "$OUT"
st=$(status_obj)
PIN_DIR=$(jget "$st" pin_dir)
PROG=$(jget "$st" prog_id)
if [ "$(jget "$st" attached)" = true ] && [ "${PROG:-0}" -gt 0 ] && [ -n "$(xdp_prog_id)" ]; then
	ok "start: attached (program $PROG)"
else
	not_ok "start: attached"
	diag "status: $st"
	exit 1
fi
if [ -n "$PIN_DIR" ] && [ -d "$PIN_DIR" ]; then
	ok "start: pinned where status says ($PIN_DIR)"
else
	not_ok "start: pinned where status says ('$PIN_DIR')"
fi
rules_are "start: the rules are the example's" "$CONF"
has "start: the example's default policy (100/s burst 200)" '"rate":"100/s","count":100,"period_ns":1000000000,"per_second":100,"burst":200}' \
	"$(grep -o '"policy":{[^}]*}' <<<"$st")"
has "start: the example's 198.18.0.0/24 at 10/s" '"rate":"10/s"' "$(rule_row 198.18.0.0/24)"
has "start: the example's 2001:2::/48 exempt" '"action":"exempt"' "$(rule_row 2001:2::/48)"
has "start: SLUICE_ATTACH_OPTS from the .env applied (--max-keys 65536)" '"max":65536' \
	"$(grep -o '"key_table":{[^}]*}' <<<"$st")"

# ---- reload: the state becomes exactly the file ----

# Live edits the file does not have: reload must undo them.
rx_ctl -i "$IF_RX" rule add 198.18.1.240/28 --deny >/dev/null
rx_ctl -i "$IF_RX" set --rate 5/s --dry-run on >/dev/null
cat >"$CONF" <<-EOF
	# sluice on $IF_RX: the test's policy
	set --rate $RATE/s --burst $BURST
	rule add 198.18.1.128/26 --rate 10/s   # A
	rule add 198.18.1.64/27 --exempt       # B
	rule add 2001:2:0:1::/64 --deny        # C
EOF
expect_status 0 "reload (ExecReload) after a new file" run_unit ExecReload
diag "$OUT"
rules_are "reload: the rules are exactly the file's (the example's and a live one gone)" "$CONF"
def=$(rule_row default)
has "reload: the file's default rate" "\"rate\":\"$RATE/s\",\"count\":$RATE" "$def"
has "reload: the file's default burst" "\"burst\":$BURST}" "$def"
has "reload: what the file does not set is the default (dry-run off again)" \
	'"effective_dry_run":false' "$(grep -o '"policy":{[^}]*}' <<<"$(status_obj)")"

# An edited file: one rule removed (A), one added (D).
had_a=$(rule_row 198.18.1.128/26)
sed -i '/# A$/d' "$CONF"
echo "rule add 198.18.1.192/26 --rate 20/s   # D" >>"$CONF"
expect_status 0 "reload after removing one rule and adding one" run_unit ExecReload
rules_are "reload: the rules are exactly the edited file's" "$CONF"
if [ -n "$had_a" ] && [ -z "$(rule_row 198.18.1.128/26)" ]; then
	ok "reload: the removed rule is gone"
else
	not_ok "reload: the removed rule is gone"
	[ -z "$had_a" ] && diag "198.18.1.128/26 was not there before the edit"
fi
has "reload: the added rule is there, at its rate" '"rate":"20/s"' "$(rule_row 198.18.1.192/26)"

# A bad file changes nothing and names FILE:LINE.
cp "$CONF" "$NETNS_TMP/good.conf"
echo "rule add 198.18.1.1/24 --rate 10/s" >>"$CONF"
bad_line=$(wc -l <"$CONF")
before=$(rules_now)
expect_status 2 "reload of a bad file: exit status 2" run_unit ExecReload
has "reload of a bad file: names FILE:LINE" "$CONF:$bad_line:" "$OUT"
if [ "$(rules_now)" = "$before" ]; then
	ok "reload of a bad file: the rules are unchanged"
else
	not_ok "reload of a bad file: the rules are unchanged"
	diag "before: $(echo $before)"
	diag "after: $(echo $(rules_now))"
fi
cp "$NETNS_TMP/good.conf" "$CONF"

# ---- restart under a flood: ExecStop (none), then ExecStart ----
# A restart re-applies the file too: D goes, E comes, while the default
# policy, which holds the flood, stays as it was.

sed -i '/# D$/d' "$CONF"
echo "rule add 198.18.1.224/28 --exempt      # E" >>"$CONF"
MAPS=$(pinned_maps)
[ -n "$MAPS" ] || diag "no pinned map found in '$PIN_DIR': the pins checks below cannot pass"
if [ "$(jget "$(grep -o '"policy":{[^}]*}' <<<"$(status_obj)")" effective_dry_run)" != false ]; then
	diag "dry-run is still on from the live edit (reload did not undo it): the flood below" \
		"cannot be held until the restart's attach --config turns it off"
fi
PROGS=$PROG
UPGRADED=1 RESUMED=1 KEPT=1
restart() { run_unit ExecStop && start_unit; }

# Each try floods from a fresh source (none of the rules' ranges) and
# restarts the unit in the middle of it.
measure() {
	local try=$1 flood=198.18.1.$((10 * $1)) prog
	rx_counter_add "flood$try" ip saddr "$flood" || return 1
	gen_bg flood -s "$flood" -d "$ADDR4_RX" -r $((RATE * 20)) -t "$SECS"
	sleep 1.5
	expect_status 0 "restart (ExecStop, ExecStart) while the source floods (try $try)" restart
	grep -q '^  resumed:' <<<"$OUT" || { RESUMED=0; diag "$OUT"; }
	prog=$(jget "$(status_obj)" prog_id)
	[ -n "$prog" ] && [ "$prog" != "${PROGS##* }" ] || UPGRADED=0
	PROGS+=" ${prog:-none}"
	[ "$(pinned_maps)" = "$MAPS" ] || KEPT=0
	gen_wait flood || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "flood$try") HELD_SECS=$flood_seconds HELD_LAG=$flood_lag
	diag "across the restart (a reset bucket would add $BURST):"
}
held_check "restart: the held source stays held (within 2%)" $BURST $RATE measure
if [ $UPGRADED = 1 ]; then
	ok "restart: every restart replaced the program (an upgrade: $PROGS)"
else
	not_ok "restart: every restart replaced the program (an upgrade)"
	diag "program ids: $PROGS"
fi
if [ $RESUMED = 1 ]; then
	ok "restart: attach says what it resumed"
else
	not_ok "restart: attach says what it resumed ('  resumed:' line)"
fi
if [ $KEPT = 1 ] && [ -n "$MAPS" ]; then
	ok "restart: the pins stayed, the same maps ($MAPS)"
else
	not_ok "restart: the pins stayed, the same maps"
	diag "before: $MAPS"
	diag "now: $(pinned_maps)"
fi
rules_are "restart: the rules are exactly the file's (attach --config)" "$CONF"
PROG=${PROGS##* }

# ---- stop: whatever the unit runs to stop leaves sluice attached ----

expect_status 0 "stop (the unit's ExecStop lines)" run_unit ExecStop ExecStopPost
st=$(status_obj)
if [ "$(jget "$st" attached)" = true ] && [ "$(jget "$st" prog_id)" = "$PROG" ] &&
	[ -n "$(xdp_prog_id)" ]; then
	ok "stop: sluice is still attached (program $PROG)"
else
	not_ok "stop: sluice is still attached (program $PROG)"
	diag "status: $st"
fi
if [ -n "$MAPS" ] && [ "$(pinned_maps)" = "$MAPS" ]; then
	ok "stop: the pins stayed"
else
	not_ok "stop: the pins stayed"
fi
after_stop() {
	local try=$1 flood=198.18.1.$((40 + $1))
	rx_counter_add "stopped$try" ip saddr "$flood" || return 1
	gen_bg stopped -s "$flood" -d "$ADDR4_RX" -r $((RATE * 20)) -t 2
	gen_wait stopped || return 1
	sleep 0.2
	HELD_ADMITTED=$(rx_counter "stopped$try") HELD_SECS=$stopped_seconds
	HELD_LAG=$stopped_lag
}
held_check "stop: a new flood is still held" $BURST $RATE after_stop

# ---- sluice-fleet@: the fleet agent over the limiter sluice@ attached ----
# Its ExecStart is a `sluice run` over an attached sluice: it syncs through
# the Redis its .fleet file names, and stopping it (SIGTERM, as systemd
# does) leaves the limiter attached, the fleet policies at rate/N.
if command -v redis-server >/dev/null; then
	UNIT=$prefix/lib/systemd/system/sluice-fleet@.service
	RSOCK=$NETNS_TMP/redis.sock
	redis-server --port 0 --unixsocket "$RSOCK" --unixsocketperm 700 --save '' \
		--appendonly no >"$NETNS_TMP/redis.log" 2>&1 &
	RPID=$!
	NETNS_PIDS+=($RPID)
	for _ in $(seq 100); do [ -S "$RSOCK" ] && break; sleep 0.05; done
	# Without its .fleet file the agent's start fails, saying which.
	expect_status 1 "sluice-fleet@ without $IF_RX.fleet: the start fails (exit status 1)" \
		unit_gate
	has "sluice-fleet@ without $IF_RX.fleet: says which file is missing" \
		"$ETC/$IF_RX.fleet" "$OUT"
	echo "SLUICE_FLEET_OPTS=--redis unix:$RSOCK --fleet sv$$ --sync-interval 100ms" \
		>"$ETC/$IF_RX.fleet"
	rx_ctl -i "$IF_RX" set --fleet on >/dev/null
	load_env && expand_line "$(unit_values ExecStart)"
	# nsenter execs sluice: $! is sluice, which the SIGTERM below must reach.
	nsenter --net="/var/run/netns/$NS_RX" "${CMD[@]}" >"$NETNS_TMP/fleet-unit.log" 2>&1 &
	FPID=$!
	NETNS_PIDS+=($FPID)
	state=
	for _ in $(seq 100); do
		state=$(rx_ctl -i "$IF_RX" -j stats | grep -o '"state":"[a-z]*"' | head -1)
		[ "$state" = '"state":"synced"' ] && break
		sleep 0.1
	done
	if [ "$state" = '"state":"synced"' ]; then
		ok "sluice-fleet@ (its ExecStart, with the .fleet file's options): synced"
	else
		not_ok "sluice-fleet@ (its ExecStart, with the .fleet file's options): synced"
		diag "$state; $(cat "$NETNS_TMP/fleet-unit.log")"
	fi
	kill -TERM "$FPID"
	wait "$FPID"
	fst=$?
	st=$(status_obj)
	state=$(rx_ctl -i "$IF_RX" -j stats | grep -o '"state":"[a-z]*"' | head -1)
	if [ "$fst" = 0 ] && [ "$(jget "$st" attached)" = true ] &&
		[ "$state" = '"state":"stopped"' ]; then
		ok "sluice-fleet@ stopped: exit 0, sluice still attached, the fleet state stopped"
	else
		not_ok "sluice-fleet@ stopped: exit 0, sluice still attached, the fleet state stopped"
		diag "exit $fst; attached $(jget "$st" attached); $state; $(tail -3 "$NETNS_TMP/fleet-unit.log")"
	fi
	rx_ctl -i "$IF_RX" set --fleet off >/dev/null
	kill "$RPID" 2>/dev/null
	UNIT=$prefix/lib/systemd/system/sluice@.service
else
	skip "redis-server is not installed (Debian package redis-server)" "sluice-fleet@"
fi

# ---- removing it for good: sluice detach ----

expect_status 0 "sluice detach" rx_sluice detach "$IF_RX"
if [ -z "$(xdp_prog_id)" ]; then
	ok "detach: no XDP program left"
else
	not_ok "detach: no XDP program left"
	diag "$(ip -n "$NS_RX" -d link show dev "$IF_RX")"
fi
if [ -n "$PIN_DIR" ] && [ ! -e "$PIN_DIR" ]; then
	ok "detach: the pins are gone"
else
	not_ok "detach: the pins are gone ($PIN_DIR)"
fi
st=$(status_obj)
if [ -z "$st" ] || [ "$(jget "$st" attached)" = false ]; then
	ok "detach: status no longer shows it attached"
else
	not_ok "detach: status no longer shows it attached"
	diag "$st"
fi
tap_done
