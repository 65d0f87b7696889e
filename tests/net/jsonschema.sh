#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs/schema/sluice.schema.json, the one JSON schema of every -j output,
# against the real outputs: a lab limiter with rules of every kind (--rate,
# a byte rate, --exempt, --deny, --proto tcp --dport 80 and a UDP port rule,
# sliding-window and sliding-log rules, a --dry-run rule, an IPv6 rule, a
# --penalty rule where this build has --penalty), fleet-wide policies, the
# new-key limit, and traffic from sources of each; then sluice status -j,
# sluicectl -j stats (and --watch), rule list, show (every kind of policy,
# a bucket, an aggregate, an exempt and a denied source), top, set, rule add,
# flush and the errors of both tools, each validated against its own $defs
# entry and against the schema's root (python3-jsonschema, draft 2020-12).
# A shaper's outputs too, where this kernel can make an fq qdisc. Every
# field the schema names is in the man pages' JSON OUTPUT. The schema's
# closed objects must refuse documents broken on purpose (an unknown field
# in a policy, a field missing, a limit's field on an exempt policy), so the
# test can fail.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

SCHEMA=docs/schema/sluice.schema.json

netns_need_root "JSON schema" jq
netns_need_sluice "JSON schema"

# A python3 with jsonschema's draft 2020-12 validator (Debian 12's
# python3-jsonschema 4.10 has it): the one first in PATH, else Debian's.
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null &&
		"$p" -c 'from jsonschema import Draft202012Validator' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	skip "no python3 with jsonschema's Draft202012Validator (Debian's python3-jsonschema): run 'sudo make deps'" \
		"JSON schema"
	exit 0
fi
diag "validating with $("$PY" -c 'import sys, importlib.metadata as m
print(sys.executable, "jsonschema", m.version("jsonschema"))' 2>&1)"

N=82
netns_setup js $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
SHAPED=0
netns_extra_cleanup() {
	[ "$SHAPED" = 1 ] && rx_sluice shape detach "$IF_RX" >/dev/null 2>&1
	:
}
ctl() { rx_ctl -i "$IF_RX" "$@"; }
NET=198.18.$N

# validate.py SCHEMA DEF FILE: every line of FILE is one JSON document valid
# against $defs/DEF and against the root (whose oneOf must take it through
# exactly one entry). Exit 0 valid, 1 invalid (what failed, on stdout),
# 2 not JSON or no such entry, 3 a bad schema.
cat >"$NETNS_TMP/validate.py" <<'PY'
import json, sys
from jsonschema import Draft202012Validator as V
from jsonschema.exceptions import SchemaError

schema_file, name, doc_file = sys.argv[1:4]
with open(schema_file) as f:
    schema = json.load(f)
try:
    V.check_schema(schema)
except SchemaError as e:
    print("the schema is not a valid draft 2020-12 schema: %s" % e.message)
    sys.exit(3)
if name not in schema.get("$defs", {}):
    print("the schema has no $defs/%s" % name)
    sys.exit(2)
sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/" + name}
lines = [l for l in open(doc_file).read().splitlines() if l.strip()]
if not lines:
    print("no document (empty output)")
    sys.exit(2)
bad = 0
for n, line in enumerate(lines, 1):
    try:
        doc = json.loads(line)
    except ValueError as e:
        print("line %d is not JSON (%s): %.200s" % (n, e, line))
        sys.exit(2)
    for where, s in (("$defs/" + name, sub), ("the root", schema)):
        errs = sorted(V(s).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errs[:4]:
            bad = 1
            print("line %d, %s: at /%s: %.300s" %
                  (n, where, "/".join(map(str, e.absolute_path)), e.message))
sys.exit(bad)
PY
validate() { "$PY" "$NETNS_TMP/validate.py" "$SCHEMA" "$@"; }

# ---- the schema itself ----

out=$("$PY" - "$SCHEMA" <<'PY' 2>&1
import json, sys
from jsonschema import Draft202012Validator as V
s = json.load(open(sys.argv[1]))
V.check_schema(s)
d = s["$defs"]
names, props = set(d["counter_name"]["enum"]), set(d["counters"]["properties"])
if names != props:
    sys.exit("counter_name and counters differ: %s" % sorted(names ^ props))
want = {"status", "stats", "stats_watch", "rule_list", "show", "top", "flush", "edit", "error"}
root = {r["$ref"].rsplit("/", 1)[1] for r in s["oneOf"]}
if root != want:
    sys.exit("the root's oneOf is %s, not %s" % (sorted(root), sorted(want)))
print("%d definitions" % len(d))
PY
)
if [ $? = 0 ]; then
	ok "$SCHEMA is a valid draft 2020-12 schema: $out, one root entry for each output, the counters named once"
else
	not_ok "$SCHEMA is a valid draft 2020-12 schema, one root entry for each output"
	diag "$out"
	exit 1
fi

# Every field the schema names is one the man pages' JSON OUTPUT describe.
docs=$(sed -n '/^\.SH JSON OUTPUT/,/^\.SH /p' man/sluice.8 man/sluicectl.8 | sed 's/\\(dq/"/g')
fields=$(jq -r '[.. | objects | .properties? // empty | keys[]] | unique | .[]' "$SCHEMA")
missing=
for f in $fields; do
	grep -qE "(^|[ (\"])$f([ ,.;:)\"]|$)" <<<"$docs" || missing="$missing $f"
done
if [ -n "$fields" ] && [ -z "$missing" ]; then
	ok "every field the schema names is in the man pages' JSON OUTPUT ($(wc -w <<<"$fields"))"
else
	not_ok "every field the schema names is in the man pages' JSON OUTPUT: not$missing"
fi

# ---- a lab limiter with rules of every kind, and traffic ----

expect_status 0 "attach --rate 100/s" rx_sluice attach "$IF_RX" --rate 100/s || exit 1
RULES=(
	"$NET.0/28 --exempt"
	"$NET.16/28 --deny"
	"$NET.32/28 --rate 10/s --burst 5"
	"$NET.48/28 --rate 10/s --rate 1mbit --burst 3000"
	"$NET.64/26 --algo sliding-window --rate 10/s --window 1s"
	"$NET.128/27 --algo sliding-log --rate 5/s --window 1s"
	"$NET.160/28 --rate 5/s --burst 5 --dry-run"
	"$NET.0/24 --proto tcp --dport 80 --rate 5/s"
	"$NET.240/28 --proto udp --dport 9 --rate 5/s --burst 5"
	"$NET.208/28 --rate 50/s --also-prefix 29 --also-rate 5/s --also-burst 5"
	"2001:2:0:$N:1::/80 --rate 50/s --burst 10"
)
for r in "${RULES[@]}"; do
	# shellcheck disable=SC2086
	expect_status 0 "rule add $r" ctl rule add $r
done
PENALTY=0
if out=$(ctl rule add "$NET.176/28" --rate 5/s --burst 2 --penalty 1m 2>&1); then
	PENALTY=1
	ok "rule add $NET.176/28 --rate 5/s --burst 2 --penalty 1m"
else
	diag "this build has no --penalty (rule add said: $out): its fields are not exercised"
fi
expect_status 0 "set --fleet on" ctl set --fleet on

send() { tx_gen -s "$1" -d "${3:-$ADDR4_RX}" -n "$2" >/dev/null 2>&1; }
send "$NET.2" 20        # exempt
send "$NET.17" 20       # denied
send "$NET.33" 200      # held by its rule
send "$NET.49" 200      # a byte rate too
send "$NET.70" 100      # sliding window
send "$NET.130" 100     # sliding log
send "$NET.161" 100     # dry-run: would drop
[ $PENALTY = 1 ] && send "$NET.177" 100 # boxed
send "$NET.241" 100     # the UDP port rule
send "$NET.209" 4       # the second key's /29: 4 of its 5
send "$NET.210" 300     # ... then refused by it (a top key)
send "$NET.200" 300     # the default
send "2001:2:0:$N:1::5" 100 "$ADDR6_RX"
# Then the new-key limit, and 32 new sources at once past it: charged to
# their /24's aggregate (after the sources above have their own keys).
expect_status 0 "set --new-keys 5/s" ctl set --new-keys 5/s
tx_gen -s "$NET.192/27" -d "$ADDR4_RX" -n 400 >/dev/null 2>&1

# jcheck NAME DEF STATUS CMD...: CMD exits STATUS ("fail": anything but 0)
# and writes one line of JSON valid against $defs/DEF and the root; the
# output is kept in OUT_FILE for the checks that follow.
I=0
jcheck() {
	local name=$1 def=$2 want=$3 st v
	shift 3
	I=$((I + 1))
	OUT_FILE=$NETNS_TMP/out.$I.json
	"$@" >"$OUT_FILE" 2>"$NETNS_TMP/err.$I"
	st=$?
	if { [ "$want" = fail ] && [ "$st" = 0 ]; } ||
		{ [ "$want" != fail ] && [ "$st" != "$want" ]; }; then
		not_ok "$name: valid against \$defs/$def and the root"
		diag "exit status $st, want $want: $(cat "$NETNS_TMP/err.$I")"
		diag "$(head -c 600 "$OUT_FILE")"
		return 1
	fi
	if [ "$def" != stats_watch ] && [ "$(grep -c . "$OUT_FILE")" != 1 ]; then
		not_ok "$name: valid against \$defs/$def and the root"
		diag "not one line: $(head -c 600 "$OUT_FILE")"
		return 1
	fi
	if v=$(validate "$def" "$OUT_FILE"); then
		ok "$name: valid against \$defs/$def and the root"
	else
		not_ok "$name: valid against \$defs/$def and the root"
		diag "$v"
		diag "the output: $(head -c 1500 "$OUT_FILE")"
	fi
}

# ---- every output of a limiter ----

jcheck "sluice status -j" status 0 rx_sluice status -j
jcheck "sluice -j status $IF_RX" status 0 rx_sluice -j status "$IF_RX"
STATUS=$OUT_FILE
jcheck "sluicectl -j stats" stats 0 ctl -j stats
STATS=$OUT_FILE
jcheck "sluicectl -j rule list" rule_list 0 ctl -j rule list
LIST=$OUT_FILE
jcheck "sluicectl -j top" top 0 ctl -j top
TOP=$OUT_FILE
SHOWS=()
for a in "$NET.2" "$NET.17" "$NET.33" "$NET.49" "$NET.70" "$NET.130" "$NET.161" "$NET.177" \
	"$NET.241" "$NET.200" "$NET.195" "$NET.99" "2001:2:0:$N:1::5" "$NET.33/32" "$NET.210"; do
	jcheck "sluicectl -j show $a" show 0 ctl -j show "$a" && SHOWS+=("$OUT_FILE")
done
jcheck "sluicectl -j set --rate 200/s (a policy)" edit 0 ctl -j set --rate 200/s
EDIT=$OUT_FILE
jcheck "sluicectl -j set --new-keys 30/s (settings only)" edit 0 ctl -j set --new-keys 30/s
jcheck "sluicectl -j rule add (a limit)" edit 0 ctl -j rule add "$NET.96/28" --rate 3/s
jcheck "sluicectl -j rule add (the same again: replaced)" edit 0 ctl -j rule add "$NET.96/28" \
	--rate 3/s
jcheck "sluicectl -j rule add (exempt)" edit 0 ctl -j rule add "$NET.112/28" --exempt
jcheck "sluicectl -j rule add (a match)" edit 0 ctl -j rule add "$NET.0/24" --proto tcp \
	--dport 443 --rate 7/s
jcheck "sluicectl -j rule add (leaky-bucket, dry-run, fleet)" edit 0 ctl -j rule add \
	"$NET.224/28" --algo leaky-bucket --rate 30/m --dry-run --fleet
jcheck "sluicectl -j rule add (IPv6)" edit 0 ctl -j rule add "2001:2:0:$N:2::/80" --rate 1mbit
# timeout's SIGINT ends the watch: timeout says 124.
jcheck "sluicectl -j stats --watch 0.4 (each line)" stats_watch 124 \
	timeout -s INT 1.5 nsenter --net="/var/run/netns/$NS_RX" "$SLUICECTL" -i "$IF_RX" -j stats \
	--watch 0.4
lines=$(grep -c . "$OUT_FILE")
[ "$lines" -ge 2 ] && ok "stats --watch 0.4 wrote $lines lines in 1.5 s" ||
	{ not_ok "stats --watch 0.4 wrote at least 2 lines in 1.5 s"; diag "$(cat "$OUT_FILE")"; }
jcheck "sluicectl -j flush $NET.33" flush 0 ctl -j flush "$NET.33"
jcheck "sluicectl -j flush (every key)" flush 0 ctl -j flush

# ---- errors, of both tools ----

jcheck "error: sluicectl -j frob" error fail rx_ctl -j frob
jcheck "error: sluicectl -j show not-an-address" error fail ctl -j show not-an-address
jcheck "error: sluicectl -j rule add --rate bogus" error fail ctl -j rule add "$NET.0/28" \
	--rate bogus
jcheck "error: sluicectl -j -i nosuch0 stats" error fail rx_ctl -j -i nosuch0 stats
jcheck "error: sluice -j status nosuch0" error fail rx_sluice -j status nosuch0
jcheck "error: sluice -j frob" error fail rx_sluice -j frob

# ---- the outputs exercised what the schema describes ----

# cover NAME JQ FILE...: JQ is true of the files' documents together.
cover() {
	local name=$1 q=$2 out
	shift 2
	if out=$(jq -s -e "$q" "$@" 2>&1); then
		ok "the outputs held $name"
	else
		not_ok "the outputs held $name"
		diag "$out"
	fi
}
cover "rules of every action, three algorithms, a byte limit, a match, a dry-run and an IPv6 rule" \
	'.[0] | ([.[].action] | index("exempt") and index("deny") and index("limit")) and
	 ([.[].algo] | index("token-bucket") and index("sliding-window") and index("sliding-log")) and
	 any(.[]; .bytes) and any(.[]; .l4) and any(.[]; .dry_run) and
	 any(.[]; has("prefix6") and (has("prefix4") | not))' "$LIST"
cover "a fleet-wide default with a fleet object, and counters with drops" \
	'.[0].interfaces[0] | .fleet_policies and .fleet and .stats.dropped > 0 and .stats.limited > 0' \
	"$STATUS"
cover "show: exempt and denied verdicts" '[.[].verdict] | index("pass") and index("drop")' \
	"${SHOWS[@]}"
cover "show: a bucket found, and one not" \
	'any(.[]; .bucket.found == true) and any(.[]; .bucket.found == false)' "${SHOWS[@]}"
cover "show: an aggregate (past --new-keys)" 'any(.[]; .aggregate.found == true)' "${SHOWS[@]}"
cover "show: a token bucket's, a window's and a sliding log's state" \
	'[.[].bucket.state.algo] | index("token-bucket") and index("sliding-window") and
	 index("sliding-log")' "${SHOWS[@]}"
cover "show: the rules with a match that hold the address" \
	'any(.[]; (.l4_rules | length) > 0) and any(.[]; any(.l4_rules[]?; .bucket.found == true))' \
	"${SHOWS[@]}"
cover "top: a key with drops and its state" '.[0].top | length > 0 and any(.[]; .state)' "$TOP"
cover "a second key: in rule list, found in show, marked in top" \
	'any(.[0][]; .also.packets.burst == 5) and any(.[1]; .also.found == true) and
	 any(.[2].top[]; .also)' "$LIST" "${SHOWS[-1]}" "$TOP"
cover "set -j: the policy that became live" '.[0].policy.match == "default"' "$EDIT"
if [ $PENALTY = 1 ]; then
	cover "--penalty: penalty_ns in its rule, a key in the box in show" \
		'any(.[0][]; .penalty_ns) and any(.[1:][]; .bucket.penalty.boxed == true)' "$LIST" \
		"${SHOWS[@]}"
else
	skip "this build has no --penalty" "the outputs held penalty_ns and a boxed key"
fi

# ---- documents broken on purpose fail ----

# broken NAME DEF JQ FILE: FILE changed by JQ must not validate.
broken() {
	local name=$1 def=$2 q=$3 f=$NETNS_TMP/broken.json v st
	jq -c "$q" "$4" >"$f" || { not_ok "a broken document fails: $name (jq failed)"; return; }
	v=$(validate "$def" "$f")
	st=$?
	if [ "$st" = 1 ]; then
		ok "a broken document fails: $name ($(head -1 <<<"$v" | cut -c1-160))"
	else
		not_ok "a broken document fails: $name"
		diag "validate exit status $st: $v"
	fi
}
broken "an unknown field in rule list's policy" rule_list '.[0].burst_ms = 5' "$LIST"
broken "an unknown field in status's policy" status '.interfaces[0].policy.rate = "100/s"' \
	"$STATUS"
broken "an unknown counter in stats" stats '.dropped_total = 1' "$STATS"
broken "an unknown field in status's stats" status '.interfaces[0].stats.foo = 1' "$STATUS"
broken "a counter missing from stats" stats 'del(.update_failed)' "$STATS"
broken "a counter of the wrong type" stats '.rx = "many"' "$STATS"
broken "a negative counter" stats '.dropped = -1' "$STATS"
broken "an exempt policy with an algo" rule_list \
	'map(if .action == "exempt" then .algo = "token-bucket" else . end)' "$LIST"
broken "a window policy with a burst" rule_list \
	'map(if .algo == "sliding-window" then .packets.burst = 10 else . end)' "$LIST"
broken "an unknown action" edit '.policy.action = "shape"' "$EDIT"
broken "an unknown field in the key table" stats '.key_table.ipv4.spare = 0' "$STATS"
broken "an unknown field in the fleet object" stats '.fleet.shared = false' "$STATS"
broken "a found key without its state" show \
	'if .bucket.found then del(.bucket.state) else error("no bucket found") end' \
	"$(for f in "${SHOWS[@]}"; do jq -e '.bucket.found == true' "$f" >/dev/null && echo "$f" && break; done)"
broken "an error with more than its message" error '.code = 2' "$NETNS_TMP/out.$I.json"
broken "an unknown field in top's rows" top '.top[0].rank = 1' "$TOP"

# ---- a shaper's outputs ----

# Can this kernel make an fq qdisc? Asked of the sender's veth end.
if tx_exec tc qdisc replace dev "$IF_TX" root fq 2>/dev/null; then
	tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
	if expect_status 0 "sluice shape attach $IF_RX --rate 100/s --burst 10" \
		rx_sluice shape attach "$IF_RX" --rate 100/s --burst 10; then
		SHAPED=1
		rx_exec ping -c 5 -i 0.05 -q "$ADDR4_TX" >/dev/null 2>&1
		ctl_s() { rx_ctl -i "shape:$IF_RX" "$@"; }
		ctl_s rule add "$NET.0/28" --algo fixed-window --rate 10/s --window 1s >/dev/null
		jcheck "a shaper: sluice status -j (limiter and shaper)" status 0 rx_sluice status -j
		cover "a limiter and a shaper, the shaper's qdisc and counters" \
			'[.[0].interfaces[].kind] | index("limiter") and index("shaper")' "$OUT_FILE"
		jcheck "a shaper: sluicectl -j stats" stats 0 ctl_s -j stats
		jcheck "a shaper: sluicectl -j rule list (a meter)" rule_list 0 ctl_s -j rule list
		jcheck "a shaper: sluicectl -j show $ADDR4_TX" show 0 ctl_s -j show "$ADDR4_TX"
		rx_sluice shape detach "$IF_RX" >/dev/null 2>&1
		SHAPED=0
	fi
else
	skip "this kernel ($(uname -r)) cannot make an fq qdisc (sch_fq): no shaper here" \
		"a shaper's status, stats, rule list and show are valid"
fi

tap_done
