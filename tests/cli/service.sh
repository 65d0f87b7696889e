#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# What `make install` ships: the binaries print the version of the file
# VERSION and the map layout, the systemd unit sluice@.service names the
# installed sluice and passes `systemd-analyze verify`, the licenses and the
# example config are in the documentation directory, and `make uninstall`
# removes every file install put there. Nothing here needs root.
set -u
source tests/lib/tap.sh

for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "sluice is not built ($b): run 'make'" "install and service"
		exit 0
	fi
done

VERSION=$(cat VERSION)
LAYOUT=$(sed -n 's/^#define SLUICE_LAYOUT_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
	include/sluice/sluice.h)
if [ -z "$VERSION" ] || [ -z "$LAYOUT" ]; then
	not_ok "read VERSION ('$VERSION') and SLUICE_LAYOUT_VERSION ('$LAYOUT')"
	exit 1
fi

tmp=$(mktemp -d /tmp/sluice-install.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
# The tree may belong to someone else: the temporary files must be readable by
# the unprivileged user below.
chmod 0755 "$tmp"

# as_user CMD...: CMD without root (as nobody when we are root), so it can
# touch neither bpffs nor the network. Its binary is copied into $tmp, which
# nobody can read whatever the tree's permissions.
as_user() {
	local bin=$tmp/bin/$(basename "$1")
	shift
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" "$@"
	else
		"$bin" "$@"
	fi
}
mkdir -p "$tmp/bin" && cp "$SLUICE" "$SLUICECTL" "$tmp/bin/" && chmod -R a+rX "$tmp/bin"

# version_is NAME WANT CMD...: CMD exits 0 and prints exactly the line WANT.
version_is() {
	local name=$1 want=$2
	shift 2
	expect_status 0 "$name: exit status 0" "$@" || return
	if [ "$OUT" = "$want" ]; then
		ok "$name: prints '$want'"
	else
		not_ok "$name: prints '$want'"
		diag "got: $OUT"
	fi
}

# ---- the built binaries ----

version_is "sluice --version, without root" "sluice $VERSION (map layout $LAYOUT)" \
	as_user "$SLUICE" --version
version_is "sluice -V, without root" "sluice $VERSION (map layout $LAYOUT)" as_user "$SLUICE" -V
version_is "sluicectl --version, without root" "sluicectl $VERSION (map layout $LAYOUT)" \
	as_user "$SLUICECTL" --version
version_is "sluicectl -V" "sluicectl $VERSION (map layout $LAYOUT)" "$SLUICECTL" -V
for p in "$SLUICE" "$SLUICECTL"; do
	n=$(basename "$p")
	expect_status 0 "$n help: exit status 0" "$p" help
	if grep -qE -- '-V, --version' <<<"$OUT" && grep -qE -- "^ +$n --version" <<<"$OUT"; then
		ok "$n help names -V, --version"
	else
		not_ok "$n help names -V, --version"
		diag "$OUT"
	fi
done

# ---- make install DESTDIR=... PREFIX=/usr: a staged install ----

mk() { make -s --no-print-directory BUILD="$BUILD" "$@"; }

dest=$tmp/dest
if ! expect_status 0 "make install DESTDIR=... PREFIX=/usr" mk install DESTDIR="$dest" PREFIX=/usr
then
	tap_done
	exit
fi

# has MODE PATH...: each PATH (under $dest) is a regular file with permissions MODE.
has() {
	local mode=$1 f got bad=
	shift
	for f in "$@"; do
		got=$(stat -c %a "$dest$f" 2>/dev/null)
		[ -f "$dest$f" ] && [ "$got" = "$mode" ] || bad+=" $f(${got:-missing})"
	done
	if [ -z "$bad" ]; then
		ok "installed, mode $mode: $*"
	else
		not_ok "installed, mode $mode: $*"
		diag "missing or with another mode:$bad"
	fi
}
has 755 /usr/sbin/sluice /usr/sbin/sluicectl
has 644 /usr/share/man/man8/sluice.8 /usr/share/man/man8/sluicectl.8
has 644 /usr/lib/systemd/system/sluice@.service /usr/lib/systemd/system/sluice-fleet@.service
has 644 /usr/share/doc/sluice/LICENSE /usr/share/doc/sluice/LICENSES/GPL-2.0-only.txt \
	/usr/share/doc/sluice/LICENSES/BSD-2-Clause.txt /usr/share/doc/sluice/sluice.conf.example

for f in LICENSE LICENSES/GPL-2.0-only.txt LICENSES/BSD-2-Clause.txt; do
	check "installed $f is the tree's" cmp "$f" "$dest/usr/share/doc/sluice/$f"
done
check "installed sluice.conf.example is the tree's" \
	cmp etc/sluice.conf.example "$dest/usr/share/doc/sluice/sluice.conf.example"
check "installed sluice is the built one" cmp "$SLUICE" "$dest/usr/sbin/sluice"
check "installed sluicectl is the built one" cmp "$SLUICECTL" "$dest/usr/sbin/sluicectl"

# The licenses are the ones the SPDX lines name.
spdx='(GPL-2.0-only OR BSD-2-Clause)'
if grep -qF "SPDX-License-Identifier: $spdx" LICENSE && grep -q 'dual-licensed' LICENSE &&
	grep -qF 'LICENSES/GPL-2.0-only.txt' LICENSE && grep -qF 'LICENSES/BSD-2-Clause.txt' LICENSE
then
	ok "LICENSE says the project is dual-licensed $spdx and names both texts"
else
	not_ok "LICENSE says the project is dual-licensed $spdx and names both texts"
fi
if [ -r /usr/share/common-licenses/GPL-2 ]; then
	check "LICENSES/GPL-2.0-only.txt is the GPL version 2" \
		cmp /usr/share/common-licenses/GPL-2 LICENSES/GPL-2.0-only.txt
else
	skip "/usr/share/common-licenses/GPL-2 is missing (package base-files)" \
		"LICENSES/GPL-2.0-only.txt is the GPL version 2"
fi
if grep -qF 'Copyright (c) 2026 The sluice authors' LICENSES/BSD-2-Clause.txt &&
	grep -qF 'Redistributions in binary form must reproduce' LICENSES/BSD-2-Clause.txt &&
	! grep -qi 'neither the name' LICENSES/BSD-2-Clause.txt; then
	ok "LICENSES/BSD-2-Clause.txt: the 2-clause text with the sluice copyright"
else
	not_ok "LICENSES/BSD-2-Clause.txt: the 2-clause text with the sluice copyright"
fi
# Every file of the tree (tracked, or new and not ignored) that has an SPDX
# line has this one.
if files=$(git ls-files --cached --others --exclude-standard 2>/dev/null) && [ -n "$files" ]; then
	others=$(while IFS= read -r f; do
		[ -f "$f" ] && grep -q 'SPDX-License-Identifier:' "$f" &&
			! grep -qF "SPDX-License-Identifier: $spdx" "$f" && echo "$f"
	done <<<"$files")
	if [ -z "$others" ]; then
		ok "every SPDX line in the tree says $spdx"
	else
		not_ok "every SPDX line in the tree says $spdx"
		diag "others: $others"
	fi
else
	skip "not a git checkout" "every SPDX line in the tree says $spdx"
fi

# The unit names the installed sluice, without DESTDIR, and has the design's
# lines: a oneshot that stays active, and no ExecStop (a restart must upgrade
# in place, never detach).
unit=$dest/usr/lib/systemd/system/sluice@.service
if grep -q '@[A-Z]*@' "$unit"; then
	not_ok "the installed unit has no @...@ left"
	diag "$(grep -n '@[A-Z]*@' "$unit")"
else
	ok "the installed unit has no @...@ left"
fi
# unit_line NAME LINE: the installed unit has exactly this line.
unit_line() {
	if grep -qxF -- "$2" "$unit"; then
		ok "unit: $1"
	else
		not_ok "unit: $1"
		diag "no line '$2' in:"
		diag "$(grep -v '^#' "$unit")"
	fi
}
unit_line "ExecStart attaches with the instance's config" \
	'ExecStart=/usr/sbin/sluice attach %I --config /etc/sluice/%I.conf $SLUICE_ATTACH_OPTS'
unit_line "ExecReload reloads the instance's config" \
	'ExecReload=/usr/sbin/sluice reload %I --config /etc/sluice/%I.conf'
unit_line "Type=oneshot" 'Type=oneshot'
unit_line "RemainAfterExit=yes" 'RemainAfterExit=yes'
unit_line "optional EnvironmentFile" 'EnvironmentFile=-/etc/sluice/%I.env'
# A missing config fails the start (its attach refuses it: tests/net/service.sh),
# never skips it silently (a Condition reports success) and leaves the unit
# failed (an Assert would leave it inactive).
if grep -qE '^[[:space:]]*(Condition|Assert)' "$unit"; then
	not_ok "unit: no Condition or Assert (a missing file fails the unit, never skips it)"
	diag "$(grep -nE '^[[:space:]]*(Condition|Assert)' "$unit")"
else
	ok "unit: no Condition or Assert (a missing file fails the unit, never skips it)"
fi
unit_line "BindsTo the interface" 'BindsTo=sys-subsystem-net-devices-%i.device'
unit_line "After the interface" 'After=sys-subsystem-net-devices-%i.device'
# Before the network for real: without DefaultDependencies=no the unit would
# be after basic.target (late, and a cycle where /var is on the network).
unit_line "DefaultDependencies=no (else it cannot order before the network)" \
	'DefaultDependencies=no'
unit_line "After=local-fs.target (what the defaults gave that it needs)" \
	'After=local-fs.target'
unit_line "Before=network-pre.target (and shutdown.target)" \
	'Before=network-pre.target shutdown.target'
unit_line "Wants=network-pre.target" 'Wants=network-pre.target'
unit_line "Conflicts=shutdown.target" 'Conflicts=shutdown.target'
unit_line "WantedBy=multi-user.target" 'WantedBy=multi-user.target'
unit_line "Documentation" 'Documentation=man:sluice(8) man:sluicectl(8)'
if grep -qE '^[[:space:]]*ExecStop(Post)?=' "$unit"; then
	not_ok "unit: no ExecStop (stop and restart never detach)"
	diag "$(grep -nE '^[[:space:]]*ExecStop' "$unit")"
else
	ok "unit: no ExecStop (stop and restart never detach)"
fi

version_is "installed sluice --version" "sluice $VERSION (map layout $LAYOUT)" \
	"$dest/usr/sbin/sluice" --version
version_is "installed sluicectl --version" "sluicectl $VERSION (map layout $LAYOUT)" \
	"$dest/usr/sbin/sluicectl" --version

# UNITDIR moves the unit, and only the unit.
dest2=$tmp/dest2
if expect_status 0 "make install UNITDIR=/etc/systemd/system" \
	mk install DESTDIR="$dest2" PREFIX=/usr UNITDIR=/etc/systemd/system; then
	if [ -f "$dest2/etc/systemd/system/sluice@.service" ] &&
		[ ! -e "$dest2/usr/lib/systemd" ] && [ -x "$dest2/usr/sbin/sluice" ]; then
		ok "UNITDIR=/etc/systemd/system puts the unit there"
	else
		not_ok "UNITDIR=/etc/systemd/system puts the unit there"
		diag "$(cd "$dest2" && find . -type f)"
	fi
fi

# ---- make uninstall: every file install put there is gone ----

# none_left NAME DIR: no file or link is left under DIR.
none_left() {
	local rest
	rest=$(cd "$2" && find . ! -type d | sort)
	if [ -z "$rest" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "left: $rest"
	fi
}
if expect_status 0 "make uninstall DESTDIR=... PREFIX=/usr" \
	mk uninstall DESTDIR="$dest" PREFIX=/usr; then
	none_left "uninstall removed every installed file" "$dest"
	if [ ! -e "$dest/usr/share/doc/sluice" ]; then
		ok "uninstall removed the doc directory"
	else
		not_ok "uninstall removed the doc directory"
	fi
fi
if expect_status 0 "make uninstall UNITDIR=/etc/systemd/system" \
	mk uninstall DESTDIR="$dest2" PREFIX=/usr UNITDIR=/etc/systemd/system; then
	none_left "uninstall with UNITDIR removed every installed file" "$dest2"
fi
# What is not sluice's survives uninstall, in the directories it shares.
mkdir -p "$dest/usr/sbin" "$dest/usr/share/doc/sluice"
echo keep >"$dest/usr/sbin/other"
echo keep >"$dest/usr/share/doc/sluice/notes"
mk uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1
if [ -f "$dest/usr/sbin/other" ] && [ -f "$dest/usr/share/doc/sluice/notes" ]; then
	ok "uninstall leaves other files alone"
else
	not_ok "uninstall leaves other files alone"
fi

# ---- systemd-analyze verify, on a real install (no DESTDIR) ----
# verify checks that ExecStart's binary exists, so the unit must name a
# sluice that is installed: PREFIX points into the temporary directory.

prefix=$tmp/prefix
if ! command -v systemd-analyze >/dev/null; then
	skip "systemd-analyze is not installed (Debian package 'systemd')" \
		"systemd-analyze verify sluice@lo.service"
elif expect_status 0 "make install PREFIX=TMP" mk install PREFIX="$prefix"; then
	udir=$prefix/lib/systemd/system
	want="ExecStart=$prefix/sbin/sluice attach %I --config /etc/sluice/%I.conf"
	if grep -qxF "$want \$SLUICE_ATTACH_OPTS" "$udir/sluice@.service"; then
		ok "PREFIX=TMP: ExecStart names TMP/sbin/sluice"
	else
		not_ok "PREFIX=TMP: ExecStart names TMP/sbin/sluice"
		diag "$(grep -n '^Exec' "$udir/sluice@.service")"
	fi
	# An instance of the template (the interface lo), as systemd would
	# instantiate it. Documentation= is checked with man(1) when it is
	# there: MANPATH makes it find the man pages just installed.
	ln -s sluice@.service "$udir/sluice@lo.service"
	man_opt=()
	if command -v man >/dev/null; then
		export MANPATH=$prefix/share/man
	else
		man_opt=(--man=no)
		diag "man(1) is not installed: verify does not check Documentation="
	fi
	verify() { # verify UNIT: exit status 0 and not one warning
		local out
		out=$(systemd-analyze verify "${man_opt[@]}" "$1" 2>&1) && [ -z "$out" ]
		local st=$?
		[ -n "$out" ] && diag "$out"
		return $st
	}
	if verify "$udir/sluice@lo.service"; then
		ok "systemd-analyze verify sluice@lo.service: no error, no warning"
	else
		not_ok "systemd-analyze verify sluice@lo.service: no error, no warning"
	fi
	# verify itself must be able to fail here: the same unit naming a
	# sluice that is not there.
	mkdir -p "$tmp/broken"
	sed "s|^ExecStart=$prefix/sbin/sluice|ExecStart=$prefix/sbin/nothing|" \
		"$udir/sluice@.service" >"$tmp/broken/sluice@lo.service"
	if verify "$tmp/broken/sluice@lo.service" >/dev/null; then
		not_ok "systemd-analyze verify refuses the unit when its sluice is missing"
	else
		ok "systemd-analyze verify refuses the unit when its sluice is missing"
	fi
	rm -f "$udir/sluice@lo.service"
	# The fleet agent's unit: the installed sluice's run, after the limiter.
	want="ExecStart=$prefix/sbin/sluice run %I --interval 60 \$SLUICE_FLEET_OPTS"
	if grep -qxF "$want" "$udir/sluice-fleet@.service" &&
		grep -qxF 'Requires=sluice@%i.service' "$udir/sluice-fleet@.service"; then
		ok "sluice-fleet@: runs TMP/sbin/sluice run after sluice@ of the same interface"
	else
		not_ok "sluice-fleet@: runs TMP/sbin/sluice run after sluice@ of the same interface"
		diag "$(grep -n '^Exec\|^Requires' "$udir/sluice-fleet@.service")"
	fi
	if grep -qxF 'AssertPathExists=/etc/sluice/%I.fleet' "$udir/sluice-fleet@.service" &&
		! grep -qE '^[[:space:]]*Condition' "$udir/sluice-fleet@.service"; then
		ok "sluice-fleet@: a missing .fleet fails the start (AssertPathExists, no Condition)"
	else
		not_ok "sluice-fleet@: a missing .fleet fails the start (AssertPathExists, no Condition)"
		diag "$(grep -nE '^(Assert|Condition)' "$udir/sluice-fleet@.service")"
	fi
	ln -s sluice@.service "$udir/sluice@lo.service"
	ln -s sluice-fleet@.service "$udir/sluice-fleet@lo.service"
	if verify "$udir/sluice-fleet@lo.service"; then
		ok "systemd-analyze verify sluice-fleet@lo.service: no error, no warning"
	else
		not_ok "systemd-analyze verify sluice-fleet@lo.service: no error, no warning"
	fi
	rm -f "$udir/sluice@lo.service" "$udir/sluice-fleet@lo.service"

	# ---- the order at boot: systemd --test, the initial transaction ----
	# `systemd --test` builds the transaction a boot into a unit would
	# start and prints it, executing nothing (it refuses root: as nobody).
	# A boot here: the unit, a network manager ordered as systemd-networkd
	# and ifupdown order themselves (after network-pre.target), and /var on
	# the network (basic.target requires /var). The unit must be ordered
	# before the network manager with no ordering cycle: with the default
	# dependencies it is after basic.target, hence after /var, after the
	# network, after itself, and systemd deletes jobs to break the cycle.
	boot_test() { # boot_test UNIT: the transaction's dump, in $BOOT
		local as=()
		[ "$(id -u)" = 0 ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		BOOT=$(SYSTEMD_UNIT_PATH=$bdir: "${as[@]}" "$systemd" --test --system \
			--unit="$1" --no-pager 2>&1)
	}
	systemd=/lib/systemd/systemd
	bdir=$tmp/boot
	mkdir -p "$bdir" && chmod 0755 "$bdir"
	cp "$udir/sluice@.service" "$bdir/"
	cat >"$bdir/sluice-test-net.service" <<-'EOF'
		[Unit]
		Description=a network manager, ordered as systemd-networkd and ifupdown are
		DefaultDependencies=no
		After=network-pre.target
		Before=network.target
		Wants=network.target
		[Service]
		Type=oneshot
		ExecStart=/bin/true
	EOF
	cat >"$bdir/var.mount" <<-'EOF'
		[Unit]
		Description=/var on the network
		After=network.target
		[Mount]
		What=198.18.0.1:/var
		Where=/var
		Type=nfs
	EOF
	cat >"$bdir/sluice-test-boot.target" <<-'EOF'
		[Unit]
		Description=a boot: the limiter, the network, the basic system
		Wants=sluice@lo.service sluice-test-net.service basic.target
	EOF
	chmod 0644 "$bdir"/*
	if [ ! -x "$systemd" ] || ! boot_test sluice@lo.service ||
		! grep -q '^-> By jobs:' <<<"$BOOT"; then
		skip "'$systemd --test' does not run here: $(head -3 <<<"$BOOT")" \
			"the unit's order at boot (systemd --test)"
	else
		# The unit alone: its transaction pulls in nothing of the basic
		# system (no sysinit.target, no basic.target).
		jobs=$(sed -n '/^-> By jobs:/,$p' <<<"$BOOT" | sed -n 's/.*Action: \(.*\) -> start/\1/p')
		if grep -q 'sluice@lo.service' <<<"$jobs" &&
			! grep -qxE 'sysinit.target|basic.target' <<<"$jobs"; then
			ok "boot order: starting the unit pulls in neither sysinit.target nor basic.target"
		else
			not_ok "boot order: starting the unit pulls in neither sysinit.target nor basic.target"
			diag "its jobs: $(echo $jobs)"
		fi
		unit_dump=$(awk '/^\t-> Unit sluice@lo.service:/ { p = 1; next }
			p && /^\t-> Unit / { exit } p' <<<"$BOOT")
		if grep -qx $'\t\tBefore: network-pre.target (origin-file)' <<<"$unit_dump" &&
			grep -qx $'\t\tWants: network-pre.target (origin-file)' <<<"$unit_dump"; then
			ok "boot order: the unit is before network-pre.target, and pulls it in"
		else
			not_ok "boot order: the unit is before network-pre.target, and pulls it in"
			diag "$(grep -E 'Before|After|Wants' <<<"$unit_dump")"
		fi
		boot_test sluice-test-boot.target
		if grep -qi 'ordering cycle' <<<"$BOOT"; then
			not_ok "boot order: a boot with /var on the network has no ordering cycle"
			diag "$(grep -i -E 'cycle|deleted' <<<"$BOOT" | head -12)"
		else
			ok "boot order: a boot with /var on the network has no ordering cycle"
		fi
		jobs=$(sed -n '/^-> By jobs:/,$p' <<<"$BOOT" | sed -n 's/.*Action: \(.*\) -> start/\1/p')
		if grep -qx 'sluice@lo.service' <<<"$jobs" &&
			grep -qx 'sluice-test-net.service' <<<"$jobs" &&
			grep -qx 'network-pre.target' <<<"$jobs"; then
			ok "boot order: the boot starts the unit, network-pre.target and the network manager"
		else
			not_ok "boot order: the boot starts the unit, network-pre.target and the network manager"
			diag "jobs: $(echo $jobs)"
		fi
	fi
	if expect_status 0 "make uninstall PREFIX=TMP" mk uninstall PREFIX="$prefix"; then
		none_left "uninstall PREFIX=TMP removed every installed file" "$prefix"
	fi
fi

tap_done
