#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Pins belong to a network namespace: two namespaces whose interfaces have
# the same name each run their own limiter (own rates, rules and counters,
# own pin directory); a command sees only its own namespace's limiters, and
# one given the name of another namespace's limiter is refused, saying where
# it lives and how to get there, and changes nothing.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "ownership" jq
netns_need_sluice "ownership"

netns_setup ow 20 || { not_ok "build the namespaces and the veth pair"; exit 1; }

# A second lab by hand: its receiver's interface has the same name, IF_RX.
NS_TX2="ow-tx2-$$"
NS_RX2="ow-rx2-$$"
IF_TX2="owu$$"
IF_DUMMY="owd$$"
RX2_NETNS_DIR=
netns_extra_cleanup() {
	if ip netns list | grep -qw "$NS_RX2"; then
		nsenter --net="/var/run/netns/$NS_RX2" "$SLUICE" detach "$IF_RX" >/dev/null 2>&1
	fi
	if ip netns list | grep -qw "$NS_RX"; then
		rx_sluice detach "$IF_DUMMY" >/dev/null 2>&1
	fi
	# The lab's cleanup removes what is left of the pins (pins_watch),
	# then deletes NS_TX2 and NS_RX2 (NETNS_DEL).
}
# Where a sluice of before the per-namespace pins put them.
pins_watch "/sys/fs/bpf/sluice/$IF_RX" "$NS_RX"
pins_watch "/sys/fs/bpf/sluice/$IF_DUMMY" "$NS_RX"
lab2_setup() {
	ip netns add "$NS_TX2" && NETNS_DEL+=("$NS_TX2") &&
		ip netns add "$NS_RX2" && NETNS_DEL+=("$NS_RX2") || return 1
	RX2_NETNS_DIR="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS_RX2")"
	pins_watch "$RX2_NETNS_DIR" "$NS_RX2" || return 1
	ip link add "$IF_TX2" netns "$NS_TX2" type veth peer name "$IF_RX" netns "$NS_RX2" &&
		ip -n "$NS_TX2" addr add 198.18.21.1/24 dev "$IF_TX2" &&
		ip -n "$NS_RX2" addr add 198.18.21.2/24 dev "$IF_RX" &&
		ip -n "$NS_TX2" link set lo up && ip -n "$NS_RX2" link set lo up &&
		ip -n "$NS_TX2" link set "$IF_TX2" up && ip -n "$NS_RX2" link set "$IF_RX" up
}
lab2_setup || { not_ok "build a second lab whose receiver is also named $IF_RX"; exit 1; }
RX2_PINS="$RX2_NETNS_DIR/$IF_RX"
INO1=$(stat -L -c %i "/var/run/netns/$NS_RX")
INO2=$(stat -L -c %i "/var/run/netns/$NS_RX2")
rx2_sluice() { nsenter --net="/var/run/netns/$NS_RX2" "$SLUICE" "$@"; }
rx2_ctl() { nsenter --net="/var/run/netns/$NS_RX2" "$SLUICECTL" "$@"; }
tx_sluice() { tx_exec "$SLUICE" "$@"; }
tx_ctl() { tx_exec "$SLUICECTL" "$@"; }
xdp_prog_id2() {
	ip -n "$NS_RX2" -d link show dev "$IF_RX" |
		awk '$1 ~ /^prog\/xdp/ {
			for (i = 1; i < NF; i++) if ($i == "id") { print $(i + 1); exit }
		}'
}

# json_check NAME JSON FILTER [jq args]: ok when FILTER (jq -e) is true of JSON.
json_check() {
	local name=$1 json=$2 filter=$3
	shift 3
	if jq -e "$@" "$filter" <<<"$json" >/dev/null 2>&1; then
		ok "$name"
	else
		not_ok "$name"
		diag "jq $filter: $json"
	fi
}

# The default policy's rate, and the rules' CIDRs, as `rule list -j` says.
default_rate() { jq -r '.[] | select(.match == "default") | .packets.rate' <<<"$1" 2>/dev/null; }
rule_matches() { jq -r '[.[] | .match | select(. != "default")] | join(" ")' <<<"$1" 2>/dev/null; }
stat_of() {
	local v
	v=$(jq -r ".$2" <<<"$1" 2>/dev/null)
	if [[ $v =~ ^[0-9]+$ ]]; then echo "$v"; else echo -1; fi
}

# rates_unchanged NAME: both limiters still have the rates they were given.
rates_unchanged() {
	local r1 r2
	r1=$(default_rate "$(rx_ctl -i "$IF_RX" -j rule list 2>&1)")
	r2=$(default_rate "$(rx2_ctl -i "$IF_RX" -j rule list 2>&1)")
	if [ "$r1" = 100/s ] && [ "$r2" = 50/s ]; then
		ok "$1: both limiters keep their rates (100/s and 50/s)"
	else
		not_ok "$1: both limiters keep their rates (100/s and 50/s)"
		diag "rates now: $NS_RX '$r1', $NS_RX2 '$r2'"
	fi
}

# ---- side by side ----

expect_status 0 "attach in $NS_RX --rate 100/s" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
expect_status 0 "rule add 198.18.20.0/24 --rate 10/s in $NS_RX" \
	rx_ctl -i "$IF_RX" rule add 198.18.20.0/24 --rate 10/s
expect_status 0 "attach the same name in $NS_RX2 --rate 50/s" \
	rx2_sluice attach "$IF_RX" --rate 50/s
expect_status 0 "rule add 198.18.21.0/24 --rate 5/s in $NS_RX2" \
	rx2_ctl -i "$IF_RX" rule add 198.18.21.0/24 --rate 5/s

if [ -e "$RX_PINS/sluice_config" ] && [ -e "$RX2_PINS/sluice_config" ] &&
	[ "$RX_PINS" != "$RX2_PINS" ]; then
	ok "each namespace has its own pin directory (netns:$INO1 and netns:$INO2)"
else
	not_ok "each namespace has its own pin directory (netns:$INO1 and netns:$INO2)"
	diag "$(ls -la /sys/fs/bpf/sluice "$RX_PINS" "$RX2_PINS" 2>&1)"
fi
if [ -n "$(xdp_prog_id)" ] && [ -n "$(xdp_prog_id2)" ] && [ "$(xdp_prog_id)" != "$(xdp_prog_id2)" ]
then
	ok "each interface runs its own program"
else
	not_ok "each interface runs its own program"
	diag "program ids: '$(xdp_prog_id)' and '$(xdp_prog_id2)'"
fi

list1=$(rx_ctl -i "$IF_RX" -j rule list 2>&1)
list2=$(rx2_ctl -i "$IF_RX" -j rule list 2>&1)
if [ "$(default_rate "$list1")" = 100/s ] && [ "$(default_rate "$list2")" = 50/s ]; then
	ok "each limiter has its own default rate (100/s, 50/s)"
else
	not_ok "each limiter has its own default rate (100/s, 50/s)"
	diag "$NS_RX: $list1" "$NS_RX2: $list2"
fi
if [ "$(rule_matches "$list1")" = 198.18.20.0/24 ]; then
	ok "rule list in $NS_RX shows only its own rule"
else
	not_ok "rule list in $NS_RX shows only its own rule"
	diag "$list1"
fi
if [ "$(rule_matches "$list2")" = 198.18.21.0/24 ]; then
	ok "rule list in $NS_RX2 shows only its own rule"
else
	not_ok "rule list in $NS_RX2 shows only its own rule"
	diag "$list2"
fi

# Counters: a flood to the first limiter only (its rule holds it to 10/s).
s1=$(rx_ctl -i "$IF_RX" -j stats 2>&1)
s2=$(rx2_ctl -i "$IF_RX" -j stats 2>&1)
gen_bg flood -s 198.18.20.1 -d "$ADDR4_RX" -r 1000 -n 500
gen_wait flood || not_ok "flood the first limiter with sluice-gen"
sleep 0.2
t1=$(rx_ctl -i "$IF_RX" -j stats 2>&1)
t2=$(rx2_ctl -i "$IF_RX" -j stats 2>&1)
rx1=$(($(stat_of "$t1" rx) - $(stat_of "$s1" rx)))
rx2=$(($(stat_of "$t2" rx) - $(stat_of "$s2" rx)))
lim1=$(stat_of "$t1" limited) lim2=$(stat_of "$t2" limited)
diag "after 500 packets to $NS_RX only: rx +$rx1 / +$rx2, limited $lim1 / $lim2"
if [ "$rx1" -ge 250 ] && [ "$rx2" -lt 50 ]; then
	ok "stats -j: only the first limiter's rx counts the flood"
else
	not_ok "stats -j: only the first limiter's rx counts the flood"
	diag "$NS_RX: $t1" "$NS_RX2: $t2"
fi
if [ "$lim1" -gt 0 ] && [ "$lim2" = 0 ]; then
	ok "stats -j: only the first limiter limited anything"
else
	not_ok "stats -j: only the first limiter limited anything"
fi

# ---- another namespace's limiter is refused, and left alone ----

out=$(tx_ctl set --rate 1/s 2>&1)
st=$?
if [ "$st" != 0 ]; then
	ok "sluicectl set (no -i) where nothing is attached exits non-zero ($st)"
else
	not_ok "sluicectl set (no -i) where nothing is attached exits non-zero"
	diag "$out"
fi
rates_unchanged "after sluicectl set in $NS_TX"

out=$(tx_ctl -i "$IF_RX" set --rate 1/s 2>&1)
st=$?
if [ "$st" != 0 ]; then
	ok "sluicectl -i $IF_RX set from $NS_TX exits non-zero ($st)"
else
	not_ok "sluicectl -i $IF_RX set from $NS_TX exits non-zero"
fi
if grep -q "nsenter --net=/var/run/netns/" <<<"$out" &&
	grep -qE "'ip netns' name ($NS_RX|$NS_RX2)" <<<"$out"; then
	ok "sluicectl -i $IF_RX set from $NS_TX names the namespace and nsenter"
else
	not_ok "sluicectl -i $IF_RX set from $NS_TX names the namespace and nsenter"
	diag "$out"
fi
rates_unchanged "after sluicectl -i $IF_RX set in $NS_TX"

# detach_refused WHERE CMD...: CMD (a detach of IF_RX run elsewhere) is
# refused, says where the limiter is, and both limiters stay.
detach_refused() {
	local where=$1 id1 id2
	shift
	id1=$(xdp_prog_id) id2=$(xdp_prog_id2)
	expect_status 2 "sluice detach $IF_RX from $where is refused (exit 2)" "$@"
	if grep -q "nsenter --net=/var/run/netns/" <<<"$OUT" &&
		grep -qE "net:\[($INO1|$INO2)\]" <<<"$OUT"; then
		ok "sluice detach $IF_RX from $where says where the limiter lives"
	else
		not_ok "sluice detach $IF_RX from $where says where the limiter lives"
		diag "$OUT"
	fi
	if [ -n "$id1" ] && [ "$(xdp_prog_id)" = "$id1" ] && [ "$(xdp_prog_id2)" = "$id2" ] &&
		[ -e "$RX_PINS/sluice_config" ] && [ -e "$RX2_PINS/sluice_config" ]; then
		ok "after detach from $where: both programs still attached, both pins there"
	else
		not_ok "after detach from $where: both programs still attached, both pins there"
		diag "program ids '$id1' '$id2' before, '$(xdp_prog_id)' '$(xdp_prog_id2)' after"
		diag "$(ls "$RX_PINS" "$RX2_PINS" 2>&1)"
	fi
}
detach_refused "$NS_TX" tx_sluice detach "$IF_RX"
detach_refused "the initial namespace" "$SLUICE" detach "$IF_RX"
rates_unchanged "after the refused detaches"

# ---- status: only this namespace's limiters ----

# A second interface in NS_RX: a veth pair with both ends there.
ip -n "$NS_RX" link add "$IF_DUMMY" type veth peer name "owe$$" &&
	ip -n "$NS_RX" link set "$IF_DUMMY" up && ip -n "$NS_RX" link set "owe$$" up
expect_status 0 "attach a second interface ($IF_DUMMY) in $NS_RX" \
	rx_sluice attach "$IF_DUMMY" --rate 30/s

# status_own NAME CMD...: CMD's `status -j` without the states it reports
# "orphaned": left by a namespace that is gone, whose nsfs inode a namespace
# of this test got again (the kernel reuses them; a state left on this
# machine by anything before the test can sit in our directory that way).
# Such a state is no limiter of the namespace; it is noted, not counted.
status_own() {
	local name=$1 out n
	shift
	out=$("$@" status -j 2>&1)
	n=$(jq '[.interfaces[]? | select(.state == "orphaned")] | length' <<<"$out" 2>/dev/null)
	[ "${n:-0}" -gt 0 ] && diag "$name: $n orphaned state(s) of a namespace that is gone," \
		"left before this test, not counted: $(jq -c '[.interfaces[] |
		select(.state == "orphaned") | .pin_dir]' <<<"$out")"
	jq -c '.interfaces |= map(select(.state != "orphaned"))' <<<"$out" 2>/dev/null || echo "$out"
}

j1=$(status_own "$NS_RX" rx_sluice)
json_check "status -j in $NS_RX lists its two limiters, and only them" "$j1" \
	'[.interfaces[].ifname] | sort == ([$a, $b] | sort)' --arg a "$IF_RX" --arg b "$IF_DUMMY"
json_check "status -j in $NS_RX: $IF_RX's netns_inode, pin_dir, state attached, interface_exists" \
	"$j1" '.interfaces[] | select(.ifname == $n) | .netns_inode == $ino and
		.pin_dir == $dir and .state == "attached" and .interface_exists == true' \
	--arg n "$IF_RX" --argjson ino "$INO1" --arg dir "$RX_PINS"
j2=$(status_own "$NS_RX2" rx2_sluice)
json_check "status -j in $NS_RX2 lists only its own $IF_RX" "$j2" \
	'[.interfaces[].ifname] == [$n]' --arg n "$IF_RX"
json_check "status -j in $NS_RX2: netns_inode, pin_dir, state attached, interface_exists" \
	"$j2" '.interfaces[0] | .netns_inode == $ino and .pin_dir == $dir and
		.state == "attached" and .interface_exists == true' \
	--argjson ino "$INO2" --arg dir "$RX2_PINS"
j0=$(status_own "$NS_TX" tx_sluice)
json_check "status -j in $NS_TX (nothing attached) lists no limiter" "$j0" '.interfaces == []'
text2=$(rx2_sluice status 2>&1)
if grep -q "net:\[$INO2\]" <<<"$text2" && ! grep -q "$IF_DUMMY\|net:\[$INO1\]" <<<"$text2"
then
	ok "status in $NS_RX2 shows its namespace and nothing of $NS_RX"
else
	not_ok "status in $NS_RX2 shows its namespace and nothing of $NS_RX"
	diag "$text2"
fi

out=$(tx_sluice status "$IF_RX" 2>&1)
st=$?
if [ "$st" != 0 ] && grep -q "nsenter --net=/var/run/netns/" <<<"$out" &&
	grep -qE "'ip netns' name ($NS_RX|$NS_RX2)" <<<"$out"; then
	ok "status $IF_RX from $NS_TX is refused ($st), naming the namespace"
else
	not_ok "status $IF_RX from $NS_TX is refused, naming the namespace"
	diag "exit status $st: $out"
fi
out=$(rx2_sluice status "$IF_DUMMY" 2>&1)
st=$?
if [ "$st" != 0 ] && grep -q "'ip netns' name $NS_RX\b" <<<"$out"; then
	ok "status $IF_DUMMY from $NS_RX2 is refused ($st), naming $NS_RX"
else
	not_ok "status $IF_DUMMY from $NS_RX2 is refused, naming $NS_RX"
	diag "exit status $st: $out"
fi

expect_status 0 "detach $IF_DUMMY in $NS_RX" rx_sluice detach "$IF_DUMMY"
expect_status 0 "detach $IF_RX in $NS_RX2" rx2_sluice detach "$IF_RX"
if [ -z "$(xdp_prog_id2)" ] && [ ! -e "$RX2_PINS" ] && [ -n "$(xdp_prog_id)" ] &&
	[ -e "$RX_PINS/sluice_config" ]; then
	ok "detach in $NS_RX2 removed its limiter only; $NS_RX's is attached and pinned"
else
	not_ok "detach in $NS_RX2 removed its limiter only; $NS_RX's is attached and pinned"
	diag "program ids '$(xdp_prog_id)' '$(xdp_prog_id2)'; $(ls "$RX_PINS" "$RX2_PINS" 2>&1)"
fi
if [ "$(default_rate "$(rx_ctl -i "$IF_RX" -j rule list 2>&1)")" = 100/s ]; then
	ok "$NS_RX's limiter still has its rate after the other's detach"
else
	not_ok "$NS_RX's limiter still has its rate after the other's detach"
fi
tap_done
