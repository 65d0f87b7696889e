#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice in a mount namespace of its own (issue 20, C15). `ip netns exec NS
# CMD` runs CMD with a /sys of its own, where no bpffs is mounted: a sluice
# that mounted one there attached a program whose pins vanished with the
# command, and status said "not attached" while it ran. Every command now
# refuses there, before touching anything, and names the command that
# works ('nsenter --net=/var/run/netns/NS ...'). Where the mount namespace is
# PID 1's own (a container's) and bpffs is just not mounted, sluice still
# mounts it and goes on.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "mount namespaces" unshare
netns_need_sluice "mount namespaces"

netns_setup mn 28 || { not_ok "build the namespaces and the veth pair"; exit 1; }
HINT="nsenter --net=/var/run/netns/$NS_RX"
nx() { ip netns exec "$NS_RX" "$@"; }
nothing_attached() {
	if [ -z "$(xdp_prog_id)" ] && [ ! -e "$RX_PINS" ]; then ok "$1"
	else not_ok "$1"; diag "program '$(xdp_prog_id)'; $(ls "$RX_PINS" 2>&1)"; fi
}

# ---- nothing attached yet ----

expect_status 1 "ip netns exec ... sluice attach: exit status 1" nx "$SLUICE" attach "$IF_RX"
if grep -qF "$HINT $(basename "$SLUICE") attach $IF_RX" <<<"$OUT"; then
	ok "it names the command to run: '$HINT sluice attach $IF_RX'"
else
	not_ok "it names the command to run: '$HINT sluice attach $IF_RX'"
	diag "$OUT"
fi
nothing_attached "no program was attached, nothing was pinned"
expect_status 1 "with a bpffs mounted inside it: exit status 1" \
	nx sh -c 'mount -t bpf bpf /sys/fs/bpf && exec "$0" attach "$1"' "$SLUICE" "$IF_RX"
if grep -q "mounted only in this mount namespace" <<<"$OUT"; then
	ok "it says that bpffs is mounted only in this mount namespace"
else
	not_ok "it says that bpffs is mounted only in this mount namespace"
	diag "$OUT"
fi
nothing_attached "still no program and no pins"
expect_status 1 "ip netns exec ... sluice run: exit status 1" \
	timeout 10 ip netns exec "$NS_RX" "$SLUICE" run "$IF_RX" --interval 100ms
nothing_attached "the run attached nothing"

# ---- attached the right way: the other commands refuse there too ----

expect_status 0 "$HINT sluice attach" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
prog=$(xdp_prog_id)
expect_status 1 "ip netns exec ... sluice status: exit status 1 (not 'not attached')" \
	nx "$SLUICE" status
if grep -qF "$HINT" <<<"$OUT" && ! grep -q "not attached" <<<"$OUT"; then
	ok "status names nsenter, and does not say 'not attached'"
else
	not_ok "status names nsenter, and does not say 'not attached'"
	diag "$OUT"
fi
expect_status 1 "ip netns exec ... sluicectl stats: exit status 1" \
	nx "$SLUICECTL" -i "$IF_RX" stats
expect_status 1 "ip netns exec ... sluice detach: exit status 1" nx "$SLUICE" detach "$IF_RX"
if [ "$(xdp_prog_id)" = "$prog" ] && [ -e "$RX_PINS/sluice_config" ]; then
	ok "the refused detach left program $prog and its pins"
else
	not_ok "the refused detach left program $prog and its pins"
fi
expect_status 0 "$HINT sluice detach" rx_sluice detach "$IF_RX"

# ---- a mount namespace that is PID 1's own, with no bpffs mounted ----

# A new mount and PID namespace, its PID 1 the shell: as in a container.
# bpffs is unmounted there only (private propagation): sluice mounts it.
out=$(nsenter --net="/var/run/netns/$NS_RX" unshare --mount --propagation private --pid \
	--fork --mount-proc sh -c 'umount /sys/fs/bpf || exit 9
	"$0" attach "$1" && "$0" status "$1" && "$0" detach "$1"' "$SLUICE" "$IF_RX" 2>&1)
st=$?
if [ $st = 0 ] && grep -q "^sluice attached to $IF_RX" <<<"$out" &&
	grep -q "^$IF_RX (ifindex [0-9]*): attached" <<<"$out"; then
	ok "where PID 1 shares the mount namespace and bpffs is not mounted, sluice mounts it"
else
	not_ok "where PID 1 shares the mount namespace and bpffs is not mounted, sluice mounts it"
	diag "exit status $st: $out"
fi
nothing_attached "and its detach there removed the program"
tap_done
