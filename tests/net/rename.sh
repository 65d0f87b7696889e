#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A renamed interface keeps its limiter (issue 20, C14). `ip link set A name
# B` keeps the ifindex, and a state belongs to its ifindex: its pins move to
# B's directory, status names B, every command by B works (sluicectl -i B
# included), a command by A says "renamed to B" and changes nothing, detach
# B removes it all, a `sluice run` follows the rename (its reports, its
# metrics' labels, its detach on exit), and a new interface that takes the
# old name starts with a state of its own. Before, status called the state
# "gone" and its advice ('sluice detach A') removed the pins of a program
# that went on limiting with nothing to manage it.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "rename" curl
netns_need_sluice "rename"

N=27
netns_setup rr $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
# The receiver's interface under the names it takes here (at most 15
# characters), and the interfaces a test made besides the lab's.
A=$IF_RX B=rrB$$ C=rrC$$ D=rrD$$
SRC=198.18.$N.7
netns_extra_cleanup() {
	local n
	for n in "$A" "$B" "$C" "$D" rrE$$ rrF$$ rrX$$ rrY$$; do
		rx_sluice detach "$n" >/dev/null 2>&1
	done
	for n in rrE$$ rrF$$ rrX$$ rrY$$; do
		ip -n "$NS_RX" link del "$n" 2>/dev/null
	done
}
ROOT=$RX_NETNS_DIR

# rename FROM TO: the receiver's interface FROM is called TO from now on
# (IF_RX follows the lab's: xdp_prog_id and the cleanup use it).
rename() {
	ip -n "$NS_RX" link set dev "$1" down &&
		ip -n "$NS_RX" link set dev "$1" name "$2" &&
		ip -n "$NS_RX" link set dev "$2" up || return 1
	[ "$1" = "$IF_RX" ] && IF_RX=$2
	return 0
}
# limits NAME: 1000 packets in 0.5 s from SRC are held near the policy's
# burst 100 + 100/s x 0.5 s. (The counter's netdev chain names the device:
# made again for its name now.)
limits() {
	local got
	rx_exec nft delete table netdev sluice_test 2>/dev/null
	rx_counter_add src ip saddr "$SRC" || { not_ok "$1 (count with nft)"; return; }
	tx_gen -s "$SRC" -d "$ADDR4_RX" -n 1000 -r 2000 >/dev/null 2>&1
	sleep 0.2
	got=$(rx_counter src)
	diag "$got of 1000 passed (expected about 150)"
	if [ -n "$got" ] && [ "$got" -ge 100 ] && [ "$got" -le 250 ]; then ok "$1"
	else not_ok "$1"; fi
}
# says NAME PATTERN: the last command's output ($OUT) says PATTERN.
says() {
	if grep -qF -- "$2" <<<"$OUT"; then ok "$1"; else not_ok "$1"; diag "$OUT"; fi
}

expect_status 0 "attach $A --rate 100/s --burst 100" \
	rx_sluice attach "$A" --rate 100/s --burst 100 || exit 1
expect_status 0 "rule add 198.18.$N.128/25 --rate 10/s" \
	rx_ctl -i "$A" rule add "198.18.$N.128/25" --rate 10/s
prog=$(xdp_prog_id)

# ---- renamed A -> B: status, commands by B, by A ----

rename "$A" "$B" || { not_ok "ip link set $A name $B"; exit 1; }
expect_status 0 "status after the rename" rx_sluice status
says "status names $B, attached, program $prog" "$B (ifindex"
if grep -q "^$B (ifindex [0-9]*): attached in native mode, program $prog" <<<"$OUT" &&
	! grep -q "gone" <<<"$OUT"; then
	ok "status: $B is attached (not gone)"
else
	not_ok "status: $B is attached (not gone)"
	diag "$OUT"
fi
if [ -e "$ROOT/$B/sluice_config" ] && [ ! -e "$ROOT/$A" ]; then
	ok "the pins moved from $ROOT/$A to $ROOT/$B"
else
	not_ok "the pins moved from $ROOT/$A to $ROOT/$B"
	diag "$(ls "$ROOT" 2>&1)"
fi
expect_status 0 "status $B" rx_sluice status "$B"
expect_status 2 "status $A: exit status 2" rx_sluice status "$A"
says "status $A says it was renamed to $B" "renamed to $B"
expect_status 0 "sluicectl -i $B rule list" rx_ctl -i "$B" rule list
says "sluicectl -i $B lists the rule" "198.18.$N.128/25"
expect_status 0 "sluicectl -i $B set --rate 100/s --burst 100 (a write)" \
	rx_ctl -i "$B" set --rate 100/s --burst 100
expect_status 2 "sluicectl -i $A stats: exit status 2" rx_ctl -i "$A" stats
says "sluicectl -i $A says it was renamed to $B" "renamed to $B"
expect_status 2 "sluice detach $A: exit status 2" rx_sluice detach "$A"
says "detach $A says it was renamed to $B" "renamed to $B"
if [ "$(xdp_prog_id)" = "$prog" ] && [ -e "$ROOT/$B/sluice_config" ]; then
	ok "detach $A removed nothing: program $prog and $B's pins are there"
else
	not_ok "detach $A removed nothing: program $prog and $B's pins are there"
fi
limits "$B still limits (a flood held to about burst + rate x t)"

# ---- renamed under a run: it follows ----

run_start follow "$B" --interval 100ms --metrics 127.0.0.1:0
run_reporting 1 || { not_ok "sluice run $B reports"; diag "$(cat "$RUN_OUT")"; }
URL=$(sed -n 's/^serving the counters at //p' "$RUN_OUT")
rename "$B" "$C" || not_ok "ip link set $B name $C"
n0=$(reports)
run_reporting $((n0 + 5))
if kill -0 "$RUN_PID" 2>/dev/null && grep -q "$B was renamed to $C" "$RUN_OUT"; then
	ok "the run on $B says it was renamed to $C, and goes on reporting"
else
	not_ok "the run on $B says it was renamed to $C, and goes on reporting"
	diag "$(grep -v ' pps;' "$RUN_OUT")"
fi
m=$(rx_exec curl -sf --max-time 5 "$URL")
if grep -q "interface=\"$C\"" <<<"$m" && ! grep -q "interface=\"$B\"" <<<"$m"; then
	ok "its metrics are labelled interface=\"$C\""
else
	not_ok "its metrics are labelled interface=\"$C\""
	diag "$(grep -m2 interface= <<<"$m")"
fi
kill -HUP "$RUN_PID"
sleep 0.3
expect_status 0 "status $C" rx_sluice status "$C"
kill -INT "$RUN_PID"
if run_exit 10 && [ "$RUN_ST" = 0 ] && [ "$(xdp_prog_id)" = "$prog" ] &&
	[ -e "$ROOT/$C/sluice_config" ]; then
	ok "on SIGINT the run exits 0 and leaves $C attached (it did not attach it)"
else
	not_ok "on SIGINT the run exits 0 and leaves $C attached (it did not attach it)"
	diag "exit $RUN_ST: $(grep -v ' pps;' "$RUN_OUT")"
fi

# ---- renamed with no command in between: attach upgrades what moved ----

rename "$C" "$D" || not_ok "ip link set $C name $D"
expect_status 0 "attach $D (an upgrade)" rx_sluice attach "$D"
says "attach $D upgrades the program that runs" "upgraded on $D"
if ! grep -q "pinned state is gone" <<<"$OUT" && grep -q "1 rule" <<<"$OUT"; then
	ok "attach $D kept the state that moved (1 rule)"
else
	not_ok "attach $D kept the state that moved (1 rule)"
	diag "$OUT"
fi
limits "$D still limits"
expect_status 0 "detach $D" rx_sluice detach "$D"
if [ -z "$(xdp_prog_id)" ] && [ -z "$(ls "$ROOT" 2>/dev/null)" ]; then
	ok "detach $D left no program and nothing in $ROOT"
else
	not_ok "detach $D left no program and nothing in $ROOT"
	diag "program '$(xdp_prog_id)'; $(ls -la "$ROOT" 2>&1)"
fi

# ---- a run that attached, renamed under it, detaches what it attached ----

E=rrE$$ F=rrF$$
ip -n "$NS_RX" link add "$E" type veth peer name "${E}p" && ip -n "$NS_RX" link set "$E" up ||
	not_ok "make a veth interface $E"
run_start owned "$E" --rate 50/s --interval 100ms --mode skb
run_reporting 1 || { not_ok "sluice run $E attaches and reports"; diag "$(cat "$RUN_OUT")"; }
rename "$E" "$F" || not_ok "ip link set $E name $F"
n0=$(reports)
run_reporting $((n0 + 3))
kill -INT "$RUN_PID"
run_exit 10
if [ "$RUN_ST" = 0 ] && grep -q "sluice detached from $F" "$RUN_OUT" && [ ! -e "$ROOT/$F" ] &&
	[ ! -e "$ROOT/$E" ]; then
	ok "the run that attached $E detaches it as $F on exit, pins and all"
else
	not_ok "the run that attached $E detaches it as $F on exit, pins and all"
	diag "exit $RUN_ST: $(grep -v ' pps;' "$RUN_OUT"); $(ls "$ROOT" 2>&1)"
fi
ip -n "$NS_RX" link del "$F" 2>/dev/null

# ---- a new interface takes the old name ----

X=rrX$$ Y=rrY$$
ip -n "$NS_RX" link add "$X" type veth peer name "${X}p" && ip -n "$NS_RX" link set "$X" up ||
	not_ok "make a veth interface $X"
expect_status 0 "attach $X --rate 20/s --mode skb" rx_sluice attach "$X" --rate 20/s --mode skb
rename "$X" "$Y" || not_ok "ip link set $X name $Y"
ip -n "$NS_RX" link add "$X" type veth peer name "${X}q" && ip -n "$NS_RX" link set "$X" up ||
	not_ok "make a new veth interface $X"
expect_status 0 "attach the new $X --rate 30/s --mode skb" \
	rx_sluice attach "$X" --rate 30/s --mode skb
if grep -q "^sluice attached to $X" <<<"$OUT" && ! grep -qi "resume\|upgrade" <<<"$OUT"; then
	ok "the new $X gets a state of its own (a fresh attach)"
else
	not_ok "the new $X gets a state of its own (a fresh attach)"
	diag "$OUT"
fi
y=$(rx_sluice status "$Y" 2>&1) x=$(rx_sluice status "$X" 2>&1)
if grep -q "attached in skb mode" <<<"$y" && grep -q "20/s" <<<"$y" &&
	grep -q "attached in skb mode" <<<"$x" && grep -q "30/s" <<<"$x"; then
	ok "status: $Y keeps its limiter (20/s), the new $X has its own (30/s)"
else
	not_ok "status: $Y keeps its limiter (20/s), the new $X has its own (30/s)"
	diag "$y"
	diag "$x"
fi
expect_status 0 "detach $X" rx_sluice detach "$X"
expect_status 0 "detach $Y" rx_sluice detach "$Y"
if [ -z "$(ls "$ROOT" 2>/dev/null)" ]; then ok "nothing is left in $ROOT"
else not_ok "nothing is left in $ROOT"; diag "$(ls -la "$ROOT" 2>&1)"; fi
tap_done
