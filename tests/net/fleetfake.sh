#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The fleet agent against a fake Redis that answers absurd values, with real
# traffic (issue 20, B5): a fleet policy --rate 2/s --burst 4 on a lab,
# `sluice run --redis unix:SOCK` on it, and the fake Redis of the tests
# (build/tests/tools/fakeredis, tests/lib/fakeredis.c) answering what its
# control file says at each sync. What passed XDP is counted at the
# receiver (nft, after XDP); every phase floods a source of its own.
#
#   1. sane answers (1 box, debt 0): a flood gets burst + rate x t;
#   2. a debt of a year: folded as the bound the fleet could have spent,
#      n x (w + S + 2 T) = 1 x (2 s + 50 ms + 2 x 200 ms) = 2.45 s, said in
#      the log; `show` never puts the source further out than that; then
#      sane answers again: the source is served at its limit once more
#      (today it stays locked for the year);
#   3. a count of 2305843010 boxes (more than --fleet-max): a failed sync,
#      an outage naming --fleet-max, N stays 1; then Redis hangs (an
#      outage): the source gets rate/N of the N before, never more than
#      burst + rate x t (a wrapped cost x N let 14 of 80 through in 4 s);
#   4. a count of -1, and of 2^32 + 2: failed syncs as well; then a hang:
#      the source is not locked out (N = 4294967295 made a packet cost 497
#      days at 100/s) and not let through more than burst + rate x t;
#   5. sane again: synced, 1 box;
#   6. a state an older agent left with N = 2305843010: a new agent takes N
#      as --fleet-max;
#   7. password rotation (B11): requirepass changed and the connection
#      dropped, WRONGPASS while the file has the old password, synced as soon
#      as the file has the new one, with no restart.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

FAKE=${FAKE:-$BUILD/tests/tools/fakeredis}
netns_need_root "fleet against a fake Redis" jq nft
netns_need_sluice "fleet against a fake Redis"
if [ ! -x "$FAKE" ]; then
	skip "the fake Redis is not built ($FAKE): run 'make tests'" "fleet against a fake Redis"
	exit 0
fi

RATE=2 BURST=4 PPS=20
SYNC_MS=50 TIMEOUT_MS=200
BOUND_S=2.45 # 1 x (burst x interval + S + 2 T)
YEAR_US=31536000000000

netns_setup ffk || { not_ok "build the lab"; exit 1; }
D=$NETNS_TMP
SOCK=$D/redis.sock
CTL=$D/control

# control LINE...: the fake's answers from now on (written whole, then renamed).
control() { printf '%s\n' "$@" >"$CTL.new" && mv "$CTL.new" "$CTL"; }
fleet_of() { rx_ctl -i "$IF_RX" stats -j 2>/dev/null | jq -c .fleet; }
# wait_fleet JQ: until JQ holds of the fleet object (10 s).
wait_fleet() {
	local k
	for ((k = 0; k < 200; k++)); do
		fleet_of | jq -e "$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	diag "fleet: $(fleet_of)"
	return 1
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
calc() { awk "BEGIN { printf \"%.2f\", $* }"; }

# flood NAME SRC SECS: SRC at PPS for SECS; PASSED what got through XDP,
# SENT what was sent, T the generator's span.
flood() {
	rx_counter_add "$1" ip saddr "$2" || return 1
	gen_bg "$1" -s "$2" -d "$ADDR4_RX" -r "$PPS" -t "$3" || return 1
	gen_wait "$1" || return 1
	sleep 0.3
	PASSED=$(rx_counter "$1")
	local -n sent="${1}_packets" secs="${1}_seconds"
	SENT=$sent T=$secs
}

control "live 1" "debt 0"
netns_bg "$FAKE" "$SOCK" "$CTL" >"$D/fake.log" 2>&1
for i in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
# The sender's own IPv6 chatter (DAD from ::, MLD from fe80::) exempt from
# the attach on: a key of it under the fleet policy would get the fake's year
# of debt too, and the agent's one line a minute about a folded debt could
# name it instead of the flood's source (seen once: "for p:fe80::/64").
printf 'rule add fe80::/10 --exempt\nrule add ::/128 --exempt\n' >"$D/quiet.conf"
rx_sluice attach "$IF_RX" --rate "$RATE/s" --burst "$BURST" --config "$D/quiet.conf" >/dev/null &&
	rx_ctl -i "$IF_RX" set --fleet on >/dev/null ||
	{ not_ok "attach a fleet policy"; exit 1; }
run_start run "$IF_RX" --redis "unix:$SOCK" --fleet "ffk$$" --sync-interval "${SYNC_MS}ms" \
	--redis-timeout "${TIMEOUT_MS}ms"
if wait_fleet '.state == "synced" and .boxes == 1'; then
	ok "the agent syncs with the fake Redis: synced, 1 box"
else
	not_ok "the agent syncs with the fake Redis: synced, 1 box"
	diag "$(cat "$RUN_OUT")"
	exit 1
fi

# ---- 1. sane ----
flood sane 198.18.1.10 4 || { not_ok "the sane flood"; exit 1; }
UP=$(calc "$BURST + $RATE * $T + 1")
diag "sane: $PASSED of $SENT passed in $T s (burst + rate x t + 1 = $UP)"
if le "$PASSED" "$UP" && le "$(calc "0.8 * ($BURST + $RATE * $T)")" "$PASSED"; then
	ok "sane answers: burst + rate x t pass"
else
	not_ok "sane answers: burst + rate x t pass"
fi

# ---- 2. a debt of a year ----
SRC=198.18.1.20
control "live 1" "debt $YEAR_US"
rx_counter_add year ip saddr "$SRC"
gen_bg year -s "$SRC" -d "$ADDR4_RX" -r "$PPS" -t 2
# show -j, every 100 ms for 1.5 s: how long the source waits for its next
# packet at most (the fold of a bound of 2.45 s makes it 0.95 s), and
# whether it waited at all (a fold happened).
MAX_S=0 HELD=0
for ((k = 0; k < 15; k++)); do
	sleep 0.1
	w=$(rx_ctl -i "$IF_RX" -j show "$SRC" 2>/dev/null |
		jq '[.. | .packets_wait_ns? // empty] | max // 0')
	[ -n "$w" ] && [ "$w" != 0 ] || continue
	HELD=1
	w=$(calc "$w / 1e9")
	le "$MAX_S" "$w" && MAX_S=$w
done
if [ "$HELD" = 1 ] && le "$MAX_S" "$BOUND_S"; then
	ok "a debt of a year: the source is held, no more than the bound ($MAX_S s <= $BOUND_S s)"
else
	not_ok "a debt of a year: the source is held, no more than the bound ($BOUND_S s)"
	diag "held $HELD, at most $MAX_S s; show: $(rx_ctl -i "$IF_RX" show "$SRC" 2>&1)"
fi
gen_wait year
if grep -q "answered a debt of 365d for p:$SRC/32, more than the 2450ms fleet" "$RUN_OUT"; then
	ok "a debt of a year: the agent says it folded the bound"
else
	not_ok "a debt of a year: the agent says it folded the bound"
	diag "$(cat "$RUN_OUT")"
fi
if [ "$(grep -c 'answered a debt of' "$RUN_OUT")" = 1 ]; then
	ok "a debt of a year: said once, not every sync"
else
	not_ok "a debt of a year: said once, not every sync"
	diag "$(grep 'answered a debt of' "$RUN_OUT")"
fi
control "live 1" "debt 0"
sleep "$(calc "$BOUND_S + 0.5")"
flood after 198.18.1.20 4 || { not_ok "the flood after the year"; exit 1; }
LOW=$(calc "0.8 * ($BURST + $RATE * $T)")
diag "after the year: $PASSED of $SENT passed in $T s (at least $LOW)"
if le "$LOW" "$PASSED" && le "$PASSED" "$(calc "$BURST + $RATE * $T + 1")"; then
	ok "sane answers again: the source is served at its limit (not locked for a year)"
else
	not_ok "sane answers again: the source is served at its limit (not locked for a year)"
	diag "show: $(rx_ctl -i "$IF_RX" show 198.18.1.20 2>&1)"
fi

# ---- 3. 2305843010 boxes, then a hang ----
control "live 2305843010" "debt 0"
Q='.state == "outage" and (.last_error | test("counted 2305843010 boxes.*--fleet-max 1024"))'
if wait_fleet "$Q"; then
	ok "2305843010 boxes: a failed sync, an outage naming --fleet-max"
else
	not_ok "2305843010 boxes: a failed sync, an outage naming --fleet-max"
fi
B=$(fleet_of | jq .boxes)
if [ "$B" = 1 ]; then
	ok "2305843010 boxes: N stays 1"
else
	not_ok "2305843010 boxes: N stays 1 (got $B)"
fi
control "hang"
flood wrap 198.18.1.30 8 || { not_ok "the flood after 2305843010 boxes"; exit 1; }
UP=$(calc "$BURST + $RATE * $T + 1")
diag "2305843010 boxes, then an outage: $PASSED of $SENT passed in $T s (at most $UP)"
if le "$PASSED" "$UP"; then
	ok "2305843010 boxes, then an outage: no more than burst + rate x t"
else
	not_ok "2305843010 boxes, then an outage: no more than burst + rate x t"
fi

# ---- 4. -1 and 2^32 + 2 boxes, then a hang ----
control "live 1" "debt 0"
wait_fleet '.state == "synced"' || not_ok "synced again before -1"
for n in -1 4294967298; do
	control "live $n" "debt 0"
	Q=".state == \"outage\" and (.last_error | test(\"counted $n boxes\")) and .boxes == 1"
	if wait_fleet "$Q"; then
		ok "$n boxes: a failed sync saying so, N stays 1"
	else
		not_ok "$n boxes: a failed sync saying so, N stays 1"
	fi
done
control "live -1" "debt 0"
sleep 0.3
control "hang"
flood minus 198.18.1.40 4 || { not_ok "the flood after -1 boxes"; exit 1; }
LOW=$(calc "0.8 * ($BURST + $RATE * $T)")
UP=$(calc "$BURST + $RATE * $T + 1")
diag "-1 boxes, then an outage: $PASSED of $SENT passed in $T s ($LOW to $UP)"
if le "$LOW" "$PASSED" && le "$PASSED" "$UP"; then
	ok "-1 boxes, then an outage: rate/N of N = 1, neither locked out nor more"
else
	not_ok "-1 boxes, then an outage: rate/N of N = 1, neither locked out nor more"
fi

# ---- 5. sane again ----
control "live 1" "debt 0"
if wait_fleet '.state == "synced" and .boxes == 1 and .last_error == ""'; then
	ok "sane answers again: synced, 1 box"
else
	not_ok "sane answers again: synced, 1 box"
fi
if kill -0 "$RUN_PID" 2>/dev/null; then
	ok "the agent ran through it all"
else
	not_ok "the agent ran through it all"
fi

# ---- 6. a state left with N = 2305843010 (by an agent that trusted it) ----
kill -INT "$RUN_PID"
run_exit 10 || not_ok "the agent stops on SIGINT"
# struct sluice_fleet: ok_until (8 bytes), then live (4, little-endian)
V=$(bpftool -j map lookup pinned "$RX_PINS/sluice_fleet" key 0 0 0 0 | jq -r '.value | .[]')
mapfile -t BYTES <<<"$V"
BYTES[8]=0x42 BYTES[9]=0x5f BYTES[10]=0x70 BYTES[11]=0x89
bpftool map update pinned "$RX_PINS/sluice_fleet" key 0 0 0 0 value hex \
	"${BYTES[@]#0x}" || not_ok "write N = 2305843010 into the state"
control "hang"
run_start run2 "$IF_RX" --redis "unix:$SOCK" --fleet "ffk$$" --sync-interval "${SYNC_MS}ms" \
	--redis-timeout "${TIMEOUT_MS}ms"
if wait_fleet '.state == "outage" and .boxes == 1024'; then
	ok "an agent started on a state with N = 2305843010 takes N as --fleet-max (1024)"
else
	not_ok "an agent started on a state with N = 2305843010 takes N as --fleet-max (1024)"
fi

# ---- 7. password rotation ----
kill -INT "$RUN_PID"
run_exit 10 || not_ok "the agent stops on SIGINT"
PW=$D/redis.pw
printf 'first\n' >"$PW.new" && chmod 600 "$PW.new" && mv "$PW.new" "$PW"
control "live 1" "debt 0" "password first"
run_start run3 "$IF_RX" --redis "unix:$SOCK" --fleet "ffk$$" --sync-interval "${SYNC_MS}ms" \
	--redis-timeout "${TIMEOUT_MS}ms" --redis-password-file "$PW"
if wait_fleet '.state == "synced"'; then
	ok "rotation: synced with the first password"
else
	not_ok "rotation: synced with the first password"
	diag "$(cat "$RUN_OUT")"
fi
control "live 1" "debt 0" "password second" "close"
sleep 0.3
control "live 1" "debt 0" "password second"
if wait_fleet '.state == "outage" and (.last_error | test("WRONGPASS"))'; then
	ok "rotation: a new requirepass, the old password in the file: an outage, WRONGPASS"
else
	not_ok "rotation: a new requirepass, the old password in the file: an outage, WRONGPASS"
fi
printf 'second\n' >"$PW.new" && chmod 600 "$PW.new" && mv "$PW.new" "$PW"
if wait_fleet '.state == "synced" and .last_error == ""'; then
	ok "rotation: the new password in the file: synced again, no restart"
else
	not_ok "rotation: the new password in the file: synced again, no restart"
fi

tap_done
