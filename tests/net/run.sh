#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice run IFACE` leaves the interface as it found it: over an existing
# attachment it only reports (policy options are then a usage error) and
# leaves it attached; on a fresh interface it attaches and, on SIGINT,
# detaches. One run per interface. It stops (exit 1, saying why) when the
# interface or the program goes away. Its first report covers only its own
# interval, and reports name keys as top does. A run killed with SIGKILL
# leaves the limiter attached; the next run or attach says it adopts it.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "run" jq
netns_need_sluice "run"

netns_setup rn 25 || { not_ok "build the namespaces and the veth pair"; exit 1; }
# Where a sluice of before the per-namespace pins put them: the cleanup
# removes them if this test's sluice made them (pins_watch).
pins_watch "/sys/fs/bpf/sluice/$IF_RX" "$NS_RX"

INTERVAL=200ms
# goes_on_reporting NAME: the run makes two more reports (it answered a
# probe of who runs here without blocking its loop).
goes_on_reporting() {
	local n0
	n0=$(reports)
	if run_reporting $((n0 + 2)); then
		ok "$1"
	else
		not_ok "$1"
		diag "$(($(reports) - n0)) reports in 5 s (interval $INTERVAL); the run waits in" \
			"$(cat "/proc/$RUN_PID/wchan" 2>&1)"
	fi
}

# still_attached PROG NAME: program PROG (the id before) is still the one
# attached, and the pins are there.
still_attached() {
	if [ -n "$1" ] && [ "$(xdp_prog_id)" = "$1" ] && pinned; then
		ok "$2"
	else
		not_ok "$2"
		diag "program '$1' before, '$(xdp_prog_id)' after; $(cat "$RUN_OUT")"
	fi
}

# run_sigint NAME: SIGINT the run; ok when it exits 0.
run_sigint() {
	kill -INT "$RUN_PID"
	if run_exit 10 && [ "$RUN_ST" = 0 ]; then
		ok "$1: on SIGINT run exits 0"
	else
		not_ok "$1: on SIGINT run exits 0"
		diag "exit status $RUN_ST: $(cat "$RUN_OUT")"
	fi
}

pinned() { [ -e "$RX_PINS/sluice_config" ]; }
rate_of() { jq -r '.[] | select(.match == "default") | .packets.rate' <<<"$1" 2>/dev/null; }
list_now() { rx_ctl -i "$IF_RX" -j rule list 2>/dev/null; }

# ---- over an existing attachment: report only, leave it attached ----

expect_status 0 "attach --rate 100/s" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
expect_status 0 "rule add 198.18.25.0/24 --rate 10/s --prefix 24" \
	rx_ctl -i "$IF_RX" rule add 198.18.25.0/24 --rate 10/s --prefix 24
prog=$(xdp_prog_id)

# Drops before the run: none of them is the run's to report.
gen_bg before -s 198.18.25.7 -d "$ADDR4_RX" -r 2000 -t 1s
gen_wait before || not_ok "flood before the run with sluice-gen"
sleep 0.3

run_start existing "$IF_RX" --interval "$INTERVAL"
if run_reporting 1; then
	ok "run over an existing attachment reports"
else
	not_ok "run over an existing attachment reports"
	diag "$(cat "$RUN_OUT")"
fi
first=$(grep -m1 ' pps; top drops:' "$RUN_OUT")
if grep -q "dropped 0 pps; top drops: none" <<<"$first"; then
	ok "the first report covers only its own interval: dropped 0 pps, top drops: none"
else
	not_ok "the first report covers only its own interval: dropped 0 pps, top drops: none"
	diag "after $before_packets packets from 198.18.25.7 before the run: $first"
fi

# Reports name the key a drop was charged to, masked as top names it.
n0=$(reports)
gen_bg v6 -s 2001:2:0:25::5 -d "$ADDR6_RX" -r 2000 -t 1s
gen_bg v4 -s 198.18.25.9 -d "$ADDR4_RX" -r 2000 -t 1s
gen_wait v6 || not_ok "flood from 2001:2:0:25::5 with sluice-gen"
gen_wait v4 || not_ok "flood from 198.18.25.9 with sluice-gen"
run_reporting $((n0 + 2))
during=$(sed -n "$((n0 + 1)),\$p" "$RUN_OUT")
if grep -q "top drops:.* 2001:2:0:25::/64 ~" <<<"$during" &&
	! grep -q "2001:2:0:25::5" <<<"$during"; then
	ok "reports name the IPv6 source's key 2001:2:0:25::/64, not its address"
else
	not_ok "reports name the IPv6 source's key 2001:2:0:25::/64, not its address"
	diag "$during"
fi
if grep -q "top drops:.* 198.18.25.0/24 ~" <<<"$during" && ! grep -q "198.18.25.9" <<<"$during"
then
	ok "reports name the --prefix 24 rule's key 198.18.25.0/24, not the address"
else
	not_ok "reports name the --prefix 24 rule's key 198.18.25.0/24, not the address"
	diag "$during"
fi

expect_status 1 "a second run on $IF_RX is refused (exit 1)" \
	rx_run_fg "$IF_RX" --interval "$INTERVAL"
if grep -q "pid $RUN_PID\b" <<<"$OUT"; then
	ok "the refusal names the first run's pid ($RUN_PID)"
else
	not_ok "the refusal names the first run's pid ($RUN_PID)"
	diag "$OUT"
fi

# The refused run asked the first who it is: the first must go on reporting.
goes_on_reporting "the first run goes on reporting after the refused second run"
st=$(rx_sluice status "$IF_RX" 2>&1)
if grep -q "reported on by sluice run pid $RUN_PID" <<<"$st"; then
	ok "status says the run (pid $RUN_PID) reports on $IF_RX"
else
	not_ok "status says the run (pid $RUN_PID) reports on $IF_RX"
	diag "$st"
fi

run_sigint "over an existing attachment"
list=$(list_now)
if [ -n "$prog" ] && [ "$(xdp_prog_id)" = "$prog" ] && pinned &&
	grep -q '"198.18.25.0/24"' <<<"$list" && [ "$(rate_of "$list")" = 100/s ]; then
	ok "after the run the interface is still attached, with its rule and rate"
else
	not_ok "after the run the interface is still attached, with its rule and rate"
	diag "program '$prog' before, '$(xdp_prog_id)' after; rules: $list"
fi

expect_usage "run with --rate over an existing attachment" "already attached" \
	rx_run_fg "$IF_RX" --rate 5/s --interval "$INTERVAL"
if [ "$(rate_of "$(list_now)")" = 100/s ] && [ "$(xdp_prog_id)" = "$prog" ]; then
	ok "the refused run changed nothing (rate 100/s, same program)"
else
	not_ok "the refused run changed nothing (rate 100/s, same program)"
fi

# ---- the one-run claim: only root can take it ----

# A local user who binds the abstract socket that was the claim, and tries
# the lock that is now, must not stop a run from starting.
IFINDEX=$(ip -n "$NS_RX" -j link show dev "$IF_RX" | sed 's/.*"ifindex":\([0-9]*\).*/\1/')
CLAIM=$RX_NETNS_DIR/run:$IFINDEX
# (Not through a function: $! must be the squatter's own pid, nsenter and
# setpriv exec it.)
NOBODY=(nsenter --net="/var/run/netns/$NS_RX" setpriv --reuid=nobody --regid=nogroup
	--clear-groups)
"${NOBODY[@]}" perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
	bind($s, pack_sockaddr_un("\0sluice/run/'"$IFINDEX"'")) or die "bind: $!";
	listen($s, 4) or die "listen: $!"; print "bound\n"; $| = 1; sleep 60' \
	>"$NETNS_TMP/squat.out" 2>&1 &
SQUAT=$!
NETNS_PIDS+=("$SQUAT")
"${NOBODY[@]}" flock -n "$CLAIM" sleep 60 >"$NETNS_TMP/squat2.out" 2>&1 &
SQUAT2=$!
NETNS_PIDS+=("$SQUAT2")
for i in $(seq 40); do grep -q bound "$NETNS_TMP/squat.out" && break; sleep 0.05; done
sleep 0.3
if grep -q bound "$NETNS_TMP/squat.out"; then
	ok "a squatter as nobody holds the abstract socket sluice/run/$IFINDEX"
else
	not_ok "a squatter as nobody holds the abstract socket sluice/run/$IFINDEX"
	diag "$(cat "$NETNS_TMP/squat.out")"
fi
if ! kill -0 "$SQUAT2" 2>/dev/null; then
	ok "a squatter as nobody cannot take the claim $CLAIM"
else
	not_ok "a squatter as nobody cannot take the claim $CLAIM"
fi
run_start squatted "$IF_RX" --interval "$INTERVAL"
if run_reporting 1; then
	ok "sluice run starts and reports beside nobody's squatters"
else
	not_ok "sluice run starts and reports beside nobody's squatters"
	diag "$(cat "$RUN_OUT")"
fi
if [ "$(stat -c '%U %a' "$CLAIM" 2>&1)" = "root 700" ]; then
	ok "the run's claim is a directory of root's, mode 700"
else
	not_ok "the run's claim is a directory of root's, mode 700"
	diag "$(stat -c '%U %a %F' "$CLAIM" 2>&1)"
fi
FIRST=$RUN_PID
expect_status 1 "beside it a second run is still refused (exit 1)" \
	rx_run_fg "$IF_RX" --interval "$INTERVAL"
if grep -q "already reporting on $IF_RX (pid $FIRST)" <<<"$OUT"; then
	ok "the refusal names the running run's pid ($FIRST)"
else
	not_ok "the refusal names the running run's pid ($FIRST)"
	diag "$OUT"
fi
run_sigint "beside the squatters"
if [ ! -e "$CLAIM" ]; then ok "the run gave its claim up on exit"
else not_ok "the run gave its claim up on exit"; fi
kill "$SQUAT" 2>/dev/null
wait "$SQUAT" "$SQUAT2" 2>/dev/null

# ---- the program goes away under the run ----

run_start outside "$IF_RX" --interval "$INTERVAL"
run_reporting 1
expect_status 0 "sluice detach from outside the run" rx_sluice detach "$IF_RX"
if run_exit 5 && [ "$RUN_ST" = 1 ]; then
	ok "when the program is detached from outside, run exits 1 within a few intervals"
else
	not_ok "when the program is detached from outside, run exits 1 within a few intervals"
	diag "exit status $RUN_ST"
fi
if grep -qiE "no longer attached|was removed|detach" <<<"$(sed -n '/top drops:/!p' "$RUN_OUT")"
then
	ok "run says that the limiter went away"
else
	not_ok "run says that the limiter went away"
	diag "$(cat "$RUN_OUT")"
fi

# ---- on a fresh interface: attach, and detach on SIGINT ----

run_start fresh "$IF_RX" --rate 50/s --interval "$INTERVAL"
run_reporting 1
if [ -n "$(xdp_prog_id)" ] && pinned; then
	ok "run on a fresh interface attaches"
else
	not_ok "run on a fresh interface attaches"
	diag "$(cat "$RUN_OUT")"
fi
run_sigint "on a fresh interface"
if [ -z "$(xdp_prog_id)" ] && [ ! -e "$RX_PINS" ]; then
	ok "the run that attached detached on exit: no program, no pins"
else
	not_ok "the run that attached detached on exit: no program, no pins"
	diag "program '$(xdp_prog_id)'; $(ls "$RX_PINS" 2>&1)"
fi

# ---- a run that attached, killed with SIGKILL ----

killed_run() {
	run_start "killed$1" "$IF_RX" --rate 50/s --interval "$INTERVAL"
	run_reporting 1
	KILLED=$RUN_PID
	kill -KILL "$RUN_PID"
	run_exit 5
	if [ -n "$(xdp_prog_id)" ] && pinned; then
		ok "round $1: the run killed with SIGKILL leaves sluice attached"
	else
		not_ok "round $1: the run killed with SIGKILL leaves sluice attached"
		diag "$(cat "$RUN_OUT")"
	fi
}
killed_run 1
run_start adopt "$IF_RX" --interval "$INTERVAL"
run_reporting 1
if grep -qi "adopt" "$RUN_OUT" && grep -q "$KILLED" "$RUN_OUT"; then
	ok "round 1: the next run says it adopted the killed run's limiter (pid $KILLED)"
else
	not_ok "round 1: the next run says it adopted the killed run's limiter (pid $KILLED)"
	diag "$(cat "$RUN_OUT")"
fi
run_sigint "round 1, the adopting run"
if [ -z "$(xdp_prog_id)" ] && [ ! -e "$RX_PINS" ]; then
	ok "round 1: the adopting run detached on exit"
else
	not_ok "round 1: the adopting run detached on exit"
	diag "program '$(xdp_prog_id)'; $(ls "$RX_PINS" 2>&1)"
fi

killed_run 2
if [ -d "$CLAIM" ]; then ok "round 2: the killed run's claim is left, unheld"
else not_ok "round 2: the killed run's claim is left, unheld"; fi
expect_status 0 "round 2: sluice attach after the killed run" rx_sluice attach "$IF_RX"
if grep -qi "adopt" <<<"$OUT" && grep -q "$KILLED" <<<"$OUT"; then
	ok "round 2: attach says it adopted the killed run's limiter (pid $KILLED)"
else
	not_ok "round 2: attach says it adopted the killed run's limiter (pid $KILLED)"
fi
prog=$(xdp_prog_id)
run_start after "$IF_RX" --interval "$INTERVAL"
run_reporting 1
run_sigint "round 2, a run after the adopting attach"
still_attached "$prog" "round 2: the adopted limiter stays attached (a later run leaves it)"

# ---- an attach over the limiter of a running run: the run hands it over ----

expect_status 0 "detach" rx_sluice detach "$IF_RX"
run_start handover "$IF_RX" --rate 50/s --interval "$INTERVAL"
run_reporting 1
expect_status 0 "sluice attach while a run that attached reports" rx_sluice attach "$IF_RX"
if grep -q "sluice run (pid $RUN_PID)" <<<"$OUT" && grep -q "leaves it attached" <<<"$OUT"; then
	ok "attach says the run (pid $RUN_PID) now leaves the limiter attached"
else
	not_ok "attach says the run (pid $RUN_PID) now leaves the limiter attached"
	diag "$OUT"
fi
# attach asked the run who it is: the run must go on reporting.
goes_on_reporting "the run goes on reporting after the attach"
prog=$(xdp_prog_id)
run_sigint "the run whose limiter attach took over"
still_attached "$prog" "after that run's exit the limiter stays attached"

# ---- a killed run's claim goes with the detach ----

expect_status 0 "detach" rx_sluice detach "$IF_RX"
killed_run 3
expect_status 0 "round 3: detach after the killed run" rx_sluice detach "$IF_RX"
if [ ! -e "$CLAIM" ]; then ok "round 3: the detach removed the killed run's claim"
else not_ok "round 3: the detach removed the killed run's claim"; fi

# ---- the interface goes away under the run ----

run_start gone "$IF_RX" --rate 50/s --interval "$INTERVAL"
run_reporting 1
ip -n "$NS_RX" link del "$IF_RX"
if run_exit 5 && [ "$RUN_ST" = 1 ]; then
	ok "when the interface is deleted, run exits 1 within a few intervals"
else
	not_ok "when the interface is deleted, run exits 1 within a few intervals"
	diag "exit status $RUN_ST"
fi
if grep -qi "gone" <<<"$(sed -n '/top drops:/!p' "$RUN_OUT")"; then
	ok "run says that the interface is gone"
else
	not_ok "run says that the interface is gone"
	diag "$(cat "$RUN_OUT")"
fi
tap_done
