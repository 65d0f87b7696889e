#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What one rule change costs the control plane, counted in bpf(2) calls (a
# count, not a time: it is the same on a slow machine). With R rules, a
# change rewrites the idle generation and clears the old one: O(R) calls.
# Clearing by deleting during one walk sent the walk back to the first key
# after every delete, O(R^2): 16.8 million calls for one rule add at 4,095.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "rule change cost" strace
netns_need_sluice "rule change cost"

R=1000
netns_setup rc 41 || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach" rx_sluice attach "$IF_RX" || exit 1

# R rules in one batch: 198.18.0.0/15 cut into /26s.
awk -v r=$R 'BEGIN { for (i = 0; i < r; i++)
	printf "rule add 198.%d.%d.%d/26 --rate 10/s\n", 18 + int(i / 1024), int(i / 4) % 256,
		(i % 4) * 64 }' >"$NETNS_TMP/rules.conf"
expect_status 0 "a batch of $R rules" rx_ctl -b "$NETNS_TMP/rules.conf" || exit 1
n=$(rx_ctl -j rule list | grep -o '"match":' | wc -l)
if [ "$n" = $((R + 1)) ]; then ok "rule list has the $R rules and the default"; else
	not_ok "rule list has the $R rules and the default"; diag "$n rows"; fi

# bpf_calls CMD...: how many bpf(2) calls CMD makes. Under strace every call
# is slow: a command still counting after 60 s (millions of calls) counts as
# too many, not as a hang of the suite.
bpf_calls() {
	rx_exec timeout 60 strace -f -qq -c -e trace=bpf -o "$NETNS_TMP/strace" "$@" \
		>/dev/null 2>&1 || { echo "more than 60 s of"; return 1; }
	awk '$NF == "bpf" { print $4 }' "$NETNS_TMP/strace"
}

for cmd in "rule add 198.19.255.0/24 --rate 5/s" "rule del 198.19.255.0/24"; do
	# shellcheck disable=SC2086 # the words of the command
	calls=$(bpf_calls "$SLUICECTL" $cmd)
	diag "$cmd with $R rules: $calls bpf calls"
	if [ -n "$calls" ] && [ "$calls" -eq "$calls" ] 2>/dev/null && [ "$calls" -le $((20 * R)) ]; then
		ok "$cmd with $R rules: at most 20 bpf calls per rule (O(rules))"
	else
		not_ok "$cmd with $R rules: at most 20 bpf calls per rule (O(rules))"
	fi
done
tap_done
