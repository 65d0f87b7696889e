#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice shape on the host: its help texts, its usage errors (exit 2, before
# anything is touched), the shaper's options refused by the limiter's
# commands, shape:IFACE refused by run and reload; then, with root, on a veth
# of a namespace of our own: an operator's root qdisc refused and left alone,
# and on a kernel without fq (this host: CONFIG_NET_SCH_FQ unset) attach fails
# with exit 1 naming CONFIG_NET_SCH_FQ and sch_fq and leaves nothing behind.
# What needs fq runs in a guest: tests/shape/loader.sh.
set -u
source tests/lib/tap.sh

if [ ! -x "$SLUICE" ]; then
	skip "$SLUICE is not built: run 'make'" "sluice shape"
	exit 0
fi
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}

# ---- help ----
expect_status 0 "shape help: exit 0" "$SLUICE" shape help
help=$OUT
has "shape help: names shape attach" "sluice shape attach IFACE" "$help"
has "shape help: names shape detach" "sluice shape detach IFACE [--keep-state]" "$help"
has "shape help: names shape status" "sluice shape status [-j] [IFACE]" "$help"
has "shape help: says the default horizon" "longest queue of the policies x 1.25, at least 1s" "$help"
has "shape help: names the fq handle" "handle 51ce:" "$help"
expect_status 0 "help shape: exit 0" "$SLUICE" help shape
if [ "$OUT" = "$help" ]; then ok "help shape: the same text"; else not_ok "help shape: the same text"; fi
expect_status 0 "shape attach help: exit 0" "$SLUICE" shape attach help
if [ "$OUT" = "$help" ]; then ok "shape attach help: the same text"; else not_ok "shape attach help: the same text"; fi
expect_status 0 "shape detach help: exit 0" "$SLUICE" shape detach help
has "shape detach help: says which filter it removes" "only if its" "$OUT"
expect_status 0 "shape status help: exit 0" "$SLUICE" shape status help
has "shape status help: names the delay counters" "horizon_dropped" "$OUT"
expect_status 0 "sluice help: lists shape" "$SLUICE" help
has "sluice help: lists shape attach" "sluice shape attach IFACE" "$OUT"

# ---- usage errors: exit 2 ----
expect_usage "shape with no command" "shape attach" "$SLUICE" shape
expect_usage "shape frob" "unknown command 'shape frob'" "$SLUICE" shape frob
expect_usage "shape attach without IFACE" "missing IFACE" "$SLUICE" shape attach
expect_usage "shape attach --bogus" "unknown option '--bogus' for 'sluice shape attach'" \
	"$SLUICE" shape attach eth0 --bogus
expect_usage "shape attach --key other" "--key takes 'src'" "$SLUICE" shape attach eth0 --key other
expect_usage "shape attach --horizon 0" "--horizon" "$SLUICE" shape attach eth0 --horizon 0
expect_usage "shape attach --horizon 2h" "1us to 71m" "$SLUICE" shape attach eth0 --horizon 2h
expect_usage "shape attach --horizon soon" "--horizon" "$SLUICE" shape attach eth0 --horizon soon
expect_usage "shape attach --queue-limit 0" "--queue-limit is 0" \
	"$SLUICE" shape attach eth0 --queue-limit 0
expect_usage "shape attach --mode skb" "a shaper runs at tc egress" \
	"$SLUICE" shape attach eth0 --mode skb
expect_usage "shape attach --fleet-keys" "--fleet-keys is the limiter's" \
	"$SLUICE" shape attach eth0 --fleet-keys 10
expect_usage "shape attach --redis" "--redis is an option of 'sluice run'" \
	"$SLUICE" shape attach eth0 --redis 127.0.0.1:6379
expect_usage "shape attach --delay then --nodelay" "--nodelay and --delay exclude each other" \
	"$SLUICE" shape attach eth0 --rate 10/s --delay 2 --nodelay
expect_usage "shape attach --resume --fresh" "exclude each other" \
	"$SLUICE" shape attach eth0 --resume --fresh
expect_usage "shape attach shape:eth0" "shaper's state" "$SLUICE" shape attach shape:eth0
expect_usage "shape detach --delay" "unknown option '--delay' for 'sluice shape detach'" \
	"$SLUICE" shape detach eth0 --delay 3
expect_usage "shape detach without IFACE" "missing IFACE" "$SLUICE" shape detach
expect_usage "shape status with two names" "unexpected argument" "$SLUICE" shape status a b
# The shaper's options on the limiter's commands.
expect_usage "attach --delay" "--delay is an option of 'sluice shape attach'" \
	"$SLUICE" attach eth0 --rate 10/s --delay 3
expect_usage "attach --nodelay" "--nodelay is an option of 'sluice shape attach'" \
	"$SLUICE" attach eth0 --nodelay
expect_usage "attach --key" "--key is an option of 'sluice shape attach'" \
	"$SLUICE" attach eth0 --key dst
expect_usage "attach --horizon" "--horizon is an option of 'sluice shape attach'" \
	"$SLUICE" attach eth0 --horizon 1s
expect_usage "run --queue-limit" "--queue-limit is an option of 'sluice shape attach'" \
	"$SLUICE" run eth0 --queue-limit 100
# A shaper's state on the limiter's commands.
expect_usage "run shape:eth0" "'sluice run' is the limiter's" "$SLUICE" run shape:eth0
expect_usage "run shape:eth0 --redis" "'sluice run' is the limiter's" \
	"$SLUICE" run shape:eth0 --redis 127.0.0.1:6379 --fleet f
expect_usage "reload shape:eth0" "'sluice reload' is the limiter's" "$SLUICE" reload shape:eth0
expect_usage "attach shape:eth0" "sluice shape attach eth0" "$SLUICE" attach shape:eth0
expect_usage "detach shape:eth0" "sluice shape" "$SLUICE" detach shape:eth0

# ---- on a veth of our own (root) ----
if [ "$(id -u)" != 0 ]; then
	skip "needs root (CAP_NET_ADMIN, CAP_BPF): run 'sudo make test'" "sluice shape on a veth"
	tap_done
	exit
fi
for t in ip nsenter tc; do
	if ! command -v "$t" >/dev/null; then
		skip "'$t' is not installed: run 'sudo make deps'" "sluice shape on a veth"
		tap_done
		exit
	fi
done
NS="shcli-$$"
IF="shc$$"
TMP=$(mktemp -d /tmp/sluice-shape.XXXXXX)
# The pins, only what this test made (tests/lib/netns.sh: pins_watch,
# pins_release), removed while the namespace still holds its inode.
source tests/lib/netns.sh
cleanup() {
	pins_release
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add "$NS" && ip -n "$NS" link add "$IF" type veth peer name "${IF}p" &&
	ip -n "$NS" link set "$IF" up && ip -n "$NS" link set "${IF}p" up ||
	{ not_ok "make the namespace and the veth"; exit 1; }
PINS="/sys/fs/bpf/sluice/netns:$(stat -L -c %i "/var/run/netns/$NS")"
pins_watch "$PINS" "$NS"
in_ns() { nsenter --net="/var/run/netns/$NS" "$@"; }
qdiscs() { tc -n "$NS" qdisc show dev "$IF"; }

# --delay and --nodelay belong to the --rate before them: one of each for two
# rates is the set command's to check, not a conflict.
expect_status 2 "--delay for one --rate, --nodelay for another: exit 2 (no such interface)" \
	in_ns "$SLUICE" shape attach shnoif$$ --rate 10/s --delay 2 --rate 1mbit --nodelay
if grep -qF "exclude each other" <<<"$OUT"; then
	not_ok "--delay for one --rate, --nodelay for another: not refused as a conflict"
	diag "$OUT"
else
	ok "--delay for one --rate, --nodelay for another: not refused as a conflict"
fi
# An operator's root qdisc: refused, exit 1, left in place.
tc -n "$NS" qdisc add dev "$IF" root handle 7: pfifo limit 50 ||
	{ not_ok "install a pfifo root qdisc"; exit 1; }
before=$(qdiscs)
expect_status 1 "over an operator's root qdisc: exit 1" in_ns "$SLUICE" shape attach "$IF"
has "over an operator's root qdisc: names it" "the root qdisc of $IF is pfifo 7:" "$OUT"
has "over an operator's root qdisc: says how to remove it" "tc qdisc del dev $IF root" "$OUT"
if [ "$(qdiscs)" = "$before" ]; then ok "over an operator's root qdisc: left alone"; else
	not_ok "over an operator's root qdisc: left alone"; diag "$before -> $(qdiscs)"; fi
if [ ! -e "$PINS/shape:$IF" ]; then ok "over an operator's root qdisc: nothing pinned"; else
	not_ok "over an operator's root qdisc: nothing pinned"; diag "$(ls -la "$PINS/shape:$IF")"; fi
tc -n "$NS" qdisc del dev "$IF" root

# A --queue-limit below a policy's burst + 1: a usage error, before anything.
expect_status 2 "--queue-limit below the burst + 1: exit 2" \
	in_ns "$SLUICE" shape attach "$IF" --rate 10/s --burst 50 --queue-limit 20
has "--queue-limit below the burst + 1: names the least" \
	"--queue-limit 20 is below the largest burst + 1 (51 packets)" "$OUT"
if [ ! -e "$PINS/shape:$IF" ]; then ok "--queue-limit below the burst + 1: nothing pinned"; else
	not_ok "--queue-limit below the burst + 1: nothing pinned"; fi

# A kernel without fq.
if tc -n "$NS" qdisc add dev "${IF}p" root fq 2>/dev/null; then
	skip "this kernel has fq: the no-fq failure is tested where it is missing" \
		"shape attach without fq"
	tap_done
	exit
fi
before=$(qdiscs)
expect_status 1 "shape attach without fq: exit 1" \
	in_ns "$SLUICE" shape attach "$IF" --rate 100/s --burst 20
has "shape attach without fq: names CONFIG_NET_SCH_FQ" "CONFIG_NET_SCH_FQ" "$OUT"
has "shape attach without fq: names sch_fq" "sch_fq" "$OUT"
if [ "$(qdiscs)" = "$before" ]; then ok "shape attach without fq: qdisc unchanged"; else
	not_ok "shape attach without fq: qdisc unchanged"; diag "$before -> $(qdiscs)"; fi
if ! grep -q clsact <<<"$(qdiscs)"; then ok "shape attach without fq: no clsact"; else
	not_ok "shape attach without fq: no clsact"; diag "$(qdiscs)"; fi
if [ ! -e "$PINS/shape:$IF" ]; then ok "shape attach without fq: no pins"; else
	not_ok "shape attach without fq: no pins"; diag "$(ls -la "$PINS/shape:$IF")"; fi
expect_status 0 "shape status after the failure: nothing" in_ns "$SLUICE" shape status
has "shape status after the failure: no shaper" "sluice shapes no interface" "$OUT"
tap_done
