#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Every command run without the privileges it needs (issue 20, C16), as
# nobody: it exits 1 and says what it takes (root, or CAP_BPF with read
# access to /sys/fs/bpf; CAP_NET_ADMIN to attach), never a destructive
# repair ("a damaged attachment: run 'sluice detach IF' and attach again"),
# nor "Couldn't create /sys/fs/bpf/sluice" for a directory that exists; and
# it changes nothing.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "permissions" setpriv
netns_need_sluice "permissions"

netns_setup pm 29 || { not_ok "build the namespaces and the veth pair"; exit 1; }
expect_status 0 "attach (as root)" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
expect_status 0 "rule add (as root)" rx_ctl -i "$IF_RX" rule add 198.18.29.0/24 --deny
prog=$(xdp_prog_id)

# Binaries and files that nobody may read, whatever the tree's directory.
chmod 711 "$NETNS_TMP"
mkdir -m 755 "$NETNS_TMP/bin"
cp "$SLUICE" "$SLUICECTL" "$NETNS_TMP/bin/" && chmod 755 "$NETNS_TMP/bin/"*
S=$NETNS_TMP/bin/$(basename "$SLUICE") C=$NETNS_TMP/bin/$(basename "$SLUICECTL")
CONF=$NETNS_TMP/bin/f.conf
printf 'set --rate 10/s\n' >"$CONF" && chmod 644 "$CONF"
nobody() {
	timeout 10 nsenter --net="/var/run/netns/$NS_RX" setpriv --reuid=nobody \
		--regid=nogroup --clear-groups "$@"
}

# as_nobody WORDS...: the command, as nobody, exits 1 and says what it
# takes, and nothing destructive.
as_nobody() {
	local name="as nobody: $(basename "$1") ${*:2}" st
	local bad="damaged\|detach $IF_RX'\|Couldn't create /sys/fs/bpf/sluice:"
	OUT=$(nobody "$@" 2>&1)
	st=$?
	if [ "$st" = 1 ] && grep -q "needs root, or CAP_BPF" <<<"$OUT" && ! grep -qi "$bad" <<<"$OUT"
	then
		ok "$name: exit 1, says it needs root or CAP_BPF"
	else
		not_ok "$name: exit 1, says it needs root or CAP_BPF"
		diag "exit status $st: $OUT"
	fi
}

as_nobody "$S" attach "$IF_RX"
if grep -q "CAP_NET_ADMIN" <<<"$OUT"; then ok "attach says CAP_NET_ADMIN too"
else not_ok "attach says CAP_NET_ADMIN too"; diag "$OUT"; fi
as_nobody "$S" attach "$IF_RX" --rate 5/s
as_nobody "$S" detach "$IF_RX"
as_nobody "$S" detach "$IF_RX" --keep-state
as_nobody "$S" status
as_nobody "$S" status "$IF_RX"
as_nobody "$S" -j status
as_nobody "$S" run "$IF_RX" --interval 100ms
as_nobody "$S" reload "$IF_RX" --config "$CONF"
as_nobody "$S" shape attach "$IF_RX" --rate 1mbit
as_nobody "$S" shape status
as_nobody "$S" shape detach "$IF_RX"
as_nobody "$C" -i "$IF_RX" stats
as_nobody "$C" stats
as_nobody "$C" -i "$IF_RX" -j stats
as_nobody "$C" -i "$IF_RX" stats --prometheus
as_nobody "$C" -i "$IF_RX" rule list
as_nobody "$C" -i "$IF_RX" set --rate 5/s
as_nobody "$C" -i "$IF_RX" rule add 198.18.29.128/25 --exempt
as_nobody "$C" -i "$IF_RX" rule del 198.18.29.0/24
as_nobody "$C" -i "$IF_RX" top
as_nobody "$C" -i "$IF_RX" show 198.18.29.7
as_nobody "$C" -i "$IF_RX" flush
as_nobody "$C" -i "$IF_RX" -b "$CONF"

list=$(rx_ctl -i "$IF_RX" rule list 2>&1)
if [ "$(xdp_prog_id)" = "$prog" ] && [ -e "$RX_PINS/sluice_config" ] &&
	grep -q "198.18.29.0/24" <<<"$list" && ! grep -q "198.18.29.128/25" <<<"$list"; then
	ok "nobody changed nothing: program $prog, its pins and its one rule are there"
else
	not_ok "nobody changed nothing: program $prog, its pins and its one rule are there"
	diag "program '$(xdp_prog_id)': $list"
fi
tap_done
