#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice run --metrics ADDR:PORT`, on 127.0.0.1 (and ::1) of the receiver's
# namespace: the value is checked (port 0..65535, IPv6 in brackets) before
# anything is attached; a bind failure says why, by its errno; the URL
# printed is the one bound (the real port after port 0). GET /metrics
# answers the Prometheus text (promtool checks it), other paths 404, other
# methods 405. A client that trickles a byte every 0.9 s neither stops the
# per-second reports nor delays another scrape, and is cut off at the
# deadline; a silent connection gives its slot to a scrape, and a hog from
# many loopback addresses holds one share, not every slot (scrapes from
# another host all answer beside it); --metrics-allow closes other sources
# at once (and scrapes from a listed 127.0.0.1 all answer beside the hog); --metrics unix:PATH is root's (0600), or a
# group's (0660); SIGTERM ends the run cleanly with a client connected.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "metrics" curl
netns_need_sluice "metrics"

netns_setup mt 27 || { not_ok "build the namespaces and the veth pair"; exit 1; }

URL= PORT=

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

# ---- a silent holder makes room for a scrape ----

# Four silent connections from 127.0.0.1 take what loopback may hold: a
# scrape from it makes room by cutting the oldest of them (it asked
# nothing), and answers; the other three are cut at the deadline.
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
if [ "$code" = 200 ] && wait_for "$HOLD_LOG" "ended" 2 && [ "$(grep -c ended "$HOLD_LOG")" = 1 ]
then
	ok "a scrape beside four silent connections from 127.0.0.1 answers, cutting the oldest"
else
	not_ok "a scrape beside four silent connections from 127.0.0.1 answers, cutting the oldest"
	diag "HTTP status '$code'; the holder: $(cat "$HOLD_LOG")"
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

# ---- a hog from many loopback addresses (issue 20, C27) ----

# hog.pl PORT FIRST LAST PER: from each of 127.0.0.FIRST..LAST, PER silent
# connections to 127.0.0.1:PORT, each opened again as soon as it is closed.
# Before, the limit per address let 20 addresses take every slot.
cat >"$NETNS_TMP/hog.pl" <<'PERL'
use strict; use warnings; use IO::Socket::INET; use IO::Select;
my ($port, $first, $last, $per) = @ARGV;
$| = 1;
my $sel = IO::Select->new;
my %src;
sub open_one {
	my ($a) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port,
		LocalAddr => $a, Proto => "tcp") or return;
	$src{fileno $s} = $a;
	$sel->add($s);
}
for my $i ($first .. $last) { open_one("127.0.0.$i") for 1 .. $per; }
print "holding ", scalar($sel->handles), "\n";
while (1) {
	for my $s ($sel->can_read(0.02)) {
		my $buf;
		next if sysread($s, $buf, 4096);
		my $a = $src{fileno $s};
		$sel->remove($s);
		close $s;
		open_one($a);
	}
}
PERL
hogs_start() {
	local i
	HOGS=()
	for i in 0 1 2; do
		rx_exec perl "$NETNS_TMP/hog.pl" "$PORT" $((i * 20 + 2)) $((i * 20 + 21)) 4 \
			>"$NETNS_TMP/hog$i.log" 2>&1 &
		HOGS+=($!)
		NETNS_PIDS+=($!)
	done
	for i in $(seq 50); do
		[ "$(cat "$NETNS_TMP"/hog*.log 2>/dev/null | grep -c holding)" = 3 ] && break
		sleep 0.1
	done
}
hogs_stop() {
	kill "${HOGS[@]}" 2>/dev/null
	wait "${HOGS[@]}" 2>/dev/null
}
# scrapes NAME FROM URL: 20 scrapes, one every 0.2 s, from the receiver's
# (rx) or the sender's (tx) namespace: all must answer 200.
scrapes() {
	local name=$1 from=$2 url=$3 i code bad=0 codes=
	for i in $(seq 20); do
		if [ "$from" = tx ]; then
			code=$(tx_exec curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$url")
		else
			code=$(rx_exec curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$url")
		fi
		[ "$code" = 200 ] || bad=$((bad + 1))
		codes+=" $code"
		sleep 0.2
	done
	if [ $bad = 0 ]; then ok "$name: 20 of 20 scrapes answer"
	else not_ok "$name: 20 of 20 scrapes answer"; diag "$bad failed:$codes"; fi
}

run_start hog "$IF_RX" --interval 1 --metrics 0.0.0.0:0
if run_url && [ -n "$PORT" ]; then
	hogs_start
	diag "$(cat "$NETNS_TMP"/hog*.log)"
	# Loopback is one source network: the hog holds its 4 slots, not 16.
	scrapes "beside 240 connections from 60 loopback addresses, from $ADDR4_TX" tx \
		"http://$ADDR4_RX:$PORT/metrics"
	hogs_stop
else
	not_ok "--metrics 0.0.0.0:0 starts"
	diag "$(cat "$RUN_OUT")"
fi
run_stop "--metrics 0.0.0.0:0 beside a hog"

# ---- --metrics-allow: only the sources listed ----

# A scraper on the host itself shares loopback with a local hog: the way to
# keep the hog out is to list the scraper (or a unix socket, below).
run_start allow "$IF_RX" --interval 1 --metrics 0.0.0.0:0 \
	--metrics-allow "$ADDR4_TX,127.0.0.1,2001:2::/48"
if run_url && [ -n "$PORT" ]; then
	hogs_start
	scrapes "--metrics-allow $ADDR4_TX,127.0.0.1, beside the hog, from $ADDR4_TX" tx \
		"http://$ADDR4_RX:$PORT/metrics"
	scrapes "--metrics-allow $ADDR4_TX,127.0.0.1, beside the hog, from 127.0.0.1" rx \
		"http://127.0.0.1:$PORT/metrics"
	hogs_stop
	code=$(rx_exec curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
		--interface 127.0.0.2 "http://127.0.0.1:$PORT/metrics")
	st=$?
	if [ "$code" != 200 ] && [ "$st" != 28 ]; then
		ok "--metrics-allow: 127.0.0.2, not listed, is closed at once (curl: $st)"
	else
		not_ok "--metrics-allow: 127.0.0.2, not listed, is closed at once"
		diag "curl exit status $st, HTTP status '$code'"
	fi
else
	not_ok "--metrics 0.0.0.0:0 --metrics-allow starts"
	diag "$(cat "$RUN_OUT")"
fi
run_stop "--metrics-allow"

# ---- --metrics unix:PATH ----

chmod 711 "$NETNS_TMP"
mkdir -m 755 "$NETNS_TMP/sock"
SOCK=$NETNS_TMP/sock/m.sock
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
unix_scrape() { "$@" curl -s -o /dev/null -w '%{http_code}' --max-time 3 --unix-socket "$SOCK" \
	http://localhost/metrics; }
run_start unix "$IF_RX" --interval 1 --metrics "unix:$SOCK"
if wait_for "$RUN_OUT" "^serving the counters at unix:$SOCK" 5; then
	ok "--metrics unix:PATH says where it serves"
else
	not_ok "--metrics unix:PATH says where it serves"
	diag "$(cat "$RUN_OUT")"
fi
if [ "$(stat -c '%a %U' "$SOCK" 2>&1)" = "600 root" ]; then ok "the socket is mode 600, root's"
else not_ok "the socket is mode 600, root's"; diag "$(stat -c '%a %U %G' "$SOCK" 2>&1)"; fi
code=$(unix_scrape)
if [ "$code" = 200 ]; then ok "root scrapes it: 200"
else not_ok "root scrapes it: 200"; diag "status '$code'"; fi
code=$(unix_scrape as_nobody)
if [ "$code" != 200 ]; then ok "nobody cannot (curl: '$code')"
else not_ok "nobody cannot"; fi
run_stop "--metrics unix:PATH"
if [ ! -e "$SOCK" ]; then ok "the socket is removed on exit"
else not_ok "the socket is removed on exit"; fi
run_start unixg "$IF_RX" --interval 1 --metrics "unix:$SOCK" --metrics-group nogroup
wait_for "$RUN_OUT" "^serving the counters at unix:" 5
if [ "$(stat -c '%a %G' "$SOCK" 2>&1)" = "660 nogroup" ] &&
	[ "$(unix_scrape as_nobody)" = 200 ]; then
	ok "--metrics-group nogroup: mode 660, group nogroup, and its member scrapes it"
else
	not_ok "--metrics-group nogroup: mode 660, group nogroup, and its member scrapes it"
	diag "$(stat -c '%a %U %G' "$SOCK" 2>&1): $(cat "$RUN_OUT")"
fi
run_stop "--metrics unix:PATH --metrics-group"

# ---- the new options' values: refused before anything is attached ----

bad_run() { # NAME PATTERN ARGS...
	local name=$1 pat=$2 st
	shift 2
	OUT=$(rx_run_fg "$IF_RX" "$@" 2>&1)
	st=$?
	if [ "$st" = 2 ] && [ -z "$(xdp_prog_id)" ] && grep -qF -- "$pat" <<<"$OUT"; then
		ok "$name: exit status 2, nothing attached, says '$pat'"
	else
		not_ok "$name: exit status 2, nothing attached, says '$pat'"
		diag "exit status $st, program '$(xdp_prog_id)': $OUT"
	fi
}
bad_run "--metrics-allow without --metrics" "give --metrics" --metrics-allow 127.0.0.1
bad_run "--metrics-allow 198.18.0.0/33" "'198.18.0.0/33'" --metrics 127.0.0.1:0 \
	--metrics-allow 198.18.0.0/33
bad_run "--metrics-allow on a unix socket" "its mode" --metrics "unix:$SOCK" \
	--metrics-allow 127.0.0.1
bad_run "--metrics-group on TCP" "--metrics unix:PATH" --metrics 127.0.0.1:0 \
	--metrics-group nogroup
bad_run "--metrics-group of no group" "no such group" --metrics "unix:$SOCK" \
	--metrics-group "no-group-$$"
bad_run "--metrics unix:relative" "absolute path" --metrics unix:m.sock

tap_done
