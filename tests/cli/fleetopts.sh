#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `sluice run`'s fleet options are checked before anything touches the
# interface (issue 20, B13, C23): a bad --redis address is a usage error
# (exit 2) and a bad password file a file problem (exit 1), each named,
# with nothing attached, pinned or detached on the way. The first half needs
# no root (an interface nobody has: the options are refused first); the
# second runs each case on a veth in a namespace of its own and checks that
# run printed no attach and left no program and no pins.
set -u
source tests/lib/tap.sh

if [ ! -x "$SLUICE" ]; then
	skip "sluice is not built ($SLUICE): run 'make'" "sluice run's fleet options"
	exit 0
fi

IF="cfnone$$"
TMP=$(mktemp -d /tmp/sluice-fleetopts.XXXXXX) || exit 1
NS=
cleanup() {
	rm -rf "$TMP"
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT

BAD_ADDRS=("host:99999" "127.0.0.1:0" "unix:" "[::1" ":6379" "127.0.0.1:abc")
printf 's3cret\n' >"$TMP/pw-open"
chmod 644 "$TMP/pw-open"
: >"$TMP/pw-empty"
chmod 600 "$TMP/pw-empty"
# case name, the file, what the message says
PW_CASES=("mode 0644|$TMP/pw-open|chmod 600"
	"empty|$TMP/pw-empty|is empty"
	"missing|$TMP/pw-missing|No such file")

# usage NAME PATTERN ARGS...: sluice ARGS exits 2 and says PATTERN.
usage() { local n=$1 p=$2; shift 2; expect_usage "$n" "$p" "$SLUICE" "$@"; }

for a in "${BAD_ADDRS[@]}"; do
	usage "run --redis '$a'" "Redis address '$a'" run "$IF" --fleet x --redis "$a"
done
for c in "${PW_CASES[@]}"; do
	IFS='|' read -r what file pat <<<"$c"
	expect_status 1 "run with a password file $what: exit status 1" \
		"$SLUICE" run "$IF" --fleet x --redis unix:/run/none.sock \
		--redis-password-file "$file" &&
		if grep -qF -- "$file" <<<"$OUT" && grep -qF -- "$pat" <<<"$OUT" &&
			! grep -q "there is no interface" <<<"$OUT"; then
			ok "run with a password file $what: says so, before the interface"
		else
			not_ok "run with a password file $what: says so, before the interface"
			diag "$OUT"
		fi
done
# C23: the option given without --redis is named, and what is missing.
usage "run --sync-interval without --redis" \
	"--sync-interval belongs to the fleet agent, which needs --redis ADDR and --fleet NAME" \
	run "$IF" --sync-interval 1s
usage "run --fleet without --redis" "--fleet belongs to the fleet agent, which needs --redis" \
	run "$IF" --fleet x
usage "run --fleet-max 0" "--fleet-max is 0" run "$IF" --fleet x --redis unix:/r --fleet-max 0
usage "run --fleet-max over 65536" "--fleet-max" run "$IF" --fleet x --redis unix:/r \
	--fleet-max 65537
usage "run --fleet-size above --fleet-max" "--fleet-size 20 is more than --fleet-max 10" \
	run "$IF" --fleet x --redis unix:/r --fleet-size 20 --fleet-max 10

# On an interface that exists: nothing attached on the way.
if [ "$(id -u)" != 0 ]; then
	skip "needs root (an interface in a namespace of our own)" \
		"run with bad fleet options leaves the interface untouched"
	tap_done
	exit
fi
NS="cf-opts-$$"
IFA="cfa$$"
if ! ip netns add "$NS" 2>/dev/null ||
	! ip -n "$NS" link add "$IFA" type veth peer name "cfb$$" ||
	! ip -n "$NS" link set "$IFA" up || ! ip -n "$NS" link set "cfb$$" up; then
	skip "could not create a network namespace" \
		"run with bad fleet options leaves the interface untouched"
	tap_done
	exit
fi
PINS="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS")/$IFA"
printf 'set --rate 100/s --burst 10 --fleet on\n' >"$TMP/fleet.conf"

# untouched NAME: run printed no attach or detach, and left no program or pins.
untouched() {
	if grep -qiE "attached|detached" <<<"$OUT" || [ -e "$PINS" ] ||
		ip -n "$NS" link show "$IFA" | grep -q xdp; then
		not_ok "$1: nothing attached, pinned or detached"
		diag "$OUT"
		nsenter --net="/var/run/netns/$NS" "$SLUICE" detach "$IFA" >/dev/null 2>&1
	else
		ok "$1: nothing attached, pinned or detached"
	fi
}
inns() { nsenter --net="/var/run/netns/$NS" "$@"; }

for a in "${BAD_ADDRS[@]}"; do
	expect_status 2 "run IF --config --redis '$a': exit status 2" \
		inns timeout 20 "$SLUICE" run "$IFA" --config "$TMP/fleet.conf" --fleet x \
		--redis "$a"
	untouched "run IF --config --redis '$a'"
done
for c in "${PW_CASES[@]}"; do
	IFS='|' read -r what file pat <<<"$c"
	expect_status 1 "run IF --config, a password file $what: exit status 1" \
		inns timeout 20 "$SLUICE" run "$IFA" --config "$TMP/fleet.conf" --fleet x \
		--redis "unix:$TMP/none.sock" --redis-password-file "$file"
	untouched "run IF --config, a password file $what"
done

tap_done
