#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The loader refuses bad input with exit status 2 and a message that names the
# problem, before it touches an interface. Nothing here needs root except the
# --config case, which uses an interface in a namespace of its own.
set -u
source tests/lib/tap.sh

if [ ! -x "$SLUICE" ]; then
	skip "sluice is not built ($SLUICE): run 'make'" "sluice usage errors"
	exit 0
fi

# An interface name nobody has: the loader must refuse the options first.
IF="ctnone$$"

# usage NAME PATTERN ARGS...: sluice ARGS exits 2 and says PATTERN.
usage() { local n=$1 p=$2; shift 2; expect_usage "$n" "$p" "$SLUICE" "$@"; }

usage "unknown global option" "unknown option '--frob'" --frob status
usage "unknown command" "unknown command 'frob'" frob
usage "unknown attach option" "unknown option '--frob'" attach "$IF" --frob
usage "unknown detach option" "unknown option '--frob'" detach "$IF" --frob
usage "status with a stray argument" "--frob" status --frob
usage "attach without IFACE" "missing IFACE" attach
usage "detach without IFACE" "missing IFACE" detach
usage "run without IFACE" "missing IFACE" run
usage "rate 0" "is zero" attach "$IF" --rate 0/s
usage "negative rate" "negative" attach "$IF" --rate -1/s
usage "decimal rate" "not a whole number" attach "$IF" --rate 1.5/s
usage "rate with an unknown unit" "unknown unit" attach "$IF" --rate 5parsecs
usage "rate overflowing u64" "too large" attach "$IF" --rate 99999999999999999999/s
usage "burst 0" "--burst is 0" attach "$IF" --rate 100/s --burst 0
usage "unknown mode" "--mode takes 'native' or 'skb', not 'turbo'" attach "$IF" --mode turbo
usage "mode without a value" "--mode" attach "$IF" --mode
usage "unknown algorithm" "unknown algorithm 'nope'" attach "$IF" --algo nope
usage "prefix4 out of range" "at most 32" attach "$IF" --prefix4 40
usage "run interval 0" "--interval" run "$IF" --interval 0

# Checks that need an interface that exists: a bad --config line is refused
# with FILE:LINE, a bad policy with what is wrong, and nothing is attached.
if [ "$(id -u)" = 0 ]; then
	ns="ct-cfg-$$"
	tmp=$(mktemp -d)
	pins=
	# Pins, if a refused attach made any: only what this test made
	# (tests/lib/netns.sh), removed while the namespace holds its inode.
	source tests/lib/netns.sh
	trap 'rm -rf "$tmp"; pins_release; ip netns del "$ns" 2>/dev/null' EXIT
	printf 'set --rate 100/s\nrule add 198.18.0.1/24 --rate 10/s\n' >"$tmp/bad.conf"
	if ip netns add "$ns" 2>/dev/null &&
		ip -n "$ns" link add "ctc$$" type veth peer name "ctp$$"; then
		pins="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$ns")/ctc$$"
		pins_watch "${pins%/*}" "$ns"
		expect_status 2 "attach --config with a bad line: exit status 2" \
			nsenter --net="/var/run/netns/$ns" "$SLUICE" attach "ctc$$" \
			--config "$tmp/bad.conf"
		if grep -qF "bad.conf:2: '198.18.0.1/24' has host bits set" <<<"$OUT"; then
			ok "attach --config with a bad line: names FILE:LINE and the problem"
		else
			not_ok "attach --config with a bad line: names FILE:LINE and the problem"
			diag "$OUT"
		fi
		expect_status 2 "attach with a burst whose refill overflows: exit status 2" \
			nsenter --net="/var/run/netns/$ns" "$SLUICE" attach "ctc$$" \
			--rate 1/h --burst 4000000000
		if grep -qF "too long to refill" <<<"$OUT"; then
			ok "attach with a burst whose refill overflows: says so"
		else
			not_ok "attach with a burst whose refill overflows: says so"
			diag "$OUT"
		fi
		if [ -e "$pins" ] ||
			ip -n "$ns" link show "ctc$$" | grep -q xdp; then
			not_ok "attach --config with a bad line: nothing is attached or pinned"
		else
			ok "attach --config with a bad line: nothing is attached or pinned"
		fi
	else
		skip "could not create a network namespace" "attach --config with a bad line"
	fi
else
	skip "needs root (an interface in a namespace of our own)" \
		"attach --config with a bad line"
fi

tap_done
