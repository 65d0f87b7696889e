#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Whose a pinned state is decides what attach does with it:
#   - an interface deleted and made again under the same name: its old state
#     is not taken over silently (attach exit 1, naming --resume and
#     --fresh); edits of the vanished interface are refused, reads warn;
#     --resume adopts the old rules, --fresh starts empty;
#   - an attach killed half way (after pinning the maps): the same refusal,
#     and sluicectl will not edit it; --fresh then works;
#   - `detach --keep-state` then attach: resumed silently, and said so;
#   - an attach that fails (after its checks) never loses a sluicectl edit
#     committed meanwhile, and changes nothing itself.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "lifecycle" jq
netns_need_sluice "lifecycle"

netns_setup lc 22 || { not_ok "build the namespaces and the veth pair"; exit 1; }
# Where a sluice of before the per-namespace pins put them: the cleanup
# removes them if this test's sluice made them (pins_watch).
pins_watch "/sys/fs/bpf/sluice/$IF_RX" "$NS_RX"

# remake_veth: delete the veth pair (IF_RX and its peer) and make it again
# with the same names and addresses: a new IF_RX, with another ifindex.
remake_veth() {
	ip -n "$NS_RX" link del "$IF_RX" 2>/dev/null
	ip link add "$IF_TX" netns "$NS_TX" type veth peer name "$IF_RX" netns "$NS_RX" &&
		ip -n "$NS_TX" addr add "$ADDR4_TX/24" dev "$IF_TX" &&
		ip -n "$NS_RX" addr add "$ADDR4_RX/24" dev "$IF_RX" &&
		ip -n "$NS_TX" link set "$IF_TX" up && ip -n "$NS_RX" link set "$IF_RX" up
}

rules_of() { jq -r '[.[] | .match | select(. != "default")] | join(" ")' <<<"$1" 2>/dev/null; }
rate_of() { jq -r '.[] | select(.match == "default") | .packets.rate' <<<"$1" 2>/dev/null; }
rule_list() { rx_ctl -i "$IF_RX" -j rule list 2>/dev/null; }

# says NAME PATTERN...: the last command's output ($OUT) has every PATTERN (grep -E).
says() {
	local name=$1 p
	shift
	for p in "$@"; do
		if ! grep -qE -- "$p" <<<"$OUT"; then
			not_ok "$name"
			diag "no '$p' in: $OUT"
			return 1
		fi
	done
	ok "$name"
}

# ---- an interface deleted and made again ----

expect_status 0 "attach --rate 60/s" rx_sluice attach "$IF_RX" --rate 60/s || exit 1
expect_status 0 "rule add 198.18.22.0/24 --rate 10/s" \
	rx_ctl -i "$IF_RX" rule add 198.18.22.0/24 --rate 10/s
ip -n "$NS_RX" link del "$IF_RX"

out=$(rx_ctl -i "$IF_RX" rule add 198.18.23.0/24 --rate 5/s 2>&1)
st=$?
if [ "$st" != 0 ] && grep -qi "gone" <<<"$out"; then
	ok "rule add on the deleted interface exits non-zero ($st) and says it is gone"
else
	not_ok "rule add on the deleted interface exits non-zero and says it is gone"
	diag "exit status $st: $out"
fi
out=$(rx_ctl -i "$IF_RX" -j rule list 2>"$NETNS_TMP/err")
st=$? err=$(cat "$NETNS_TMP/err")
if [ "$st" = 0 ] && [ "$(rules_of "$out")" = 198.18.22.0/24 ]; then
	ok "rule list on the deleted interface still works (exit 0, its rule)"
else
	not_ok "rule list on the deleted interface still works (exit 0, its rule)"
	diag "exit status $st: $out $err"
fi
if grep -qi "warning" <<<"$err" && grep -qi "gone" <<<"$err"; then
	ok "rule list on the deleted interface warns on stderr that it is gone"
else
	not_ok "rule list on the deleted interface warns on stderr that it is gone"
	diag "stderr: $err"
fi
j=$(rx_sluice status -j 2>&1)
if jq -e --arg n "$IF_RX" '.interfaces[] | select(.ifname == $n) |
	.state == "gone" and .interface_exists == false' <<<"$j" >/dev/null 2>&1; then
	ok "status -j: state gone, interface_exists false"
else
	not_ok "status -j: state gone, interface_exists false"
	diag "$j"
fi

remake_veth || { not_ok "make the veth pair again"; exit 1; }
expect_status 1 "plain attach on the re-made interface is refused (exit 1)" \
	rx_sluice attach "$IF_RX" &&
	says "the refusal names --resume and --fresh" --resume --fresh
if [ -z "$(xdp_prog_id)" ]; then
	ok "the refused attach attached nothing"
else
	not_ok "the refused attach attached nothing"
fi
expect_status 0 "attach --resume adopts the old state" rx_sluice attach "$IF_RX" --resume &&
	says "attach --resume says it resumed" "resumed"
list=$(rule_list)
if [ "$(rules_of "$list")" = 198.18.22.0/24 ] && [ "$(rate_of "$list")" = 60/s ]; then
	ok "after --resume: the old rule and rate are there (and not the refused rule)"
else
	not_ok "after --resume: the old rule and rate are there (and not the refused rule)"
	diag "$list"
fi

remake_veth || { not_ok "make the veth pair again"; exit 1; }
expect_status 1 "plain attach on the interface made a second time is refused (exit 1)" \
	rx_sluice attach "$IF_RX"
expect_status 0 "attach --fresh drops the old state" rx_sluice attach "$IF_RX" --fresh &&
	says "attach --fresh says so" "fresh"
list=$(rule_list)
if [ -n "$list" ] && [ -z "$(rules_of "$list")" ] && [ "$(rate_of "$list")" != 60/s ]; then
	ok "after --fresh: no rule, the default policy"
else
	not_ok "after --fresh: no rule, the default policy"
	diag "$list"
fi

# ---- a first attach killed after pinning its maps ----

expect_status 0 "detach" rx_sluice detach "$IF_RX"
SLUICE_TEST_KILL_AT=maps rx_sluice attach "$IF_RX" --rate 60/s >/dev/null 2>&1
st=$?
if [ "$st" = 137 ] && [ -e "$RX_PINS/sluice_config" ]; then
	ok "SLUICE_TEST_KILL_AT=maps: attach dies by SIGKILL with its maps pinned"
else
	not_ok "SLUICE_TEST_KILL_AT=maps: attach dies by SIGKILL with its maps pinned"
	diag "exit status $st (want 137); $(ls "$RX_PINS" 2>&1)"
fi
expect_status 1 "plain attach over the killed attach's state is refused (exit 1)" \
	rx_sluice attach "$IF_RX" &&
	says "the refusal names --resume and --fresh" --resume --fresh
out=$(rx_ctl -i "$IF_RX" set --rate 5/s 2>&1)
st=$?
if [ "$st" != 0 ]; then
	ok "sluicectl set on the killed attach's state is refused ($st)"
else
	not_ok "sluicectl set on the killed attach's state is refused"
	diag "$out"
fi
expect_status 0 "attach --fresh over the killed attach's state" \
	rx_sluice attach "$IF_RX" --fresh --rate 60/s
if [ -n "$(xdp_prog_id)" ] && [ "$(rate_of "$(rule_list)")" = 60/s ]; then
	ok "after --fresh sluice is attached with its rate"
else
	not_ok "after --fresh sluice is attached with its rate"
	diag "program '$(xdp_prog_id)'; $(rule_list)"
fi

# ---- detach --keep-state, then attach ----

rx_ctl -i "$IF_RX" rule add 198.18.22.0/24 --rate 10/s >/dev/null 2>&1
tx_gen -s 198.18.22.1 -d "$ADDR4_RX" -n 20 >/dev/null 2>&1
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
expect_status 0 "attach after detach --keep-state: exit 0, no option needed" \
	rx_sluice attach "$IF_RX" &&
	says "it prints a 'resumed:' line with the rules, keys and 'counters since'" \
		"^  resumed: 1 rule, [1-9][0-9]* keys?, counters since "
list=$(rule_list)
if [ "$(rules_of "$list")" = 198.18.22.0/24 ] && [ "$(rate_of "$list")" = 60/s ]; then
	ok "the kept rule and rate are live again"
else
	not_ok "the kept rule and rate are live again"
	diag "$list"
fi

# ---- a failing attach against concurrent edits: no edit is lost ----

# race NAME BASE ARGS...: ROUNDS sluicectl rule adds (198.18.X.0/24,
# X = BASE + round), one after the other, while failing attaches (`attach
# ARGS`, failure injected after their checks) run back to back until the
# last add is done (and at least ROUNDS of them ran).
ROUNDS=32
race() {
	local name=$1 base=$2 i added=() lost=() list r n=0 f=0 ap
	shift 2
	rm -f "$NETNS_TMP/race.done" "$NETNS_TMP/race.count"
	(
		trap - EXIT INT TERM
		n=0 f=0
		while [ ! -e "$NETNS_TMP/race.done" ] || [ "$n" -lt "$ROUNDS" ]; do
			SLUICE_TEST_FAIL_AT=program rx_sluice attach "$IF_RX" "$@" >/dev/null 2>&1
			[ $? = 1 ] && f=$((f + 1))
			n=$((n + 1))
		done
		echo "$n $f" >"$NETNS_TMP/race.count"
	) &
	ap=$!
	NETNS_PIDS+=("$ap")
	for ((i = 0; i < ROUNDS; i++)); do
		if rx_ctl -i "$IF_RX" rule add "198.18.$((base + i)).0/24" --rate 10/s \
			>/dev/null 2>&1; then
			added+=("198.18.$((base + i)).0/24")
		fi
	done
	touch "$NETNS_TMP/race.done"
	wait "$ap"
	read -r n f <"$NETNS_TMP/race.count"
	list=$(rule_list)
	for r in "${added[@]}"; do
		grep -qF "\"$r\"" <<<"$list" || lost+=("$r")
	done
	diag "$name: $f of $n attaches failed as injected, meanwhile ${#added[@]} of" \
		"$ROUNDS rule adds exited 0"
	if [ "$n" -gt 0 ] && [ "$f" = "$n" ]; then
		ok "$name: every attach failed (exit 1)"
	else
		not_ok "$name: every attach failed (exit 1)"
	fi
	if [ "${#added[@]}" = "$ROUNDS" ] && [ "${#lost[@]}" = 0 ]; then
		ok "$name: every rule add exited 0 and is in rule list"
	else
		not_ok "$name: every rule add exited 0 and is in rule list"
		diag "lost: ${lost[*]:-none}" "$list"
	fi
	if [ "$(rate_of "$list")" = 60/s ]; then
		ok "$name: the rate is still 60/s (not 77/s)"
	else
		not_ok "$name: the rate is still 60/s (not 77/s)"
		diag "$list"
	fi
}
race "attach --rate 77/s failing" 100 --rate 77/s

# A config is the whole desired state: applied, it would drop every rule
# but its own. (No line of a config fails only when applied: attach runs
# every line on a copy of the live state first, so the failure is injected.)
CONF=$NETNS_TMP/lc.conf
printf '%s\n' "set --rate 77/s" "rule add 198.18.99.0/24 --rate 1/s" >"$CONF"
race "attach --config FILE failing" 140 --config "$CONF"
name="the failed --config attaches applied nothing of the file (no 198.18.99.0/24, rules kept)"
if ! grep -q '"198.18.99.0/24"' <<<"$(rule_list)" &&
	grep -q '"198.18.100.0/24"\|"198.18.101.0/24"' <<<"$(rule_list)"; then
	ok "$name"
else
	not_ok "$name"
	diag "$(rule_list)"
fi
tap_done
