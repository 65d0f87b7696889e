#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Edits of a live sluice (a veth in namespaces of our own) that reach it only
# through sluice and sluicectl commands: a batch read from a pipe or a FIFO
# applies what it says (it is read once), `set --fail-closed` and
# `set --new-keys` change the settings and nothing else, `rule flush` empties
# the rules in one change.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "live edits from pipes, settings, rule flush"
for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "live edits from pipes, settings, rule flush"
		exit 0
	fi
done

N=12
netns_setup cd $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "sluice attach" rx_sluice attach "$IF_RX" || exit 1

ctl() { rx_ctl -i "$IF_RX" "$@"; }
# policy MATCH: its row without the counters, which IPv6 neighbour discovery
# on the veth may move at any time
policy() { row "$1" | sed -E 's/"(passed|dropped|passed_bytes|dropped_bytes)":[0-9]+,?//g'; }
nr_rows() { ctl -j rule list | grep -o '{"match":' | wc -l; }
# status_json: the part of 'sluice status -j' about IF_RX (from its "ifname" on)
status_json() {
	rx_sluice status -j | sed 's/"ifname":/\n&/g' | grep -F "\"ifname\":\"$IF_RX\""
}
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "'$2' != '$3'"; fi; }

# ---- a batch read once: from a pipe, from a FIFO ----
# batch_pipe TEXT: printf TEXT | sluicectl -b /dev/stdin
batch_pipe() { printf '%b' "$1" | ctl -b /dev/stdin; }
expect_status 0 "printf 'set --rate 61/s' | sluicectl -b /dev/stdin: exit status 0" \
	batch_pipe 'set --rate 61/s\n'
has "the piped batch changed the rate" '"rate":"61/s"' "$(row default)"
expect_status 0 "a piped batch of two lines: exit status 0" \
	batch_pipe '# from a pipe\nset --rate 63/s\nrule add 198.18.'$N'.64/26 --rate 7/s\n'
has "the piped batch's first line applied" '"rate":"63/s"' "$(row default)"
has "the piped batch's last line applied" '"rate":"7/s"' "$(row "198.18.$N.64/26")"
expect_status 2 "a piped batch with a bad line: exit status 2" \
	batch_pipe 'set --rate 64/s\nrule add 198.18.'$N'.0/26 --rate 1/s --burst 0\n'
has "a piped batch with a bad line: names /dev/stdin:LINE" "/dev/stdin:2: --burst is 0" "$OUT"
has "a piped batch with a bad line changed nothing" '"rate":"63/s"' "$(row default)"

fifo=$NETNS_TMP/batch.fifo
if mkfifo "$fifo"; then
	# The writer blocks until the reader opens the FIFO; were it opened
	# twice, the second open would wait for a writer forever: hence timeout.
	netns_bg sh -c "printf 'set --rate 62/s\n' >'$fifo'"
	expect_status 0 "sluicectl -b FIFO: exit status 0, no hang" timeout 10 \
		nsenter --net="/var/run/netns/$NS_RX" "$SLUICECTL" -i "$IF_RX" -b "$fifo"
	has "the FIFO's batch changed the rate" '"rate":"62/s"' "$(row default)"
else
	not_ok "mkfifo $fifo"
fi

# ---- set --fail-closed, set --new-keys: settings, not policy ----
t0=$(tag_of default)
before=$(policy default)
has "fail-open to begin with" '"fail_closed":false' "$(status_json)"
expect_status 0 "sluicectl set --fail-closed on" ctl set --fail-closed on
has "sluice status -j shows fail_closed" '"fail_closed":true' "$(status_json)"
same "set --fail-closed on leaves the default policy as it was" "$before" "$(policy default)"
expect_status 0 "sluicectl set --fail-closed off" ctl set --fail-closed off
has "sluice status -j shows fail-open again" '"fail_closed":false' "$(status_json)"

expect_status 0 "sluicectl set --new-keys 1000/s" ctl set --new-keys 1000/s
has "sluice status -j shows new_keys" '"new_keys":"1000/s"' "$(status_json)"
same "set --new-keys keeps the default policy's tag" "$t0" "$(tag_of default)"
expect_status 0 "sluicectl set --new-keys off" ctl set --new-keys off
has "sluice status -j shows new_keys off" '"new_keys":"off"' "$(status_json)"
expect_status 2 "set --new-keys 10mbit on a live sluice: exit status 2" ctl set --new-keys 10mbit
has "status after the refused --new-keys: still off" '"new_keys":"off"' "$(status_json)"
expect_status 0 "a batch sets both" batch_pipe 'set --new-keys 200/s --fail-closed on\n'
out=$(status_json)
has "the batch's --new-keys is live" '"new_keys":"200/s"' "$out"
has "the batch's --fail-closed is live" '"fail_closed":true' "$out"

# ---- rule flush ----
ctl rule add 198.18.$N.128/25 --exempt
ctl rule add 2001:2:0:$N::/64 --rate 100/s
same "three rules and the default before the flush" 4 "$(nr_rows)"
expect_status 0 "sluicectl rule flush" ctl rule flush
same "rule flush empties rule list (the default is left)" 1 "$(nr_rows)"
has "rule list's only row is the default" '{"match":"default"' "$(ctl -j rule list)"
has "sluice status -j counts no rules" '"rules":0' "$(status_json)"
expect_status 0 "rule flush of no rules: exit status 0" ctl rule flush
expect_status 0 "a batch with rule flush between rule adds" \
	batch_pipe 'rule add 198.18.'$N'.0/26 --rate 5/s\nrule flush\nrule add 198.18.'$N'.64/26 --deny\n'
same "the batch's rules are those after its flush" 2 "$(nr_rows)"
has "the rule after the flush is there" '"action":"deny"' "$(row "198.18.$N.64/26")"

tap_done
