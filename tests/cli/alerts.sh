#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# contrib/prometheus/sluice.rules.yml, the alerting rules: promtool check
# rules takes them, promtool test rules passes their unit tests
# (sluice.rules.test.yml), every alert has a test where it fires and one
# where it does not, and a severity, summary and description; and the tests
# can fail: an alert changed to never fire, or loosened to fire on the
# healthy series too, fails them. (That every metric the rules read is one sluice serves is
# checked against a real scrape by tests/net/dashboard.sh.) Needs no root.
set -u
source tests/lib/tap.sh

DIR=contrib/prometheus
RULES=$DIR/sluice.rules.yml
TESTS=$DIR/sluice.rules.test.yml

if ! command -v promtool >/dev/null; then
	skip "promtool is not installed (Debian's prometheus package): run 'sudo make deps'" \
		"the alerting rules"
	exit 0
fi
diag "$(promtool --version 2>&1 | head -1)"

check "promtool check rules $RULES" promtool check rules "$RULES"
check "promtool test rules $TESTS" promtool test rules "$TESTS"

# A python3 with PyYAML, to read the two files.
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import yaml' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ]; then
	skip "no python3 with PyYAML (Debian's python3-yaml)" \
		"every alert is tested firing and not firing, and the tests can fail"
	tap_done
	exit
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- every alert: its labels and annotations, a test firing, a test not ----

out=$("$PY" - "$RULES" "$TESTS" <<'PY'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
tests = yaml.safe_load(open(sys.argv[2]))
alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
fires, quiet = {}, {}
for t in tests["tests"]:
    for a in t.get("alert_rule_test", []):
        d = fires if a.get("exp_alerts") else quiet
        d[a["alertname"]] = d.get(a["alertname"], 0) + 1
for r in alerts:
    n = r["alert"]
    bad = []
    if r.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
        bad.append("no severity critical, warning or info")
    for k in ("summary", "description"):
        if not r.get("annotations", {}).get(k):
            bad.append("no " + k)
    if not fires.get(n):
        bad.append("no test where it fires")
    if not quiet.get(n):
        bad.append("no test where it does not fire")
    print("%s\t%s" % (n, "; ".join(bad)))
unknown = (set(fires) | set(quiet)) - {r["alert"] for r in alerts}
for n in sorted(unknown):
    print("%s\ta test of an alert the rules do not have" % n)
PY
)
if [ -z "$out" ]; then
	not_ok "the rules have alerts"
fi
ALERTS=()
while IFS=$'\t' read -r name bad; do
	[ -n "$name" ] || continue
	ALERTS+=("$name")
	if [ -z "$bad" ]; then
		ok "$name: a severity, a summary and a description; tested firing and not firing"
	else
		not_ok "$name: a severity, a summary and a description; tested firing and not firing"
		diag "$bad"
	fi
done <<<"$out"

# ---- the tests can fail: each alert made to never fire, and loosened so
# that the healthy series beside the troubled ones fire too (every
# comparison with a number made ">= 0") ----

# mutate ALERT HOW: a copy of the rules and tests in $TMP/HOW with ALERT's
# expression changed: never (no series) or loose (its comparisons >= 0).
mutate() {
	rm -rf "${TMP:?}/$2"
	mkdir -p "$TMP/$2"
	cp "$TESTS" "$TMP/$2/"
	"$PY" - "$RULES" "$1" "$2" "$TMP/$2/sluice.rules.yml" <<'PY'
import re, sys, yaml
src, name, how, dst = sys.argv[1:5]
rules = yaml.safe_load(open(src))
for g in rules["groups"]:
    for r in g["rules"]:
        if r.get("alert") != name:
            continue
        if how == "never":
            r["expr"] = "vector(0) > 1"
        else:
            e, n = re.subn(r"(==|!=|>=|<=|>|<)\s*-?[0-9.]+", ">= 0", r["expr"])
            if not n:
                sys.exit("%s compares with no number" % name)
            r["expr"] = e
yaml.safe_dump(rules, open(dst, "w"), sort_keys=False)
PY
}
for a in "${ALERTS[@]}"; do
	for how in never loose; do
		case $how in
		never) what="$a made never to fire" ;;
		loose) what="$a loosened to fire on the healthy series too" ;;
		esac
		if ! mutate "$a" "$how" >"$TMP/out" 2>&1; then
			not_ok "$what: the changed copy is made"
			diag "$(cat "$TMP/out")"
		elif ! promtool check rules "$TMP/$how/sluice.rules.yml" >"$TMP/out" 2>&1; then
			not_ok "$what: promtool takes the changed rules"
			diag "$(cat "$TMP/out")"
		elif promtool test rules "$TMP/$how/sluice.rules.test.yml" >"$TMP/out" 2>&1; then
			not_ok "$what: the unit tests fail"
		elif grep -q "alertname: $a," "$TMP/out"; then
			ok "$what: the unit tests fail, on it"
		else
			not_ok "$what: the unit tests fail, on it"
			diag "$(head -20 "$TMP/out")"
		fi
	done
done

tap_done
