#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# One rule for exit status in both tools and every way in (arguments,
# sluicectl -b, sluice attach/reload --config): 2 when what the operator
# wrote is wrong or names something that is not there (a bad value, a file
# that cannot be opened, an interface or a rule that does not exist), 1 when
# the system does not let a right command happen (not attached, the kernel
# refused). And every message names the value, the limit and the fix.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "one exit status rule, messages that name the fix"
netns_need_sluice "one exit status rule, messages that name the fix"

N=73
netns_setup cs $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
tmp=$NETNS_TMP
ctl() { rx_ctl -i "$IF_RX" "$@"; }
# says NAME PATTERN...: the last command's output ($OUT) has every PATTERN
says() {
	local name=$1 p; shift
	for p in "$@"; do
		if ! grep -qF -- "$p" <<<"$OUT"; then
			not_ok "$name"; diag "want '$p' in: $OUT"; return
		fi
	done
	ok "$name"
}
# lacks NAME PATTERN: $OUT does not have PATTERN
lacks() {
	if grep -qF -- "$2" <<<"$OUT"; then not_ok "$1"; diag "did not want '$2' in: $OUT"
	else ok "$1"; fi
}

# ---- 1. an input file that cannot be opened is the operator's (2) ----
echo "set --rate 100/s" >"$tmp/ok.conf"
for bad in "$tmp/missing.conf" "$tmp" "$tmp/ok.conf/"; do
	expect_status 2 "sluicectl -b $bad: exit status 2" ctl -b "$bad"
	says "sluicectl -b $bad: names the file" "$bad"
	expect_status 2 "sluice attach --config $bad: exit status 2" \
		rx_sluice attach "$IF_RX" --config "$bad"
	says "sluice attach --config $bad: names the file" "$bad"
done
if command -v setpriv >/dev/null; then
	# Not root: a file of root's alone cannot be opened, and that is the
	# operator's to fix too, before any interface is looked at.
	install -m 600 "$tmp/ok.conf" "$tmp/secret.conf"
	chmod 755 "$tmp"
	expect_status 2 "sluicectl -b FILE without permission: exit status 2" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$SLUICECTL" -b "$tmp/secret.conf"
	says "sluicectl -b FILE without permission: names the file and why" \
		"$tmp/secret.conf" "Permission denied"
else
	skip "no setpriv" "sluicectl -b FILE without permission: exit status 2"
fi

# ---- 3. an interface that does not exist is a wrong argument (2) ----
expect_status 2 "sluicectl -i NOSUCH stats: exit status 2" rx_ctl -i "csnone$$" stats
says "sluicectl -i NOSUCH: names it" "there is no interface 'csnone$$'"
expect_status 2 "sluicectl -i NOSUCH set: exit status 2" rx_ctl -i "csnone$$" set --rate 10/s
expect_status 2 "sluice status NOSUCH: exit status 2" rx_sluice status "csnone$$"
expect_status 2 "sluice attach NOSUCH: exit status 2" rx_sluice attach "csnone$$"
# ... and one that exists without sluice is the system's state (1), in both
expect_status 1 "sluicectl on an interface without sluice: exit status 1" ctl stats
expect_status 1 "sluice status of an interface without sluice: exit status 1" \
	rx_sluice status "$IF_RX"

# ---- 2. rule del of a rule that is not there: 1 (the live state's) from every way in ----
echo "rule del 198.18.$N.0/24" >"$tmp/del.conf"
expect_status 1 "attach --config with a rule del of a missing rule: exit status 1" \
	rx_sluice attach "$IF_RX" --config "$tmp/del.conf"
says "attach --config, missing rule: names FILE:LINE and the CIDR" \
	"del.conf:1: there is no rule for 198.18.$N.0/24"

expect_status 0 "sluice attach" rx_sluice attach "$IF_RX" || exit 1
expect_status 1 "sluicectl rule del of a missing rule: exit status 1" \
	ctl rule del 198.18.$N.0/24
expect_status 1 "sluicectl -b with a rule del of a missing rule: exit status 1" \
	ctl -b "$tmp/del.conf"
says "sluicectl -b, missing rule: names FILE:LINE and the CIDR" \
	"del.conf:1: there is no rule for 198.18.$N.0/24"
expect_status 1 "sluice reload --config with a rule del of a missing rule: exit status 1" \
	rx_sluice reload "$IF_RX" --config "$tmp/del.conf"
says "sluice reload, missing rule: names FILE:LINE and the CIDR" \
	"del.conf:1: there is no rule for 198.18.$N.0/24"

# ---- 4. help CMD is that command's usage ----
expect_status 0 "sluice help attach: exit status 0" rx_sluice help attach
says "sluice help attach: the usage of attach" "sluice attach IFACE"
lacks "sluice help attach: not the general help" "Global options"
expect_status 0 "sluice help reload: exit status 0" rx_sluice help reload
says "sluice help reload: the usage of reload" "sluice reload IFACE"
expect_usage "sluice help of an unknown command" "attach, detach, status, run, reload or shape" \
	rx_sluice help frob
says "sluice help frob: names the word" "'frob'"
expect_status 0 "sluicectl help rule: exit status 0" rx_ctl help rule
says "sluicectl help rule: the usage of rule" "rule del CIDR"
expect_usage "sluicectl help of an unknown object" "set, rule, stats, top, show, flush or batch" \
	rx_ctl help frob

# ---- 5. a value after --dry-run ----
expect_usage "rule add --dry-run maybe" "--dry-run of rule add takes no value" \
	ctl rule add 198.18.$N.0/24 --rate 10/s --dry-run maybe
says "rule add --dry-run maybe: names the token" "'maybe'"
lacks "rule add --dry-run maybe: not about the CIDR" "takes one CIDR"
expect_usage "set --dry-run maybe" "--dry-run of set takes 'on' or 'off', not 'maybe'" \
	ctl set --dry-run maybe
expect_status 0 "rule add --dry-run before the CIDR still works" \
	ctl rule add --dry-run 198.18.$N.0/24 --rate 10/s

# ---- 6. durations echoed as they are written ----
expect_usage "a window that holds no whole packets" "per 10s window" \
	ctl set --algo fixed-window --rate 1/m --window 10s
lacks "a 10s window is not echoed in ms" "10000ms"
expect_status 0 "a 1500ms window" ctl rule add 198.18.$N.0/24 --algo sliding-window \
	--rate 10/s --window 1500ms
OUT=$(ctl rule list)
says "rule list writes a 1500ms window back as 1500ms" "1500ms"
OUT=$(ctl show 198.18.$N.7)
says "show writes a 1500ms window back as 1500ms" "15 per 1500ms window"

# ---- 7. sliding-log against the window in force ----
expect_status 0 "sliding-log with a 1h window" ctl set --algo sliding-log --rate 60/h --window 1h
expect_usage "100/s under the kept 1h window" "needs 360000" \
	ctl set --algo sliding-log --rate 100/s
says "100/s under the kept 1h window: the limit and the fix" "at most 64" \
	"--window of at most 640ms" "another --algo"
expect_usage "64/s under the kept 1h window" "needs 230400" \
	ctl set --algo sliding-log --rate 64/s
expect_status 0 "the window it names is taken" ctl set --algo sliding-log --rate 100/s \
	--window 640ms
expect_status 0 "sliding-log with a 7s window" ctl set --algo sliding-log --rate 1/s --window 7s
expect_usage "1000/s under the kept 7s window, which no window holds" "needs 7000" \
	ctl set --algo sliding-log --rate 1000/s
fit=$(sed -n 's/.*a --rate of at most \([0-9]*\/[smh]\).*/\1/p' <<<"$OUT")
if [ -n "$fit" ]; then
	expect_status 0 "the rate it names ($fit) is taken" ctl set --algo sliding-log --rate "$fit"
else
	not_ok "the message names a rate that fits"; diag "$OUT"
fi

# ---- 8. a rate too large: one message, naming what is accepted ----
for r in 18446744073709551616/s 18446744073709551615/s; do
	expect_usage "rate $r" "is too large: at most" ctl set --rate "$r"
done
max=$(sed -n 's/.*too large: at most \([0-9]*\/s\).*/\1/p' <<<"$OUT")
if [ -n "$max" ]; then
	expect_status 0 "the largest rate it names ($max) is taken" \
		ctl set --algo token-bucket --rate "$max"
	over=$((${max%/s} + 1))/s
	expect_usage "one more ($over) is refused the same way" "too large: at most $max" \
		ctl set --algo token-bucket --rate "$over"
else
	not_ok "the too-large message names a rate"; diag "$OUT"
fi

# ---- 9. a rule's keys are no wider than the rule ----
expect_usage "rule add /24 --prefix 16" "--prefix 16 is shorter than the rule" \
	ctl rule add 198.18.$N.0/24 --rate 10/s --prefix 16
says "rule add /24 --prefix 16: names both and the fix" "(/24)" "--prefix 24" "/16"
expect_usage "rule add IPv6 /64 --prefix 32" "--prefix 32 is shorter than the rule" \
	ctl rule add 2001:2:0:$N::/64 --rate 10/s --prefix 32
expect_status 0 "rule add /24 --prefix 24 is taken" ctl rule add 198.18.$N.0/24 --rate 10/s \
	--prefix 24

# ---- 10. --dry-run means something for --deny, nothing for --exempt ----
expect_usage "rule add --exempt --dry-run" "--exempt takes no --dry-run" \
	ctl rule add 198.18.$N.64/26 --exempt --dry-run
expect_status 0 "rule add --deny --dry-run is taken" ctl rule add 198.18.$N.64/26 --deny --dry-run
OUT=$(ctl -j rule list)
says "the deny rule is in dry-run" "\"match\":\"198.18.$N.64/26\",\"action\":\"deny\",\"dry_run\":true"

# ---- found on the way ----
expect_usage "attach --fail-closed --fail-open" "exclude each other" \
	rx_sluice attach "$IF_RX" --fail-closed --fail-open
expect_usage "--new-keys 0/s" "'off' for no limit" ctl set --new-keys 0/s
lacks "--new-keys 0/s: no advice about --deny" "--deny"
expect_usage "a window too long to count" "out of range: give 100ms to 1h" \
	ctl set --algo sliding-window --rate 10/s --window 99999999999999999999s
expect_usage "run --interval too long to count" "out of range: give 100ms to 1h" \
	rx_sluice run "$IF_RX" --interval 99999999999999999999
expect_usage "a key prefix of 0" "1 to 32" ctl set --prefix4 0
tap_done
