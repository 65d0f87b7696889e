#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice run --metrics ADDR:PORT`, on 127.0.0.1 (and ::1) of the receiver's
# namespace: the value is checked (port 0..65535, IPv6 in brackets) before
# anything is attached; a bind failure says why, by its errno; the URL
# printed is the one bound (the real port after port 0). GET /metrics
# answers the Prometheus text (promtool checks it), other paths 404, other
# methods 405. A client that trickles a byte every 0.9 s neither stops the
# per-second reports nor delays another scrape, and is cut off at the
# deadline; connections from one address are bounded; SIGTERM ends the run
# cleanly with a client connected.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "metrics" curl
netns_need_sluice "metrics"

netns_setup mt 27 || { not_ok "build the namespaces and the veth pair"; exit 1; }

URL= PORT=

# run_url: wait (up to 5 s) for the run's "serving the counters at URL";
# sets URL, and PORT when the URL has one.
run_url() {
	local i
	URL= PORT=
	for i in $(seq 100); do
		URL=$(sed -n 's/^serving the counters at \(http:[^ ]*\)$/\1/p' "$RUN_OUT")
		[ -n "$URL" ] && break
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	PORT=$(sed -n 's|^http://.*:\([0-9]*\)/metrics$|\1|p' <<<"$URL")
	[ -n "$URL" ]
}

# listening_port: the port the run listens on, as ss sees it (for the checks
# that follow, when the URL printed does not say).
listening_port() {
	rx_exec ss -Hltnp 2>/dev/null | grep "pid=$RUN_PID," | head -1 |
		awk '{ n = split($4, a, ":"); print a[n] }'
}


# run_stop NAME: SIGTERM the run; ok when it exits 0 and left nothing attached.
run_stop() {
	kill -TERM "$RUN_PID"
	if run_exit 10 && [ "$RUN_ST" = 0 ] && [ -z "$(xdp_prog_id)" ] && ! pinned; then
		ok "$1: on SIGTERM run exits 0 and detaches"
	else
		not_ok "$1: on SIGTERM run exits 0 and detaches"
		diag "exit status $RUN_ST, program '$(xdp_prog_id)': $(cat "$RUN_OUT")"
	fi
}

pinned() { [ -e "$RX_PINS/sluice_config" ]; }

# scrape ARGS...: curl in the receiver's namespace; prints the HTTP status.
scrape() { rx_exec curl -sS -o "$NETNS_TMP/body" -D "$NETNS_TMP/headers" -w '%{http_code}' "$@"; }

# trickle LOG: one client on PORT sending a request one byte every 0.9 s,
# with no end of its headers in sight; LOG says "cut after N bytes" when
# the server ends the connection. Its pid in TRICKLE_PID.
trickle() {
	rx_exec bash -c '
		trap "" PIPE
		exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
		echo connected
		req=$'"'"'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '"'"'
		req+=$(printf "%060d" 0)
		for ((i = 0; i < ${#req}; i++)); do
			printf %s "${req:i:1}" >&3 || { echo "cut after $i bytes (write)"; exit 0; }
			read -r -t 0.9 -N 1 -u 3 c
			st=$?
			[ "$st" -gt 128 ] && continue
			[ "$st" = 0 ] && { echo "answered after $((i + 1)) bytes"; exit 0; }
			echo "cut after $((i + 1)) bytes"
			exit 0
		done
		echo "still connected after $i bytes"' "$PORT" >"$1" 2>&1 &
	TRICKLE_PID=$!
	NETNS_PIDS+=("$TRICKLE_PID")
}

# wait_for FILE PATTERN SECS: until FILE has a line with PATTERN.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ---- the value of --metrics: refused before anything is attached ----

bad_value() { # NAME VALUE PATTERN...
	local name=$1 value=$2 st pat
	shift 2
	OUT=$(rx_run_fg "$IF_RX" --metrics "$value" 2>&1)
	st=$?
	if [ "$st" = 2 ] && [ -z "$(xdp_prog_id)" ]; then
		ok "$name: exit status 2, nothing attached"
	else
		not_ok "$name: exit status 2, nothing attached"
		diag "exit status $st, program '$(xdp_prog_id)': $OUT"
	fi
	for pat in "$@"; do
		if grep -qF -- "$pat" <<<"$OUT"; then
			ok "$name: says '$pat'"
		else
			not_ok "$name: says '$pat'"
			diag "$OUT"
		fi
	done
}

bad_value "--metrics 127.0.0.1:65536" 127.0.0.1:65536 "'65536'" "0..65535"
bad_value "--metrics 127.0.0.1:http" 127.0.0.1:http "'http'" "0..65535"
bad_value "--metrics ::1:9158 (IPv6 without brackets)" ::1:9158 "[::1]:9158"

# ---- a bind failure says why, by its errno ----

# An address of no interface of this namespace: EADDRNOTAVAIL.
OUT=$(rx_run_fg "$IF_RX" --metrics 198.18.27.99:9100 2>&1)
st=$?
if [ "$st" = 1 ] && grep -q "not an address of this host" <<<"$OUT" &&
	! grep -q "in use" <<<"$OUT" && [ -z "$(xdp_prog_id)" ]; then
	ok "an address this namespace does not have: exit 1, 'not an address of this host'," \
		"not 'in use'"
else
	not_ok "an address this namespace does not have: exit 1, 'not an address of this host'," \
		"not 'in use'"
	diag "exit status $st: $OUT"
fi

# ---- one run: the URL, the answers, the exposition ----

run_start main "$IF_RX" --rate 100/s --interval 1 --metrics 127.0.0.1:0
if run_url && [ -n "$PORT" ] && [ "$PORT" != 0 ] &&
	[ "$URL" = "http://127.0.0.1:$PORT/metrics" ]; then
	ok "--metrics 127.0.0.1:0 prints the URL with the port it got ($URL)"
else
	not_ok "--metrics 127.0.0.1:0 prints the URL with the port it got"
	diag "URL '$URL': $(cat "$RUN_OUT")"
	PORT=$(listening_port)
	URL=http://127.0.0.1:$PORT/metrics
	diag "going on with the port it listens on: $PORT"
fi

# The port is taken now: a run on another interface (lo) cannot have it.
OUT=$(rx_run_fg lo --metrics "127.0.0.1:$PORT" 2>&1)
st=$?
if [ "$st" = 1 ] && grep -q "port is in use" <<<"$OUT" &&
	! grep -q "not an address" <<<"$OUT"; then
	ok "a port in use: exit 1, 'the port is in use'"
else
	not_ok "a port in use: exit 1, 'the port is in use'"
	diag "exit status $st: $OUT"
fi

code=$(scrape --max-time 5 "$URL")
if [ "$code" = 200 ] && grep -q "sluice_rx_total{interface=\"$IF_RX\"} [0-9]" "$NETNS_TMP/body"
then
	ok "GET /metrics: 200 and the counters of $IF_RX"
else
	not_ok "GET /metrics: 200 and the counters of $IF_RX"
	diag "status '$code': $(head -5 "$NETNS_TMP/body" 2>&1)"
fi
ctype=$(sed -n 's/^[Cc]ontent-[Tt]ype: *\(.*\)\r$/\1/p' "$NETNS_TMP/headers")
if [ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ]; then
	ok "GET /metrics: Content-Type text/plain; version=0.0.4; charset=utf-8"
else
	not_ok "GET /metrics: Content-Type text/plain; version=0.0.4; charset=utf-8"
	diag "$(cat "$NETNS_TMP/headers")"
fi
if [ "$code" != 200 ]; then
	not_ok "promtool check metrics accepts the scrape"
	diag "no scrape to check: HTTP status '$code'"
else
	promtool_check "promtool check metrics accepts the scrape" "$NETNS_TMP/body"
fi
for path in / /metricsx /nope; do
	code=$(scrape --max-time 5 "http://127.0.0.1:$PORT$path")
	if [ "$code" = 404 ]; then
		ok "GET $path: 404"
	else
		not_ok "GET $path: 404"
		diag "status '$code'"
	fi
done
code=$(scrape --max-time 5 -X POST -d x "$URL")
if [ "$code" = 405 ] && grep -qi '^allow: GET' "$NETNS_TMP/headers"; then
	ok "POST /metrics: 405, Allow: GET"
else
	not_ok "POST /metrics: 405, Allow: GET"
	diag "status '$code': $(cat "$NETNS_TMP/headers")"
fi

# ---- a client sending a byte every 0.9 s ----

TRICKLE_LOG=$NETNS_TMP/trickle.log
trickle "$TRICKLE_LOG"
wait_for "$TRICKLE_LOG" connected 5 || diag "the trickler did not connect: $(cat "$TRICKLE_LOG")"
sleep 1.5
code=$(scrape --max-time 2 "$URL")
if [ "$code" = 200 ] && ! grep -q "cut\|answered" "$TRICKLE_LOG"; then
	ok "a scrape while a client trickles its request answers at once (curl --max-time 2)"
else
	not_ok "a scrape while a client trickles its request answers at once (curl --max-time 2)"
	diag "status '$code'; the trickler: $(cat "$TRICKLE_LOG")"
fi
n0=$(reports)
sleep 4
n1=$(reports)
if [ $((n1 - n0)) -ge 2 ]; then
	ok "the reports go on while a client trickles its request ($((n1 - n0)) in 4 s, interval 1)"
else
	not_ok "the reports go on while a client trickles its request"
	diag "$((n1 - n0)) reports in 4 s (interval 1); the run waits in" \
		"$(cat "/proc/$RUN_PID/wchan" 2>&1)"
fi
if wait_for "$TRICKLE_LOG" "^cut after" 20; then
	ok "the trickling client is cut off at the deadline ($(grep cut "$TRICKLE_LOG"))"
else
	not_ok "the trickling client is cut off at the deadline"
	diag "the trickler: $(cat "$TRICKLE_LOG")"
fi
kill "$TRICKLE_PID" 2>/dev/null
wait "$TRICKLE_PID" 2>/dev/null

# ---- connections from one address are bounded ----

# Four silent connections from 127.0.0.1 take what one address may hold: a
# fifth is closed at once (curl: empty reply or reset, not its timeout);
# once the deadline ends them, scrapes answer again.
HOLD_LOG=$NETNS_TMP/hold.log
rx_exec bash -c '
	trap "" PIPE
	fds=()
	for ((i = 0; i < 4; i++)); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$0" || exit 1
		fds+=("$fd")
	done
	echo connected
	for fd in "${fds[@]}"; do
		read -r -t 30 -N 1 -u "$fd" c
		echo "ended ($?)"
	done' "$PORT" >"$HOLD_LOG" 2>&1 &
HOLD_PID=$!
NETNS_PIDS+=("$HOLD_PID")
wait_for "$HOLD_LOG" connected 5 || diag "the holder did not connect: $(cat "$HOLD_LOG")"
sleep 0.5
code=$(scrape --max-time 3 "$URL" 2>/dev/null)
st=$?
if [ "$st" != 0 ] && [ "$st" != 28 ] && ! grep -q ended "$HOLD_LOG"; then
	ok "a fifth connection from 127.0.0.1 is closed at once (curl exit status $st)"
else
	not_ok "a fifth connection from 127.0.0.1 is closed at once"
	diag "curl exit status $st, HTTP status '$code'; the holder: $(cat "$HOLD_LOG")"
fi
for i in $(seq 150); do
	[ "$(grep -c 'ended (1)' "$HOLD_LOG")" = 4 ] && break
	sleep 0.1
done
if [ "$(grep -c 'ended (1)' "$HOLD_LOG")" = 4 ] && [ "$(scrape --max-time 3 "$URL")" = 200 ]; then
	ok "the silent connections are cut off at the deadline, and scrapes answer again"
else
	not_ok "the silent connections are cut off at the deadline, and scrapes answer again"
	diag "the holder: $(cat "$HOLD_LOG")"
fi
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null

run_stop "--metrics 127.0.0.1:0"

# ---- SIGTERM with a client connected, a long interval ----

run_start term "$IF_RX" --interval 1m --metrics 127.0.0.1:0
if run_url && [ "$PORT" != 0 ]; then
	trickle "$NETNS_TMP/trickle2.log"
	wait_for "$NETNS_TMP/trickle2.log" connected 5
	sleep 0.5
	run_stop "--interval 1m, a client trickling its request"
	kill "$TRICKLE_PID" 2>/dev/null
	wait "$TRICKLE_PID" 2>/dev/null
else
	not_ok "--interval 1m --metrics 127.0.0.1:0 starts"
	diag "$(cat "$RUN_OUT")"
	kill -KILL "$RUN_PID" 2>/dev/null
fi

# ---- IPv6: the URL in brackets ----

if ! rx_exec ip -6 address show dev lo 2>/dev/null | grep -q "inet6 ::1/"; then
	skip "no ::1 in the test namespace (IPv6 disabled?)" "--metrics [::1]:0 prints and serves" \
		"http://[::1]:PORT/metrics"
else
	run_start v6 "$IF_RX" --metrics "[::1]:0"
	if run_url && [ "$PORT" != 0 ] && [ "$URL" = "http://[::1]:$PORT/metrics" ] &&
		[ "$(scrape --max-time 5 -g "$URL")" = 200 ]; then
		ok "--metrics [::1]:0 prints and serves $URL"
	else
		not_ok "--metrics [::1]:0 prints and serves http://[::1]:PORT/metrics"
		diag "URL '$URL': $(cat "$RUN_OUT")"
	fi
	run_stop "--metrics [::1]:0"
fi

tap_done
