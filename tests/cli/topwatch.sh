#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluicectl top --watch, a live view as top(1): on a terminal (a pseudo-
# terminal here, python3's pty module) the screen is cleared once and each
# refresh drawn over the last, in place; piped, plain blocks one after the
# other, each after a timestamp line, no escape sequences; -j one JSON object
# a line per refresh; --count N stops after N, Ctrl-C and SIGTERM stop it with
# exit status 0, a detach with 1. Bad --watch and --count values are usage
# errors (no root needed); the rest runs on a lab with a limiter that drops.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

if [ ! -x "$SLUICECTL" ]; then
	skip "sluicectl is not built ($SLUICECTL): run 'make'" "top --watch"
	exit 0
fi

# ---- the words: no root, no interface ----
usage() { local n=$1 p=$2; shift 2; expect_usage "$n" "$p" "$SLUICECTL" "$@"; }
usage "top --count without --watch" "give --watch too" top --count 3
usage "top --watch too short" "out of range" top --watch 50ms
usage "top --watch too long" "out of range" top --watch 2h
usage "top --watch not a duration" "not a duration" top --watch soon
usage "top --watch twice" "--watch is given twice" top --watch 1 --watch 2
usage "top --count 0" "at least 1" top --watch --count 0
usage "top --count without a number" "--count needs a number" top --watch --count
usage "top --count twice" "--count is given twice" top --watch --count 1 --count 2

help=$("$SLUICECTL" top help)
for w in "--watch [DUR]" "--count N"; do
	grep -qF -- "$w" <<<"$help" && grep -qF -- "$w" <<<"$("$SLUICECTL" help)" &&
		ok "top help and sluicectl help name top $w" ||
		not_ok "top help and sluicectl help name top $w"
done
sec=$(awk '/^\.S[HS] / { on = ($0 == ".SS top") } on' man/sluicectl.8)
grep -qF -- '\-\-watch' <<<"$sec" && grep -qF -- '\-\-count' <<<"$sec" &&
	ok "sluicectl(8)'s top section names --watch and --count" ||
	not_ok "sluicectl(8)'s top section names --watch and --count"

# ---- a lab: a limiter, two sources over their limit ----
netns_need_root "top --watch on a lab" python3 jq
netns_need_sluice "top --watch on a lab"
N=86
netns_setup tw $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }
FLOOD=198.18.$N.9 OTHER=198.18.$N.10

expect_status 0 "attach --rate 100/s --burst 10" rx_sluice attach "$IF_RX" --rate 100/s --burst 10 ||
	exit 1
# Past a key's first 64 drops its count is sampled (sd 8 x sqrt(N - 64)):
# with 600 against 200 the two counts crossed about once in 40 runs. 3000
# against 200 puts the flood about 6 sd ahead.
tx_gen -s "$FLOOD" -d "$ADDR4_RX" -n 3000 -r 20000 >/dev/null &&
	tx_gen -s "$OTHER" -d "$ADDR4_RX" -n 200 -r 20000 >/dev/null ||
	not_ok "send two floods (sluice-gen)"
drops=$(ctl -j top | jq -r '.keys_with_drops')
[ "${drops:-0}" -ge 2 ] && ok "top -j: both sources have drops ($drops keys)" ||
	not_ok "top -j: both sources have drops (keys_with_drops ${drops:-none})"

# pty_run OUT ROWS COLS INT_AFTER CMD...: run CMD on a pseudo-terminal of
# ROWS x COLS, its output (raw bytes) into OUT; with INT_AFTER > 0, type
# Ctrl-C once INT_AFTER screens have been drawn (cursor home sequences seen).
# Returns CMD's exit status (128 + N: killed by signal N; 124: still running
# after 20 s, then killed).
pty_run() {
	python3 - "$@" <<-'EOF'
	import fcntl, os, pty, select, signal, struct, sys, termios, time
	out, rows, cols, int_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
	pid, fd = pty.fork()
	if pid == 0:
	    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
	    os.execvp(sys.argv[5], sys.argv[5:])
	data, typed, end = b"", False, time.time() + 20
	while time.time() < end:
	    r, _, _ = select.select([fd], [], [], 0.1)
	    if r:
	        try:
	            chunk = os.read(fd, 65536)
	        except OSError:
	            break
	        if not chunk:
	            break
	        data += chunk
	    if int_after and not typed and data.count(b"\x1b[H") >= int_after:
	        os.write(fd, b"\x03")  # the terminal's Ctrl-C: SIGINT to its foreground
	        typed = True
	else:
	    os.kill(pid, signal.SIGKILL)
	    os.waitpid(pid, 0)
	    open(out, "wb").write(data)
	    sys.exit(124)
	open(out, "wb").write(data)
	_, st = os.waitpid(pid, 0)
	sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
	EOF
}
NSX=(nsenter --net="/var/run/netns/$NS_RX")
T=$NETNS_TMP

# ---- on a terminal: cleared once, redrawn in place ----
pty_run "$T/pty" 40 120 0 "${NSX[@]}" "$SLUICECTL" -i "$IF_RX" top --watch 0.2 --count 3
st=$?
[ $st = 0 ] && ok "on a terminal: --count 3 ends with exit status 0" ||
	not_ok "on a terminal: --count 3 ends with exit status 0 (got $st)"
clears=$(grep -aoF $'\e[2J' "$T/pty" | wc -l)
homes=$(grep -aoF $'\e[H' "$T/pty" | wc -l)
if [ "$clears" = 1 ] && [ "$homes" = 3 ]; then
	ok "on a terminal: the screen is cleared once, the cursor sent home at each of 3 refreshes"
else
	not_ok "on a terminal: the screen is cleared once, the cursor sent home at each of 3 refreshes"
	diag "clear-screen sequences $clears (want 1), cursor home $homes (want 3)"
	diag "$(head -c 2000 "$T/pty" | cat -v)"
fi
# The last screen: what follows the last cursor home.
last=$(awk 'BEGIN { RS = "\033\\[H" } { s = $0 } END { printf "%s", s }' "$T/pty" | tr -d '\r')
if grep -qF "$IF_RX" <<<"$last" && grep -q "^rx [0-9]* ([0-9.]*/s)  passed" <<<"$last" &&
	grep -qF "$FLOOD/32" <<<"$last" && grep -qF "$OTHER/32" <<<"$last"; then
	ok "on a terminal: a redrawn screen has the header (interface, totals, rates) and both keys"
else
	not_ok "on a terminal: a redrawn screen has the header (interface, totals, rates) and both keys"
	diag "$(cat -v <<<"$last")"
fi
first=$(grep -n -m1 -F "$FLOOD/32" <<<"$last" | cut -d: -f1)
second=$(grep -n -m1 -F "$OTHER/32" <<<"$last" | cut -d: -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ] &&
	ok "on a terminal: the key with the most drops first" ||
	not_ok "on a terminal: the key with the most drops first ($FLOOD: line ${first:-none}, $OTHER: ${second:-none})"

# A screen of 5 rows holds 4 lines (the last row's newline would scroll):
# the rest is left out, and a line says so.
pty_run "$T/small" 5 120 0 "${NSX[@]}" "$SLUICECTL" -i "$IF_RX" top --watch 0.2 --count 2
screen=$(awk 'BEGIN { RS = "\033\\[H" } { s = $0 } END { printf "%s", s }' "$T/small" | tr -d '\r')
rows=$(grep -c $'\e\\[K$' <<<"$screen")
if [ "$rows" = 4 ] && grep -qF "more rows than the terminal holds" <<<"$screen"; then
	ok "on a terminal of 5 rows: 4 lines drawn, the last says more did not fit"
else
	not_ok "on a terminal of 5 rows: 4 lines drawn, the last says more did not fit ($rows lines)"
	diag "$(cat -v <<<"$screen")"
fi

# Ctrl-C, typed on the terminal after two screens: exit status 0.
pty_run "$T/int" 40 120 2 "${NSX[@]}" "$SLUICECTL" -i "$IF_RX" top --watch 0.2
st=$?
homes=$(grep -aoF $'\e[H' "$T/int" | wc -l)
[ $st = 0 ] && [ "$homes" -ge 2 ] &&
	ok "on a terminal: Ctrl-C after $homes screens stops it with exit status 0" ||
	not_ok "on a terminal: Ctrl-C after two screens stops it with exit status 0 (got $st, $homes screens)"

# -j on a terminal: JSON lines all the same, no escape sequence.
pty_run "$T/ptyj" 40 120 0 "${NSX[@]}" "$SLUICECTL" -i "$IF_RX" -j top --watch 0.2 --count 2
if ! grep -qaF $'\e' "$T/ptyj" && [ "$(tr -d '\r' <"$T/ptyj" | jq -c . 2>/dev/null | wc -l)" = 2 ]; then
	ok "-j on a terminal: 2 JSON lines, no escape sequence"
else
	not_ok "-j on a terminal: 2 JSON lines, no escape sequence"
	diag "$(cat -v "$T/ptyj")"
fi

# ---- piped: plain blocks, each after its timestamp line ----
ctl top --watch 0.2 --count 3 >"$T/pipe" 2>"$T/pipe.err"
st=$?
blocks=$(grep -cE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}  $IF_RX  every 200ms\$" "$T/pipe")
keys=$(grep -cF "$FLOOD/32" "$T/pipe")
if [ $st = 0 ] && [ "$blocks" = 3 ] && [ "$keys" = 3 ]; then
	ok "piped: --count 3 prints 3 blocks, each after a timestamp line and with the flood's key"
else
	not_ok "piped: --count 3 prints 3 blocks, each after a timestamp line and with the flood's key"
	diag "exit status $st, $blocks timestamp lines, $keys rows of $FLOOD"
	diag "$(cat "$T/pipe" "$T/pipe.err")"
fi
grep -qF $'\e' "$T/pipe" && not_ok "piped: no escape sequence" || ok "piped: no escape sequence"
# the first block has no rates (nothing to compare with), the later ones do
if [ "$(grep -c '^rx [0-9]*  passed [0-9]*  dropped [0-9]*$' "$T/pipe")" = 1 ] &&
	[ "$(grep -cE '^rx [0-9]+ \([0-9.]+/s\)  passed [0-9]+ \([0-9.]+/s\)  dropped [0-9]+ \([0-9.]+/s\)$' "$T/pipe")" = 2 ]; then
	ok "piped: the totals line of each block, with rates from the second on"
else
	not_ok "piped: the totals line of each block, with rates from the second on"
	diag "$(grep '^rx ' "$T/pipe")"
fi

# SIGTERM (as systemd and kill send) ends it with exit status 0, whole blocks
# out. (nsenter execs sluicectl: $! is its pid.)
"${NSX[@]}" "$SLUICECTL" -i "$IF_RX" top --watch 0.2 >"$T/term" 2>&1 &
pid=$!
for _ in $(seq 50); do
	[ "$(grep -c ' every 200ms$' "$T/term")" -ge 2 ] && break
	sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
st=$?
[ $st = 0 ] && [ "$(tail -c 1 "$T/term" | od -An -c | tr -d ' ')" = '\n' ] &&
	ok "piped: SIGTERM stops it with exit status 0 after whole blocks" ||
	{ not_ok "piped: SIGTERM stops it with exit status 0 after whole blocks (got $st)"; diag "$(tail -5 "$T/term")"; }

# ---- -j: one JSON object a line per refresh ----
ctl -j top --watch 0.2 --count 3 >"$T/json" 2>"$T/json.err"
st=$?
valid=$(jq -c . "$T/json" 2>/dev/null | wc -l)
if [ $st = 0 ] && [ "$(wc -l <"$T/json")" = 3 ] && [ "$valid" = 3 ]; then
	ok "-j --watch --count 3: 3 lines, each a valid JSON document"
else
	not_ok "-j --watch --count 3: 3 lines, each a valid JSON document"
	diag "exit status $st; $valid valid"; diag "$(cat "$T/json" "$T/json.err")"
fi
want="$IF_RX $FLOOD/32 true"
got=$(jq -r '[.interface, .top[0].key, (.time | test("^[0-9-]{10}T[0-9:]{8}$"))] | join(" ")' "$T/json" | sort -u)
[ "$got" = "$want" ] && ok "-j --watch: each line names the interface, the time, the flood's key first" ||
	{ not_ok "-j --watch: each line names the interface, the time, the flood's key first"; diag "got: $got"; }
got=$(jq -r '[has("per_second"), has("interval_s"), (.rx >= .dropped), (.keys_with_drops >= 2)] | join(" ")' "$T/json" | tr '\n' '|')
[ "$got" = "false false true true|true true true true|true true true true|" ] &&
	ok "-j --watch: totals in each line, interval_s and per_second from the second on" ||
	{ not_ok "-j --watch: totals in each line, interval_s and per_second from the second on"; diag "got: $got"; }
# the same object as top -j, plus the watch's fields
a=$(head -1 "$T/json" | jq -c 'del(.time, .interface, .rx, .passed, .dropped) | keys')
b=$(ctl -j top | jq -c keys)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "-j --watch: top -j's object, plus the watch's fields" ||
	{ not_ok "-j --watch: top -j's object, plus the watch's fields"; diag "watch: $a"; diag "top -j: $b"; }

# ---- a detach ends the watch: exit status 1, saying so ----
"${NSX[@]}" "$SLUICECTL" -i "$IF_RX" top --watch 0.2 >"$T/det" 2>"$T/det.err" &
pid=$!
for _ in $(seq 50); do
	grep -q ' every 200ms$' "$T/det" && break
	sleep 0.1
done
rx_sluice detach "$IF_RX" >/dev/null 2>&1
for _ in $(seq 50); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill "$pid" 2>/dev/null
wait "$pid"
st=$?
[ $st = 1 ] && grep -q "was detached from $IF_RX" "$T/det.err" &&
	ok "a detach ends the watch: exit status 1, 'sluice was detached'" ||
	{ not_ok "a detach ends the watch: exit status 1, 'sluice was detached' (got $st)"; diag "$(cat "$T/det.err")"; }

tap_done
