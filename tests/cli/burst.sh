#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# One rule for a burst not given, which an operator can predict: a --rate
# without --burst gets one second's worth, in attach, set, rule add and
# config files alike, and a fresh attach's default policy (100/s) follows it;
# every summary (attach, reload, set, rule add) says both values of every
# limit, so no burst changes unsaid; the help texts and man pages say the
# rule. Also: attach --fresh over a kept state says what it dropped.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "the default burst"
for b in "$SLUICE" "$SLUICECTL"; do
	if [ ! -x "$b" ]; then
		skip "$b is not built: run 'make'" "the default burst"
		exit 0
	fi
done
has() {
	if grep -qF -- "$2" <<<"$3"; then ok "$1"; else not_ok "$1"; diag "want '$2' in: $3"; fi
}
lacks() {
	if grep -qF -- "$2" <<<"$3"; then not_ok "$1"; diag "did not want '$2' in: $3"; else ok "$1"; fi
}

# ---- the help texts and man pages say the rule ----
has "sluicectl set help: a --rate without --burst gets one second's worth" \
	"a --rate without --burst"$'\n'"gets one second's worth of that rate as its burst" "$("$SLUICECTL" set help)"
has "sluicectl set help: the default policy is 100/s, so burst 100" \
	"the default policy is 100/s, so burst 100" "$("$SLUICECTL" set help | tr '\n' ' ' | tr -s ' ')"
has "sluicectl rule help: the same rule" "a --rate without"$'\n'"                      --burst gets one second's worth" \
	"$("$SLUICECTL" rule help)"
has "sluice attach help: the same rule" "without it one second's worth of the --rate" \
	"$("$SLUICE" attach help)"
has "sluice shape attach help: the same rule" "without it one second's worth of the rate" \
	"$("$SLUICE" shape attach help)"
man8() { MANWIDTH=200 man -l "$1" 2>/dev/null | col -b | tr -s ' ' | tr '\n' ' '; }
if command -v man >/dev/null; then
	has "sluice(8): a fresh attach is 100/s burst 100, by the rule" \
		"token-bucket 100/s, burst 100 (one second's worth, as every --rate without --burst)" \
		"$(man8 man/sluice.8)"
	has "sluicectl(8): set --rate 500/s on burst 200 makes burst 500, and says so" \
		"set --rate 500/s on a policy of 100/s burst 200 makes it 500/s burst 500" \
		"$(man8 man/sluicectl.8)"
else
	skip "man is not installed" "the man pages say the rule"
fi

N=43
netns_setup bu $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
ctl() { rx_ctl -i "$IF_RX" "$@"; }
burst_of() { ctl -j rule list | sed 's/{"match":/\n&/g' | grep -F "{\"match\":\"$1\"" |
	grep -o '"packets":{[^}]*}' | grep -o '"burst":[0-9]*' | cut -d: -f2; }

# ---- a fresh attach, and --rate 100/s alone: the same burst ----
expect_status 0 "a fresh attach" rx_sluice attach "$IF_RX" || exit 1
has "the attach summary says both values: 100/s burst 100" \
	"policy: limit token-bucket 100/s burst 100, keyed by /32 (IPv4) and /64 (IPv6)" "$OUT"
fresh=$(burst_of default)
expect_status 0 "set --rate 100/s" ctl set --rate 100/s
same_rate=$(burst_of default)
if [ -n "$fresh" ] && [ "$fresh" = "$same_rate" ]; then
	ok "the fresh default's burst is --rate 100/s's ($fresh)"
else
	not_ok "the fresh default's burst is --rate 100/s's"; diag "fresh '$fresh', --rate 100/s '$same_rate'"
fi

# ---- set: a new --rate without --burst gets its own second's worth, said ----
expect_status 0 "set --rate 100/s --burst 200" ctl set --rate 100/s --burst 200
has "set --burst 200: the summary says it" \
	"default policy of $IF_RX: limit token-bucket 100/s burst 200, keyed by" "$OUT"
expect_status 0 "set --rate 500/s (the README's live change)" ctl set --rate 500/s
has "set --rate 500/s: the summary says the new burst, 500" "token-bucket 500/s burst 500" "$OUT"
has "set --rate 500/s: ... and why (no --burst given)" \
	"the burst is one second's worth of the rate (no --burst given)" "$OUT"
has "set --rate 500/s: ... and that the buckets were kept" "buckets kept" "$OUT"
[ "$(burst_of default)" = 500 ] && ok "set --rate 500/s: the burst is 500 as said" ||
	{ not_ok "set --rate 500/s: the burst is 500 as said"; diag "$(burst_of default)"; }
expect_status 0 "set --rate 500/s --burst 200 keeps a burst by giving it" \
	ctl set --rate 500/s --burst 200
lacks "... and then says nothing of a default burst" "one second's worth" "$OUT"
expect_status 0 "set --burst 300 alone" ctl set --burst 300
has "set --burst 300: the rate is kept and said" "token-bucket 500/s burst 300" "$OUT"
expect_status 0 "set --algo sliding-window" ctl set --algo sliding-window
has "set --algo: fresh buckets, said" "every source starts with a fresh, full bucket" "$OUT"
expect_status 0 "set --algo token-bucket --rate 1000/s --rate 10mbit" \
	ctl set --algo token-bucket --rate 1000/s --rate 10mbit
has "both limits, both values" "1000/s burst 1000 and 10mbit burst 1250000 bytes" "$OUT"
has "... both defaults said" "the bursts are one second's worth" "$OUT"
OUT=$(ctl -j set --rate 100/s 2>&1)
has "set -j: the policy object" '"policy":{"match":"default","action":"limit"' "$OUT"
has "set -j: the burst, and that it is the default one" '"burst":100}' "$OUT"
has "set -j: default_burst true" '"default_burst":true' "$OUT"
expect_status 0 "set --dry-run on (a setting)" ctl set --dry-run on
has "set --dry-run: the settings line" "settings of $IF_RX: dry-run on, fail-open, new keys off" "$OUT"
ctl set --dry-run off >/dev/null

# ---- rule add: the same rule, and the same line ----
expect_status 0 "rule add --rate 10/s" ctl rule add 198.18.$N.0/24 --rate 10/s
has "rule add: both values, the default burst said" \
	"rule 198.18.$N.0/24 of $IF_RX added: limit token-bucket 10/s burst 10, keyed by /32; the burst is one second's worth" \
	"$OUT"
expect_status 0 "rule add again --rate 10/s --burst 40" ctl rule add 198.18.$N.0/24 --rate 10/s --burst 40
has "rule add over a rule: replaced, buckets kept" \
	"rule 198.18.$N.0/24 of $IF_RX replaced: limit token-bucket 10/s burst 40, keyed by /32; buckets kept" "$OUT"
expect_status 0 "rule add --deny" ctl rule add 198.18.$N.128/25 --deny
has "rule add --deny: says deny" "rule 198.18.$N.128/25 of $IF_RX added: deny" "$OUT"

# ---- a file: the same rule; reload and attach --config say the policy ----
printf 'set --rate 300/s\nrule add 198.18.%s.0/24 --rate 10/s\n' "$N" >"$NETNS_TMP/a.conf"
expect_status 0 "reload a file with set --rate 300/s" \
	rx_sluice reload "$IF_RX" --config "$NETNS_TMP/a.conf"
has "reload: the summary says the default policy, both values" \
	"policy: limit token-bucket 300/s burst 300, keyed by /32 (IPv4) and /64 (IPv6)" "$OUT"
[ "$(burst_of 198.18.$N.0/24)" = 10 ] && ok "reload: the file's rule got one second's worth (10)" ||
	{ not_ok "reload: the file's rule got one second's worth (10)"; diag "$(burst_of 198.18.$N.0/24)"; }
expect_status 0 "attach --config (an upgrade)" rx_sluice attach "$IF_RX" --config "$NETNS_TMP/a.conf"
has "attach --config: both values" "policy: limit token-bucket 300/s burst 300" "$OUT"
expect_status 0 "attach --rate 100/s --burst 250 (an upgrade)" \
	rx_sluice attach "$IF_RX" --rate 100/s --burst 250
has "attach --burst 250: both values" "policy: limit token-bucket 100/s burst 250" "$OUT"

# ---- attach --fresh over a kept state: what it dropped, no dangling comma ----
expect_status 0 "detach --keep-state" rx_sluice detach "$IF_RX" --keep-state
expect_status 0 "attach --fresh over the kept state" rx_sluice attach "$IF_RX" --fresh
has "attach --fresh: says it dropped the kept state and started empty" \
	"fresh (--fresh): dropped the pinned state (kept by 'sluice detach --keep-state' at " "$OUT"
has "attach --fresh: ... started empty" "; started empty" "$OUT"
if grep -qE ', *$' <<<"$OUT"; then
	not_ok "attach --fresh: no line ends in a comma"; diag "$OUT"
else
	ok "attach --fresh: no line ends in a comma"
fi
has "attach --fresh: the fresh default, 100/s burst 100" "policy: limit token-bucket 100/s burst 100" "$OUT"

tap_done
