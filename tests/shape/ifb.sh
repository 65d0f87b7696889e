#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Shaping what an interface receives, through an ifb device: in the server's
# namespace, a tc ingress qdisc on its veth redirects everything (matchall,
# mirred egress redirect) to an ifb; `sluice shape attach IFB --rate 100/s
# --burst 100` shapes the ifb's egress, which hands the packets back to the
# veth's receive path. The client sends through a socket; the server's
# receiver measures. IPv4, then IPv6 (fresh sources, keys of their own):
#   - a burst of 100 at 10x the rate arrives spaced at the rate (the
#     tolerances of tests/shape/spacing.sh: span of 99 gaps within 5 % of
#     990 ms, median gap within 10 % of 10 ms), the shaper's delayed counter
#     as its algorithm gives on the send times;
#   - a noisy source sends 150 as fast as it can while a quiet one sends 5 at
#     10/s: the quiet one's arrive at once (the key is the client's source
#     address: the program parses the Ethernet header mirred put back), the
#     noisy one's queue of 101 (up to what the leak let in while it sent)
#     arrives, and `sluicectl -i shape:IFB stats` counts exactly what did not
#     arrive as limited and dropped.
# Attach names the ifb: one that does not exist is refused (exit status 1,
# naming it). Detach gives the ifb back its default root qdisc, leaves no
# clsact on it and the operator's ingress qdisc and redirect as they were:
# traffic goes on through the ifb, unshaped (a burst arrives at once). With
# the ifb down, or deleted, the redirect drops everything: nothing arrives.
set -u
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
source tests/shape/lib/shape.sh

shape_need "shape ifb"
shape_need_sluice "shape ifb"
# client = NS_TX (IF_TX), server = NS_RX (IF_RX, redirected to IFB there).
shape_lab shib 53 6 || { not_ok "shape ifb: lab set up"; exit 1; }
fq_or_skip "shape ifb"
IFB="shibf$$"
shape_extra_cleanup() {
	rx_exec "$SLUICE" shape detach "$IFB" >/dev/null 2>&1
	ip -n "$NS_RX" link del "$IFB" 2>/dev/null
}
# Loaded by hand, the module makes no ifb0 and ifb1 in the initial namespace
# (autoloading by `ip link add type ifb` would).
[ -d /sys/module/ifb ] || modprobe ifb numifbs=0 2>/dev/null
if ! ip -n "$NS_RX" link add "$IFB" type ifb 2>/dev/null; then
	skip "this kernel ($(uname -r)) cannot make an ifb device (CONFIG_IFB)" "shape ifb"
	exit 0
fi
rx_exec ip link set "$IFB" up
# The default root qdisc the kernel gave the ifb (pfifo_fast, fq_codel...).
root_kind() { rx_exec tc -j qdisc show dev "$IFB" root | jq -r '.[0].kind // "none"'; }
DEFAULT_QDISC=$(root_kind)
# mirred's packet count: what the redirect sent to the ifb.
redirected() {
	rx_exec tc -s -j filter show dev "$IF_RX" ingress |
		jq '[.. | objects | select(.kind? == "mirred") | .stats.packets] | add // 0'
}
if ! rx_exec tc qdisc add dev "$IF_RX" handle ffff: ingress ||
	! rx_exec tc filter add dev "$IF_RX" parent ffff: matchall \
		action mirred egress redirect dev "$IFB"; then
	not_ok "shape ifb: ingress redirect of $IF_RX to $IFB"
	exit 1
fi
diag "ifb $IFB: default root qdisc $DEFAULT_QDISC; $IF_RX ingress: $(rx_exec tc filter show \
	dev "$IF_RX" ingress | tr '\n\t' '  ')"
SHAPE_PINS="$RX_NETNS_DIR/shape:$IFB" SHAPE_IF=$IFB SHAPE_EXEC=rx_exec
T=10000 # us: 100/s

# Nothing is lost on the way through the ifb before sluice is on it.
recv_start pre -t 1 -n 20 -a || exit 1
send_burst -s "${SRC4[0]}" -d "$ADDR4_RX" -n 20 || exit 1
recv_wait pre || exit 1
r0=$(redirected)
if [ "$(src_field pre "${SRC4[0]}" count)" = 20 ] && [ "$r0" -ge 20 ]; then
	ok "ifb: the redirect carries traffic through the ifb ($r0 redirected)"
else
	not_ok "ifb: the redirect carries traffic through the ifb ($(src_field pre "${SRC4[0]}" count) of 20 arrived, $r0 redirected)"
fi

out=$(rx_exec "$SLUICE" shape attach "shibx$$" --rate 100/s 2>&1)
st=$?
diag "shape attach shibx$$ (no such ifb): exit status $st: $out"
if [ "$st" = 2 ] && grep -q "shibx$$" <<<"$out"; then
	ok "shape attach of an ifb that does not exist: refused (exit status 2), naming it"
else
	not_ok "shape attach of an ifb that does not exist: refused (exit status 2), naming it"
fi

expect_status 0 "shape attach $IFB --rate 100/s --burst 100" \
	rx_exec "$SLUICE" shape attach "$IFB" --rate 100/s --burst 100 || exit 1
diag "$(rx_exec tc qdisc show dev "$IFB" | tr '\n' ';')"

# spaced FAMILY SRC DST: one burst of 100 at 1000/s; the spacing checks.
spaced() {
	local fam=$1 src=$2 dst=$3 json=b$1 name n span med d0 d1 want
	name="IPv$fam through the ifb: a burst of 100 at 10x the rate"
	d0=$(shape_stat delayed)
	recv_start "$json" -t 2 -n 100 -e "$T" -a || { not_ok "$name: receiver"; return; }
	send_burst -s "$src" -d "$dst" -n 100 -r 1000 -a || { not_ok "$name: sender"; return; }
	recv_wait "$json" || { not_ok "$name: receiver"; return; }
	recv_show "$json"
	n=$(src_field "$json" "$src" count)
	span=$(src_field "$json" "$src" span_us)
	med=$(src_field "$json" "$src" gap_median_us)
	d1=$(shape_stat delayed)
	want=$(delayed_range "$src" "$T" 100 0)
	diag "IPv$fam: $n arrived, span $span us (want 990000), median gap $med us," \
		"p99 |error| $(src_field "$json" "$src" err_p99_us) us; delayed $((d1 - d0))" \
		"(on the send times: $want); the key: $(rx_exec "$SLUICECTL" -i "shape:$IFB" show "$src" |
			tr '\n' ' ')"
	if [ "$n" = 100 ]; then ok "$name: all 100 arrive"; else not_ok "$name: all 100 arrive"; fi
	if within 5 "$span" 990000; then ok "$name: span 99 x 10 ms (5 %)"; else
		not_ok "$name: span 99 x 10 ms (5 %)"; fi
	if within 10 "$med" "$T"; then ok "$name: median gap 10 ms (10 %)"; else
		not_ok "$name: median gap 10 ms (10 %)"; fi
	if in_range $((d1 - d0)) "$want"; then ok "$name: delayed as the send times say"; else
		not_ok "$name: delayed as the send times say ($((d1 - d0)), want $want)"; fi
}

# beside FAMILY NOISY QUIET DST: 150 as fast as possible from NOISY, 5 at
# 10/s from QUIET, at the same time.
beside() {
	local fam=$1 noisy=$2 quiet=$3 dst=$4 json=n$1 name pid sent secs n slack l0 dr0 l dr q qm
	name="IPv$fam through the ifb"
	read -r l0 dr0 < <(ctl_stat limited dropped)
	recv_start "$json" -t 2 -a || { not_ok "$name: receiver"; return; }
	tx_exec "$SLUICE_PROBE" send -j -p "$PORT" -s "$noisy" -d "$dst" -n 150 \
		>"$NETNS_TMP/noisy.json" 2>"$NETNS_TMP/noisy.err" &
	pid=$!
	NETNS_PIDS+=("$pid")
	send_burst -s "$quiet" -d "$dst" -n 5 -r 10 || { not_ok "$name: quiet sender"; return; }
	wait "$pid" || { not_ok "$name: noisy sender: $(cat "$NETNS_TMP/noisy.err")"; return; }
	recv_wait "$json" || { not_ok "$name: receiver"; return; }
	recv_show "$json"
	read -r sent slack secs < <(jq -r --argjson t "$T" \
		'"\(.sent) \(.seconds * 1e6 / $t | floor + 1) \(.seconds)"' "$NETNS_TMP/noisy.json")
	n=$(src_field "$json" "$noisy" count)
	read -r l dr < <(ctl_stat limited dropped)
	l=$((l - l0)) dr=$((dr - dr0))
	# The quiet source's longest and median latency.
	read -r q qm < <(jq -r --arg s "$quiet" '[.sources[] | select(.src == $s) | .packets[][2]]
		| sort | if length > 0 then "\(.[-1]) \(.[length / 2 | floor])" else "none none" end' \
		"$NETNS_TMP/$json.json")
	diag "IPv$fam: noisy sent $sent in $secs s, $n arrived" \
		"(slack $slack); limited $l, dropped $dr; quiet's median latency $qm us, longest $q us"
	if [ "$(src_field "$json" "$quiet" count)" = 5 ] && fcmp "$qm < 5000 && $q < 100000"; then
		ok "$name: a quiet source's 5 packets arrive at once beside a noisy one"
	else
		not_ok "$name: a quiet source's 5 packets arrive at once beside a noisy one"
	fi
	if [ "$n" -ge 101 ] && [ "$n" -le $((101 + slack)) ]; then
		ok "$name: the noisy source's queue of 101 arrives (up to $slack more leaked in)"
	else
		not_ok "$name: the noisy source's queue of 101 arrives (up to $slack more leaked in), not $n"
	fi
	if [ "$l" = $((sent - n)) ] && [ "$dr" = $((sent - n)) ]; then
		ok "$name: limited and dropped count what did not arrive"
	else
		not_ok "$name: limited and dropped count what did not arrive"
	fi
}

# A case whose checks fail is measured once more from sources of its own
# (shape_twice): a stall of the emulated guest delays every arrival after it.
# FAMILY:K: spaced from source K, beside from K (noisy) and K+1 (quiet).
src_of() { if [ "$1" = 4 ]; then echo "${SRC4[$2]}"; else echo "${SRC6[$2]}"; fi; }
dst_of() { if [ "$1" = 4 ]; then echo "$ADDR4_RX"; else echo "$ADDR6_RX"; fi; }
spaced_at() { spaced "${1%:*}" "$(src_of "${1%:*}" "${1#*:}")" "$(dst_of "${1%:*}")"; }
beside_at() {
	beside "${1%:*}" "$(src_of "${1%:*}" "${1#*:}")" "$(src_of "${1%:*}" $((${1#*:} + 1)))" \
		"$(dst_of "${1%:*}")"
}
shape_twice "IPv4 through the ifb: a burst of 100" spaced_at 4:0 4:3
shape_twice "IPv4 through the ifb: beside a noisy source" beside_at 4:1 4:4
shape_twice "IPv6 through the ifb: a burst of 100" spaced_at 6:0 6:3
shape_twice "IPv6 through the ifb: beside a noisy source" beside_at 6:1 6:4
read -r c_sh c_de c_re c_ho < <(shape_stat shaped delayed restamped horizon_dropped)
diag "counters: shaped $c_sh, delayed $c_de, restamped $c_re, horizon_dropped $c_ho;" \
	"$(rx_exec tc -s qdisc show dev "$IFB" | tr '\n' ' ')"

expect_status 0 "shape detach $IFB" rx_exec "$SLUICE" shape detach "$IFB"
kind=$(root_kind)
if [ "$kind" = "$DEFAULT_QDISC" ] && ! rx_exec tc qdisc show dev "$IFB" | grep -q clsact; then
	ok "detach: the ifb has its default root qdisc ($DEFAULT_QDISC) again, no clsact"
else
	not_ok "detach: the ifb has its default root qdisc ($DEFAULT_QDISC) again, no clsact: $(
		rx_exec tc qdisc show dev "$IFB" | tr '\n' ';')"
fi
if rx_exec tc qdisc show dev "$IF_RX" ingress | grep -q 'ingress ffff:' &&
	rx_exec tc filter show dev "$IF_RX" ingress | grep -q "Egress Redirect to device $IFB"; then
	ok "detach: the ingress qdisc and the redirect of $IF_RX are left as they were"
else
	not_ok "detach: the ingress qdisc and the redirect of $IF_RX are left as they were"
fi
r1=$(redirected)
recv_start post -t 1 -n 20 -a || exit 1
send_burst -s "${SRC4[0]}" -d "$ADDR4_RX" -n 20 || exit 1
recv_wait post || exit 1
r2=$(redirected)
n=$(src_field post "${SRC4[0]}" count)
last=$(jq -r --arg s "${SRC4[0]}" '[.sources[] | select(.src == $s) | .packets[][1]] | max // "none"' \
	"$NETNS_TMP/post.json")
diag "after detach: $n of 20 arrived, the last $last us after the first; $((r2 - r1)) redirected"
# Unshaped, the 20 arrive as the sender sends them, not 19 x T (190 ms) apart;
# the bar is a quarter of that, as a guest under emulation may take several
# ms to send 20 (6.8 ms seen on a loaded machine).
if [ "$n" = 20 ] && fcmp "$last < 19 * $T / 4" && [ $((r2 - r1)) -ge 20 ]; then
	ok "detach: traffic goes on through the ifb, unshaped"
else
	not_ok "detach: traffic goes on through the ifb, unshaped"
fi

# mirred's losses: what the redirect could not hand to the ifb (a target
# down or gone counts as an overlimit, a failed transmit as a drop).
mirred_drops() {
	rx_exec tc -s -j filter show dev "$IF_RX" ingress |
		jq '[.. | objects | select(.kind? == "mirred") | .stats
			| (.drops // 0) + (.overlimits // 0)] | add // 0'
}
# lost NAME WHAT: 10 sent, none arrives (the receiver then reports that no
# probe packet came, exit status 1), mirred counting them (drops and overlimits).
lost() {
	local d0 d1 st
	d0=$(mirred_drops)
	recv_start "$1" -t 1 -n 10 || { not_ok "$2: receiver"; return; }
	send_burst -s "${SRC4[0]}" -d "$ADDR4_RX" -n 10 || { not_ok "$2: sender"; return; }
	wait "${RECV_PID[$1]}"
	st=$?
	d1=$(mirred_drops)
	diag "$2: receiver's exit status $st: $(cat "$NETNS_TMP/$1.err")" \
		"$(jq -c 'del(.sources[]?.packets)' "$NETNS_TMP/$1.json" 2>/dev/null); mirred dropped $((d1 - d0))"
	if [ "$st" = 1 ] && grep -q 'no probe packet arrived' "$NETNS_TMP/$1.err" &&
		[ $((d1 - d0)) -ge 10 ]; then
		ok "$2: the redirect drops everything (none of 10 arrives)"
	else
		not_ok "$2: the redirect drops everything (none of 10 arrives)"
	fi
}
rx_exec ip link set "$IFB" down
out=$(rx_exec "$SLUICE" shape attach "$IFB" --rate 100/s 2>&1)
st=$?
diag "shape attach of the ifb down: exit status $st: $out"
if [ "$st" = 0 ] && grep -q "$IFB is down: nothing it sends leaves" <<<"$out"; then
	ok "shape attach of an ifb that is down attaches and warns that it is down"
else
	not_ok "shape attach of an ifb that is down attaches and warns that it is down"
fi
lost down "the ifb down"
[ "$st" = 0 ] && rx_exec "$SLUICE" shape detach "$IFB" >/dev/null
rx_exec ip link del "$IFB"
lost gone "the ifb deleted"
tap_done
