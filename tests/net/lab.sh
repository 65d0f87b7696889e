#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The lab of tests/lib/netns.sh removes only what it made. bpffs is the
# machine's: a namespace's pin directory, /sys/fs/bpf/sluice/netns:INODE, is
# named by an inode the kernel hands to the next namespace once it is free,
# so what the lab finds there may be someone else's. A lab (a child shell, as
# a test runs it) attaches sluice, and this script puts beside its state:
#   1. a directory sluice does not make, with a pinned map in it;
#   2. another namespace's state (its pins moved in: its sluice_config
#      records that namespace as its owner);
# and gives a second lab a directory that existed before its namespace (as
# when its inode was another's before) holding a state of its own.
# After each lab's cleanup the lab's own state is gone (lab 1's detach
# cannot run: its cleanup removes the pins itself), and every one of those
# survives, pin for pin. Then this script removes what it made.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "the lab removes only what it made" bpftool
netns_need_sluice "the lab removes only what it made"

# A namespace of this script's own (not a lab's), with a limiter whose state
# plays "another namespace's".
NS_O="lab-other-$$"
IF_O="lbo$$"
D=$(mktemp -d /tmp/sluice-lab.XXXXXX) || exit 1
in_o() { nsenter --net="/var/run/netns/$NS_O" "$@"; }
cleanup() {
	# What this script made, and only that: its namespace's state detached
	# and released, the scratch directory, the namespace.
	if [ -n "${RX_NETNS_DIR:-}" ] && [ -d "$RX_NETNS_DIR/$IF_O" ]; then
		mv "$RX_NETNS_DIR/$IF_O" "$O_DIR/$IF_O" 2>/dev/null
	fi
	in_o "$SLUICE" detach "$IF_O" >/dev/null 2>&1
	pins_release
	rm -rf "$D"
	ip netns del "$NS_O" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add "$NS_O" && ip -n "$NS_O" link add "$IF_O" type veth peer name "${IF_O}p" &&
	ip -n "$NS_O" link set "$IF_O" up && ip -n "$NS_O" link set "${IF_O}p" up ||
	{ not_ok "make a namespace of this script's own"; exit 1; }
INO_O=$(stat -L -c %i "/var/run/netns/$NS_O")
O_DIR=/sys/fs/bpf/sluice/netns:$INO_O
pins_watch "$O_DIR" "$NS_O"
expect_status 0 "attach in a namespace of this script's (another namespace's state)" \
	in_o "$SLUICE" attach "$IF_O" --rate 10/s || exit 1

# pins_of DIR: "name:id" of every pin in DIR, sorted: the same ids are the same objects.
pins_of() {
	local f id out=()
	for f in "$1"/*; do
		[ -f "$f" ] || continue
		id=$(bpftool -j map show pinned "$f" 2>/dev/null | grep -o '"id":[0-9]*' | head -1)
		[ -n "$id" ] || id=$(bpftool -j prog show pinned "$f" 2>/dev/null |
			grep -o '"id":[0-9]*' | head -1)
		out+=("${f##*/}:${id#*:}")
	done
	printf '%s\n' "${out[@]}" | sort | tr '\n' ' '
}
O_PINS=$(pins_of "$O_DIR/$IF_O")
[ -n "$O_PINS" ] || { not_ok "the other namespace's state has pins ($O_DIR/$IF_O)"; exit 1; }

# lab N BODY: run BODY (bash) in a lab of its own, in a child shell that
# exits through the lab's trap as a test does; it writes what it made to
# $D/labN.vars. The child's TAP lines are this script's.
lab() {
	local n=$1
	cat >"$D/lab$n.sh" <<-EOF
		source tests/lib/tap.sh
		source tests/lib/netns.sh
		netns_setup lb$n $((60 + n)) || { not_ok "lab $n: build the namespaces"; exit 1; }
		rx_sluice attach "\$IF_RX" --rate 10/s >/dev/null ||
			{ not_ok "lab $n: attach"; exit 1; }
		echo "RX_NETNS_DIR=\$RX_NETNS_DIR RX_PINS=\$RX_PINS IF_RX=\$IF_RX" \
			"INO_RX=\$(stat -L -c %i "/var/run/netns/\$NS_RX")" >"$D/lab$n.vars"
		$2
	EOF
	BUILD=$BUILD SLUICE=$SLUICE SLUICECTL=$SLUICECTL SLUICE_GEN=$SLUICE_GEN \
		bash "$D/lab$n.sh"
	# shellcheck disable=SC1090
	source "$D/lab$n.vars" 2>/dev/null
}

# ---- 1. what is not the lab's, in the lab's own namespace directory ----
lab 1 "
	mkdir \"\$RX_NETNS_DIR/not-sluice\" &&
		bpftool map create \"\$RX_NETNS_DIR/not-sluice/a_map\" type array key 4 value 4 \\
			entries 1 name lab_keep || not_ok 'lab 1: a directory sluice does not make'
	mv \"$O_DIR/$IF_O\" \"\$RX_NETNS_DIR/$IF_O\" ||
		not_ok 'lab 1: move the other namespace state in'
	# A detach that cannot run: what is left is the cleanup's own to remove.
	SLUICE=/nonexistent
"
if [ -n "${RX_PINS:-}" ] && [ ! -e "$RX_PINS" ]; then
	ok "lab 1: its cleanup removed its own state ($IF_RX)"
else
	not_ok "lab 1: its cleanup removed its own state ($IF_RX)"
	diag "$(ls -la "${RX_PINS:-?}" 2>&1)"
fi
if [ -n "$(bpftool map show pinned "$RX_NETNS_DIR/not-sluice/a_map" 2>/dev/null)" ]; then
	ok "lab 1: a directory sluice does not make survives its cleanup, with its pin"
else
	not_ok "lab 1: a directory sluice does not make survives its cleanup, with its pin"
	diag "$(ls -la "$RX_NETNS_DIR" 2>&1)"
fi
got=$(pins_of "$RX_NETNS_DIR/$IF_O")
if [ "$got" = "$O_PINS" ]; then
	ok "lab 1: another namespace's state in its directory survives, pin for pin"
else
	not_ok "lab 1: another namespace's state in its directory survives, pin for pin"
	diag "before: $O_PINS"
	diag "after: $got"
fi
# Back where it belongs, and working: the other namespace's sluice reads it.
mv "$RX_NETNS_DIR/$IF_O" "$O_DIR/$IF_O" 2>/dev/null
expect_status 0 "lab 1: the other namespace's limiter still reads its state" \
	in_o "$SLUICECTL" -i "$IF_O" rule list
# This script made these: its cleanup of them.
rm -f "$RX_NETNS_DIR/not-sluice/a_map"
rmdir "$RX_NETNS_DIR/not-sluice" "$RX_NETNS_DIR" 2>/dev/null
if [ ! -e "$RX_NETNS_DIR" ]; then
	ok "lab 1: nothing else of it was left (its namespace directory removable)"
else
	not_ok "lab 1: nothing else of it was left"
	diag "$(ls -laR "$RX_NETNS_DIR" 2>&1)"
fi

# ---- 2. a directory that existed before the lab's namespace ----
# The lab is given this script's namespace directory as if its inode had
# been reused: pins_watch of a directory that exists. The lab's own state
# moved in there (owned by the lab's namespace, as its sluice_config says)
# must survive: the directory was not the lab's.
lab 2 "
	pins_watch \"$O_DIR\" \"\$NS_RX\"
	mv \"\$RX_PINS\" \"$O_DIR/lab2-state\" ||
		not_ok 'lab 2: move its state into the older directory'
"
if [ -n "$(pins_of "$O_DIR/lab2-state")" ] && [ -e "$O_DIR/lab2-state/sluice_config" ]; then
	ok "lab 2: a directory older than its namespace survives its cleanup, every pin in it"
else
	not_ok "lab 2: a directory older than its namespace survives its cleanup, every pin in it"
	diag "$(ls -laR "$O_DIR" 2>&1)"
fi
if [ "$(pins_of "$O_DIR/$IF_O")" = "$O_PINS" ]; then
	ok "lab 2: the state that was there survives, pin for pin"
else
	not_ok "lab 2: the state that was there survives, pin for pin"
fi
# The lab's state, moved here by this script: removed by it (its namespace
# is gone, its program with its veth).
rm -f "$O_DIR/lab2-state"/sluice_*
rmdir "$O_DIR/lab2-state" 2>/dev/null
[ -n "${RX_NETNS_DIR:-}" ] && rmdir "$RX_NETNS_DIR" 2>/dev/null

expect_status 0 "detach in this script's namespace (its state intact to the end)" \
	in_o "$SLUICE" detach "$IF_O"
tap_done
