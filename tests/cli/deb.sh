#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The Debian package (debian/, make deb), installed on this machine the way an
# operator installs it:
#   - make deb builds sluice_VERSION_ARCH.deb in a copy of the tree under
#     /tmp, into DEBDIR, leaving the tree and its parent directory alone;
#     its Depends name the libraries sluice links (shlibs); lintian finds no
#     error or warning;
#   - dpkg -i puts the binaries, man pages, units (not enabled: templates), the
#     example config (a conffile), the completion and the docs in place; the
#     installed sluice prints the version, its units pass systemd-analyze
#     verify, and it attaches to a lab veth;
#   - dpkg -i of a newer version (make deb DEB_VERSION=VERSION+test1) leaves
#     that limiter attached, same program, rules and keys; the new sluice's
#     attach then upgrades it in place;
#   - dpkg -r leaves the conffile and no binary or unit; dpkg -P leaves
#     nothing: no file of the package, no /etc/sluice, no pins.
# It needs root (dpkg, a lab veth) and a machine where no sluice is installed
# in /usr (it would not clobber one). The package is purged on any exit.
# test: times nothing
set -u
# The sluice under test is the installed one (the lab's cleanup uses it too).
SLUICE=/usr/sbin/sluice
SLUICECTL=/usr/sbin/sluicectl
source tests/lib/tap.sh
source tests/lib/netns.sh

NAME="the Debian package"
if [ "$(id -u)" != 0 ]; then
	skip "needs root (dpkg -i, a lab veth): run 'sudo make test'" "$NAME"
	exit 0
fi
for t in dpkg-buildpackage dpkg-checkbuilddeps dh lintian jq ip nsenter flock; do
	if ! command -v "$t" >/dev/null; then
		skip "'$t' is not installed: run 'sudo make deps'" "$NAME"
		exit 0
	fi
done
if ! out=$(dpkg-checkbuilddeps 2>&1); then
	skip "the package's Build-Depends are not installed ($out): run 'sudo make deps'" "$NAME"
	exit 0
fi
# The package is the machine's: one run of this test at a time (another
# make test beside this one waits here, then finds the machine clean).
LOCK=/run/lock/sluice-deb-test.lock
[ -d /run/lock ] || LOCK=/tmp/sluice-deb-test.lock
if ! exec 9>"$LOCK" || ! flock -w 150 9; then
	skip "another run of this test held $LOCK for 150 s" "$NAME"
	exit 0
fi
# Nothing of a sluice installed otherwise may be in the way: the test would
# overwrite it, and then purge it.
if st=$(dpkg-query -W -f '${Status}' sluice 2>/dev/null) && [ "$st" != "unknown ok not-installed" ]
then
	skip "a package sluice is installed here ($st): not this test's to replace" "$NAME"
	exit 0
fi
for f in /usr/sbin/sluice /usr/sbin/sluicectl /etc/sluice /usr/lib/systemd/system/sluice@.service \
	/usr/share/doc/sluice; do
	if [ -e "$f" ]; then
		skip "$f exists (installed by something else): not this test's to replace" "$NAME"
		exit 0
	fi
done

ARCH=$(dpkg --print-architecture)
if [ "$ARCH" != amd64 ]; then
	skip "debian/control builds the package for amd64 only, this is $ARCH" "$NAME"
	exit 0
fi
VERSION=$(cat VERSION)
V2=$VERSION+test1
LAYOUT=$(sed -n 's/^#define SLUICE_LAYOUT_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
	include/sluice/sluice.h)
tmp=$(mktemp -d /tmp/sluice-debtest.XXXXXX) || exit 1
DEB1=$tmp/v1/sluice_${VERSION}_$ARCH.deb
DEB2=$tmp/v2/sluice_${V2}_$ARCH.deb
INSTALLED=0
BG_PIDS=()

# deb_cleanup: purge the package (detaching first what the installed sluice
# attached in the lab), stop the builds. The lab's cleanup calls it first
# (netns_extra_cleanup), while the namespaces still exist.
deb_cleanup() {
	local pid
	for pid in "${BG_PIDS[@]}"; do
		kill_tree "$pid"
		wait "$pid" 2>/dev/null
	done
	BG_PIDS=()
	if [ "$INSTALLED" = 1 ]; then
		if [ -x "$SLUICE" ] && [ -n "${NS_RX:-}" ] && [ -e "/var/run/netns/$NS_RX" ]; then
			rx_sluice detach "$IF_RX" >/dev/null 2>&1
		fi
		dpkg -P sluice >/dev/null 2>&1
		INSTALLED=0
	fi
	rm -rf "$tmp"
}
netns_extra_cleanup() { deb_cleanup; }
# kill_tree PID: PID and every process under it (a make deb's make,
# dpkg-buildpackage, compilers), the children first stopped from forking.
kill_tree() {
	local c
	kill -STOP "$1" 2>/dev/null
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill -TERM "$1" 2>/dev/null
	kill -CONT "$1" 2>/dev/null
}
trap deb_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mk() { make -s --no-print-directory "$@"; }

# ---- make deb: two versions, the second built while the first is tested ----

parent=$(dirname "$PWD")
before=$(ls -d "$parent"/sluice_* "$parent"/sluice-dbgsym_* 2>/dev/null)
# Both in the background, waited for: a signal's trap runs at once in a
# wait, but only after a command in the foreground has ended.
mk deb DEBDIR="$tmp/v1" >"$tmp/v1.log" 2>&1 &
V1_PID=$!
mk deb DEBDIR="$tmp/v2" DEB_VERSION="$V2" >"$tmp/v2.log" 2>&1 &
V2_PID=$!
BG_PIDS+=("$V1_PID" "$V2_PID")
wait "$V1_PID"
st=$?
if [ "$st" = 0 ]; then
	ok "make deb DEBDIR=TMP"
else
	not_ok "make deb DEBDIR=TMP"
	diag "exit status $st: $(tail -n 30 "$tmp/v1.log")"
	exit 1
fi
if [ -f "$DEB1" ]; then
	ok "make deb made sluice_${VERSION}_$ARCH.deb (the version of the file VERSION)"
else
	not_ok "make deb made sluice_${VERSION}_$ARCH.deb (the version of the file VERSION)"
	diag "in DEBDIR: $(ls "$tmp/v1")"
	exit 1
fi
lintian "$DEB1" >"$tmp/lintian.out" 2>&1 &
LINTIAN_PID=$!
BG_PIDS=("$V2_PID" "$LINTIAN_PID")

after=$(ls -d "$parent"/sluice_* "$parent"/sluice-dbgsym_* 2>/dev/null)
stray=
for d in debian/build debian/sluice debian/.debhelper debian/files; do
	[ -e "$d" ] && stray="$stray $d"
done
if [ "$before" = "$after" ] && [ -z "$stray" ]; then
	ok "make deb wrote nothing into the tree or its parent directory"
else
	not_ok "make deb wrote nothing into the tree or its parent directory"
	diag "in the tree:$stray; in $parent: $after (before: $before)"
fi

field() { dpkg-deb -f "$1" "$2"; }
if [ "$(field "$DEB1" Package)" = sluice ] && [ "$(field "$DEB1" Version)" = "$VERSION" ] &&
	[ "$(field "$DEB1" Architecture)" = "$ARCH" ]; then
	ok "control: Package sluice, Version $VERSION, Architecture $ARCH"
else
	not_ok "control: Package sluice, Version $VERSION, Architecture $ARCH"
	diag "$(dpkg-deb -f "$DEB1")"
fi
# ${shlibs:Depends}: a package for each library sluice links, whatever the
# release calls it (libbpf1, libxdp1, libhiredis0.14, libmicrohttpd12 on
# Debian 12).
deps=$(field "$DEB1" Depends)
names=$(tr ',|' '\n' <<<"$deps" | awk '{ print $1 }')
miss=
for l in libbpf libxdp libhiredis libmicrohttpd libc6; do
	grep -qE "^${l}[0-9.]*(t64)?\$" <<<"$names" || miss="$miss $l"
done
if [ -z "$miss" ]; then
	ok "Depends names libbpf, libxdp, libhiredis, libmicrohttpd and libc6 (shlibs)"
else
	not_ok "Depends names libbpf, libxdp, libhiredis, libmicrohttpd and libc6 (shlibs)"
	diag "missing:$miss in: $deps"
fi

# What the package holds (paths as dpkg-deb -c prints them, without "./").
contents=$(dpkg-deb -c "$DEB1" | awk '{ print $6 }' | sed 's|^\./|/|')
files=$(dpkg-deb -c "$DEB1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|')
want="/usr/sbin/sluice /usr/sbin/sluicectl /usr/share/man/man8/sluice.8.gz
/usr/share/man/man8/sluicectl.8.gz /usr/lib/systemd/system/sluice@.service
/usr/lib/systemd/system/sluice-fleet@.service /etc/sluice/sluice.conf.example
/usr/share/doc/sluice/copyright /usr/share/doc/sluice/changelog.gz
/usr/share/doc/sluice/README.md.gz /usr/share/doc/sluice/docs/operations.md.gz"
miss=
for f in $want; do grep -qxF "$f" <<<"$contents" || miss="$miss $f"; done
what="the package holds the binaries, man pages, units, example config, copyright and docs"
if [ -z "$miss" ]; then
	ok "$what"
else
	not_ok "$what"
	diag "missing:$miss"
fi
for c in sluice sluicectl; do
	if [ ! -f "contrib/bash-completion/$c" ]; then
		skip "contrib/bash-completion/$c is not in the tree" \
			"the package holds the bash completion of $c"
	elif grep -qxF "/usr/share/bash-completion/completions/$c" <<<"$contents"; then
		ok "the package holds the bash completion of $c"
	else
		not_ok "the package holds the bash completion of $c"
	fi
done
conffiles=$(dpkg-deb --ctrl-tarfile "$DEB1" | tar -xOf - ./conffiles 2>/dev/null)
if [ "$conffiles" = /etc/sluice/sluice.conf.example ]; then
	ok "its one conffile is /etc/sluice/sluice.conf.example"
else
	not_ok "its one conffile is /etc/sluice/sluice.conf.example"
	diag "conffiles: $conffiles"
fi
# The units are templates: nothing to enable or start; and an upgrade or a
# removal never stops a unit or detaches a limiter.
mkdir -p "$tmp/ctrl"
dpkg-deb -e "$DEB1" "$tmp/ctrl"
# (Commands the scripts run: at a line's start or after ; & | then do if !,
# not words in their comments or messages.)
acts='(/usr/sbin/)?sluice +(shape +)?detach|deb-systemd-helper +enable|deb-systemd-invoke'
acts="(^|[;&|!]|then|do|if)[[:space:]]*($acts|systemctl +(enable|start|stop|restart))"
bad=$(for f in preinst postinst prerm postrm; do
	[ -f "$tmp/ctrl/$f" ] || continue
	grep -vE '^[[:space:]]*#' "$tmp/ctrl/$f" | grep -E "$acts" | sed "s|^|$f: |"
done)
if [ -z "$bad" ]; then
	ok "no maintainer script enables, starts or stops a unit, or detaches"
else
	not_ok "no maintainer script enables, starts or stops a unit, or detaches"
	diag "$bad"
fi

# ---- dpkg -i ----

# sluice* links under /etc/systemd/system (enabled units), before and after.
enabled_links() { find /etc/systemd/system -name 'sluice*' 2>/dev/null | sort; }
links_before=$(enabled_links)
INSTALLED=1
if ! expect_status 0 "dpkg -i sluice_${VERSION}_$ARCH.deb" dpkg -i "$DEB1"; then
	exit 1
fi
expect_status 0 "installed sluice --version: exit status 0" "$SLUICE" --version &&
	if [ "$OUT" = "sluice $VERSION (map layout $LAYOUT)" ]; then
		ok "installed sluice --version prints 'sluice $VERSION (map layout $LAYOUT)'"
	else
		not_ok "installed sluice --version prints 'sluice $VERSION (map layout $LAYOUT)'"
		diag "got: $OUT"
	fi
expect_status 0 "installed sluicectl --version" "$SLUICECTL" --version
check "installed /etc/sluice/sluice.conf.example is the tree's" \
	cmp etc/sluice.conf.example /etc/sluice/sluice.conf.example
unit=/usr/lib/systemd/system/sluice@.service
# shellcheck disable=SC2016 # the unit's own $VARIABLES, unexpanded
exec1='ExecStart=/usr/sbin/sluice attach %I --config /etc/sluice/%I.conf $SLUICE_ATTACH_OPTS'
# shellcheck disable=SC2016
exec2='ExecStart=/usr/sbin/sluice run %I --interval 60 $SLUICE_FLEET_OPTS'
if grep -qxF "$exec1" "$unit" &&
	grep -qxF "$exec2" /usr/lib/systemd/system/sluice-fleet@.service; then
	ok "the installed units run /usr/sbin/sluice"
else
	not_ok "the installed units run /usr/sbin/sluice"
	diag "$(grep -h '^ExecStart' /usr/lib/systemd/system/sluice*@.service)"
fi
if [ "$(enabled_links)" = "$links_before" ]; then
	ok "dpkg -i enabled no unit (no new sluice* link under /etc/systemd/system)"
else
	not_ok "dpkg -i enabled no unit (no new sluice* link under /etc/systemd/system)"
	diag "$(enabled_links)"
fi
what="systemctl is-enabled: sluice@ and sluice-fleet@ are disabled"
if command -v systemctl >/dev/null; then
	en=$(systemctl --root=/ is-enabled sluice@.service sluice-fleet@.service 2>&1 | tr '\n' ' ')
	if [ "$en" = "disabled disabled " ]; then
		ok "$what"
	else
		not_ok "$what"
		diag "got: $en"
	fi
else
	skip "systemctl is not installed" "$what"
fi

# systemd-analyze verify on instances of the installed templates (the
# interface lo), as systemd would instantiate them; it checks that
# ExecStart's binary exists and, through man(1), Documentation=.
if ! command -v systemd-analyze >/dev/null || ! systemd-analyze --version >/dev/null 2>&1; then
	skip "systemd-analyze is not installed (Debian package 'systemd')" \
		"systemd-analyze verify on the installed units"
else
	man_opt=()
	command -v man >/dev/null || man_opt=(--man=no)
	mkdir -p "$tmp/units"
	for u in sluice@ sluice-fleet@; do
		ln -s "/usr/lib/systemd/system/$u.service" "$tmp/units/${u}lo.service"
		what="systemd-analyze verify ${u}lo.service (installed): no error, no warning"
		if out=$(systemd-analyze verify "${man_opt[@]}" "$tmp/units/${u}lo.service" 2>&1) &&
			[ -z "$out" ]; then
			ok "$what"
		else
			not_ok "$what"
			diag "$out"
		fi
	done
fi

# ---- the installed sluice on a lab veth ----

netns_setup deb 95 || { not_ok "build the namespaces and the veth pair"; exit 1; }

rules_json() { rx_ctl -i "$IF_RX" -j rule list 2>/dev/null; }
rate_of() { jq -r --arg m "$1" '.[] | select(.match == $m) | .packets.rate' <<<"$2" 2>/dev/null; }
keys_used() { rx_sluice -j status "$IF_RX" 2>/dev/null | jq -r '.interfaces[0].key_table.used'; }
# send N: N UDP datagrams from the sender to the receiver (bash's /dev/udp).
send() {
	local i
	for ((i = 0; i < $1; i++)); do
		ip netns exec "$NS_TX" bash -c "echo x >/dev/udp/$ADDR4_RX/9" 2>/dev/null
	done
}

expect_status 0 "installed sluice attach IF --rate 100/s" rx_sluice attach "$IF_RX" --rate 100/s ||
	exit 1
expect_status 0 "installed sluicectl rule add 198.18.95.0/24 --rate 7/s" \
	rx_ctl -i "$IF_RX" rule add 198.18.95.0/24 --rate 7/s
send 3
for i in $(seq 50); do [ "$(keys_used)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
keys1=$(keys_used)
prog1=$(xdp_prog_id)
status=$(rx_sluice -j status "$IF_RX" 2>&1)
if [ -n "$prog1" ] && [ "$(jq -r '.interfaces[0].attached' <<<"$status" 2>/dev/null)" = true ] &&
	[ "$(jq -r '.interfaces[0].policy.packets.rate' <<<"$status" 2>/dev/null)" = 100/s ] &&
	[ "$keys1" -ge 1 ] 2>/dev/null; then
	ok "sluice status -j: attached (program $prog1), 100/s, the sender's key in the table"
else
	not_ok "sluice status -j: attached, 100/s, the sender's key in the table"
	diag "XDP program: ${prog1:-none}; $status"
fi

# ---- dpkg -i of a newer version: the limiter stays as it is ----

wait "$V2_PID"
st=$?
BG_PIDS=("$LINTIAN_PID")
if [ "$st" = 0 ] && [ -f "$DEB2" ]; then
	ok "make deb DEB_VERSION=$V2 made sluice_${V2}_$ARCH.deb"
	expect_status 0 "dpkg -i sluice_${V2}_$ARCH.deb (an upgrade)" dpkg -i "$DEB2"
	ver=$(dpkg-query -W -f '${Version}' sluice 2>&1)
	if [ "$ver" = "$V2" ]; then ok "dpkg says $V2 is installed"
	else not_ok "dpkg says $V2 is installed"; diag "got: $ver"; fi
	prog2=$(xdp_prog_id)
	rules=$(rules_json)
	keys2=$(keys_used)
	what="the upgrade left the limiter attached: same program, 100/s, its rule at 7/s, its keys"
	if [ "$prog2" = "$prog1" ] && [ "$(rate_of default "$rules")" = 100/s ] &&
		[ "$(rate_of 198.18.95.0/24 "$rules")" = 7/s ] && [ "$keys2" -ge "$keys1" ]; then
		ok "$what"
	else
		not_ok "$what"
		diag "XDP program ${prog2:-none} (was $prog1); keys $keys2 (were $keys1)"
		diag "rules: $rules"
	fi
	# The new sluice's attach: the upgrade in place, every rule and bucket kept.
	if expect_status 0 "the upgraded sluice's attach IF" rx_sluice attach "$IF_RX"; then
		rules=$(rules_json)
		if grep -q 'upgraded' <<<"$OUT" && [ "$(rate_of 198.18.95.0/24 "$rules")" = 7/s ] &&
			[ "$(keys_used)" -ge "$keys1" ] && [ -n "$(xdp_prog_id)" ]; then
			ok "it upgrades in place: rule and key kept"
		else
			not_ok "it upgrades in place: rule and key kept"
			diag "$OUT"
			diag "keys $(keys_used); rules: $rules"
		fi
	fi
else
	not_ok "make deb DEB_VERSION=$V2 made sluice_${V2}_$ARCH.deb"
	diag "exit status $st: $(tail -n 20 "$tmp/v2.log")"
fi

expect_status 0 "installed sluice detach IF" rx_sluice detach "$IF_RX"
if [ ! -e "$RX_PINS" ] && [ -z "$(xdp_prog_id)" ]; then
	ok "detach removed the program and the pins ($RX_PINS)"
else
	not_ok "detach removed the program and the pins ($RX_PINS)"
	diag "XDP program: $(xdp_prog_id); $(ls -A "$RX_PINS" 2>&1)"
fi

# ---- lintian ----

wait "$LINTIAN_PID"
BG_PIDS=()
# Lintian's own chatter about running as root is not a finding.
findings=$(grep -v 'running with root privileges' "$tmp/lintian.out")
if ! grep -qE '^[EW]: ' <<<"$findings"; then
	ok "lintian sluice_${VERSION}_$ARCH.deb: no error, no warning"
	[ -z "$findings" ] || diag "$findings"
else
	not_ok "lintian sluice_${VERSION}_$ARCH.deb: no error, no warning"
	diag "$findings"
fi

# ---- dpkg -r, dpkg -P ----

# gone WHAT PATH...: none of PATH exists.
gone() {
	local what=$1 f found=
	shift
	for f in "$@"; do [ -e "$f" ] || [ -L "$f" ] && found="$found $f"; done
	if [ -z "$found" ]; then ok "$what"; else not_ok "$what"; diag "left:$found"; fi
}
pkg_files=$(grep -vxF /etc/sluice/sluice.conf.example <<<"$files")
expect_status 0 "dpkg -r sluice" dpkg -r sluice
# shellcheck disable=SC2086
gone "dpkg -r removed every file but the conffile (binaries, units, man pages, docs)" $pkg_files
if [ -f /etc/sluice/sluice.conf.example ] &&
	[ "$(dpkg-query -W -f '${Status}' sluice 2>/dev/null)" = "deinstall ok config-files" ]; then
	ok "dpkg -r kept the conffile /etc/sluice/sluice.conf.example (config-files)"
else
	not_ok "dpkg -r kept the conffile /etc/sluice/sluice.conf.example (config-files)"
	diag "status: $(dpkg-query -W -f '${Status}' sluice 2>&1)"
fi
expect_status 0 "dpkg -P sluice" dpkg -P sluice && INSTALLED=0
# shellcheck disable=SC2086
gone "dpkg -P left nothing: no file of the package, no /etc/sluice, no doc directory, no pins" \
	$files /etc/sluice /usr/share/doc/sluice "$RX_PINS"
if ! dpkg-query -W sluice >/dev/null 2>&1; then
	ok "dpkg has forgotten sluice"
else
	not_ok "dpkg has forgotten sluice"
	diag "$(dpkg-query -W -f '${Status}' sluice 2>&1)"
fi
if [ "$(enabled_links)" = "$links_before" ]; then
	ok "no sluice* link left under /etc/systemd/system"
else
	not_ok "no sluice* link left under /etc/systemd/system"
	diag "$(enabled_links)"
fi

tap_done
