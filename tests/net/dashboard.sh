#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# contrib/grafana/sluice.json, the Grafana dashboard, against a real
# `sluice run IFACE --metrics ADDR:PORT` (on the receiver's veth address,
# scraped from the sender's namespace) with rules (exempt, deny, a limit, a
# dry-run), fleet-wide policies and traffic: the dashboard is a Grafana
# dashboard of the shape asked (schemaVersion, the ${DS_PROMETHEUS} data
# source on every query, the instance and interface variables); every
# PromQL expression parses (promtool, as recording rules); every metric it
# queries, and every metric contrib/prometheus/sluice.rules.yml alerts on, is
# in the scrape (a shaper's sluice_shape_* where a shaper runs: this test
# attaches one where the kernel has fq, else it checks them against the
# names user/lib/prom.c writes, and says so); every label they group, match
# or join by is the scrape's or one Prometheus adds; and a real Prometheus
# (Debian's prometheus), scraping the run, answers every query (each
# limiter query with series), the variables' label_values, and evaluates
# every alerting rule without error.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

DASH=contrib/grafana/sluice.json
RULES=contrib/prometheus/sluice.rules.yml

netns_need_root "the Grafana dashboard" curl jq python3
netns_need_sluice "the Grafana dashboard"

N=81
netns_setup db $N || { not_ok "build the namespaces and the veth pair"; exit 1; }
SHAPED=0
netns_extra_cleanup() {
	[ "$SHAPED" = 1 ] && rx_sluice shape detach "$IF_RX" >/dev/null 2>&1
	:
}
NET=198.18.$N
ctl() { rx_ctl -i "$IF_RX" "$@"; }

# ---- what the dashboard and the rules query ----

# queries.py DASH RULES: one line a use, tab-separated:
#   expr   PANEL  EXPR             every PromQL expression (templating too)
#   metric NAME   PANEL            every metric an expression selects
#   label  NAME   PANEL            every label grouped, matched or joined by
#   var    NAME   QUERY            the dashboard's query variables
# and "error MESSAGE" for what is wrong with the dashboard's shape.
cat >"$NETNS_TMP/queries.py" <<'PY'
import json, re, sys

dash = json.load(open(sys.argv[1]))
rules_text = open(sys.argv[2]).read()
out = []

def err(msg):
    out.append("error\t" + msg)

# PromQL's functions and keywords: an identifier that is none of these, and
# not a call, is a metric name.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "atan2"}

def strip_strings(e):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', e)

def metrics(expr):
    e = strip_strings(expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = []
    for m in re.finditer(r"(?<![A-Za-z0-9_:.$])([A-Za-z_:][A-Za-z0-9_:]*)", e):
        name, rest = m.group(1), e[m.end():]
        if name in KEYWORDS or re.match(r"\s*\(", rest):
            continue
        names.append(name)
    return names

def labels(expr):
    e = strip_strings(expr.replace('\\"', ""))
    found = []
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        found += [l.strip() for l in m.group(1).split(",") if l.strip()]
    for m in re.finditer(r"\{([^}]*)\}", strip_strings(expr)):
        found += re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", m.group(1))
    return found

LV = re.compile(r"^\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")

def use(where, expr):
    out.append("expr\t%s\t%s" % (where, " ".join(expr.split())))
    for m in metrics(expr):
        out.append("metric\t%s\t%s" % (m, where))
    for l in labels(expr):
        out.append("label\t%s\t%s" % (l, where))

if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
    err("schemaVersion %r: not a dashboard of Grafana 9 or later" % dash.get("schemaVersion"))
DS = "${DS_PROMETHEUS}"
tv = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
d = tv.get("DS_PROMETHEUS")
if not d or d.get("type") != "datasource" or d.get("query") != "prometheus":
    err("no datasource variable DS_PROMETHEUS of type prometheus")
for name in ("instance", "interface"):
    v = tv.get(name)
    if not v or v.get("type") != "query":
        err("no query variable %s" % name)
        continue
    q = v.get("query")
    q = q.get("query") if isinstance(q, dict) else q
    m = LV.match(q or "")
    if not m:
        err("variable %s: %r is not label_values(METRIC, LABEL)" % (name, q))
        continue
    if m.group(2) != name:
        err("variable %s lists the values of label %s" % (name, m.group(2)))
    if (v.get("datasource") or {}).get("uid") != DS:
        err("variable %s does not query ${DS_PROMETHEUS}" % name)
    out.append("var\t%s\t%s" % (name, q))
    use("variable " + name, m.group(1))
    out.append("label\t%s\tvariable %s" % (m.group(2), name))

ids = set()
def walk(panels):
    for p in panels:
        if p.get("id") in ids:
            err("panel id %s twice" % p.get("id"))
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if g.get("x", 0) + g.get("w", 0) > 24:
            err("panel %r is wider than the grid" % p.get("title"))
        if p.get("type") == "row":
            walk(p.get("panels", []))
            continue
        where = "panel '%s'" % p.get("title")
        if (p.get("datasource") or {}).get("uid") != DS:
            err(where + ": its datasource is not ${DS_PROMETHEUS}")
        if not p.get("targets"):
            err(where + ": no query")
        for t in p.get("targets", []):
            if (t.get("datasource") or {}).get("uid") != DS:
                err(where + " query %s: its datasource is not ${DS_PROMETHEUS}" % t.get("refId"))
            if not t.get("expr"):
                err(where + " query %s: no expr" % t.get("refId"))
                continue
            use(where, t["expr"])
            for l in re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", t.get("legendFormat", "")):
                out.append("label\t%s\t%s legend" % (l, where))
walk(dash.get("panels", []))
if not dash.get("panels"):
    err("no panels")

# The alerting rules: each expr: block or line (YAML read by hand: the
# rules file has one expr per rule, a | block or one line).
alert = None
lines = rules_text.splitlines()
i = 0
while i < len(lines):
    l = lines[i]
    m = re.match(r"\s*- alert:\s*(\S+)", l)
    if m:
        alert = m.group(1)
    m = re.match(r"(\s*)expr:\s*(.*)$", l)
    if m and alert:
        if m.group(2).strip() in ("|", ">", "|-", ">-"):
            ind, body = None, []
            i += 1
            while i < len(lines) and (not lines[i].strip() or ind is None or
                                       lines[i].startswith(ind)):
                if ind is None and lines[i].strip():
                    ind = re.match(r"\s*", lines[i]).group(0)
                body.append(lines[i])
                i += 1
            use("alert " + alert, "\n".join(body))
            continue
        use("alert " + alert, m.group(2))
    i += 1
print("\n".join(out))
PY
Q=$NETNS_TMP/queries.tsv
if ! python3 "$NETNS_TMP/queries.py" "$DASH" "$RULES" >"$Q" 2>"$NETNS_TMP/queries.err"; then
	not_ok "$DASH and $RULES are read"
	diag "$(cat "$NETNS_TMP/queries.err")"
	exit 1
fi
if grep -q '^error' "$Q"; then
	not_ok "$DASH: a Grafana dashboard (schemaVersion, \${DS_PROMETHEUS} on every query, the instance and interface variables)"
	diag "$(grep '^error' "$Q" | cut -f2)"
else
	ok "$DASH: a Grafana dashboard (schemaVersion $(jq .schemaVersion "$DASH"), \${DS_PROMETHEUS} on every query, the instance and interface variables, $(jq '[.panels[] | select(.type != "row")] | length' "$DASH") panels)"
fi
dash_metrics() { awk -F'\t' '$1 == "metric" && $3 !~ /^alert / { print $2 }' "$Q" | sort -u; }
rule_metrics() { awk -F'\t' '$1 == "metric" && $3 ~ /^alert / { print $2 }' "$Q" | sort -u; }
where_used() { awk -F'\t' -v m="$1" '$1 == "metric" && $2 == m { print $3 }' "$Q" | sort -u |
	head -3 | paste -sd ';' | sed 's/;/; /g'; }

# What issue 25 asks the dashboard to show, by the metrics that show it.
missing=
for m in sluice_passed_total sluice_dropped_total sluice_policy_dropped_total \
	sluice_key_table_keys sluice_key_table_max_keys sluice_evicted_estimate \
	sluice_fleet_state sluice_fleet_last_sync_age_seconds sluice_shape_delay_seconds_bucket \
	sluice_update_failed_total; do
	dash_metrics | grep -qx "$m" || missing="$missing $m"
done
grep -q 'histogram_quantile(0\.[0-9]*, .*sluice_shape_delay_seconds_bucket' "$Q" ||
	missing="$missing histogram_quantile(sluice_shape_delay_seconds_bucket)"
grep -q 'topk(.*sluice_policy_dropped_total' "$Q" || missing="$missing topk(policies dropping)"
if [ -z "$missing" ]; then
	ok "the dashboard shows passed and dropped, the top dropped policies, keys against capacity, evictions, fleet state and sync age, shaper delay quantiles, update_failed"
else
	not_ok "the dashboard shows what it should: not$missing"
fi

# ---- every expression parses: promtool, as recording rules ----

if command -v promtool >/dev/null; then
	{
		echo "groups:"
		echo "  - name: dashboard"
		echo "    rules:"
		i=0
		awk -F'\t' '$1 == "expr" && $2 !~ /^alert / { print $3 }' "$Q" | sort -u | while IFS= read -r e; do
			i=$((i + 1))
			e=${e//'$__rate_interval'/1m}
			e=${e//'$__range'/1h}
			e=${e//'$__interval'/1m}
			e=${e//'$instance'/.*}
			e=${e//'$interface'/.*}
			printf '      - record: dashboard:expr%d\n        expr: %s\n' "$i" \
				"$(jq -Rn --arg e "$e" '$e')"
		done
	} >"$NETNS_TMP/exprs.yml"
	n=$(grep -c 'record:' "$NETNS_TMP/exprs.yml")
	check "promtool parses every expression of the dashboard ($n, variables substituted)" \
		promtool check rules "$NETNS_TMP/exprs.yml"
else
	skip "promtool is not installed (Debian's prometheus package): run 'sudo make deps'" \
		"promtool parses every expression of the dashboard"
fi

# ---- a run with rules, fleet-wide policies and traffic ----

run_start dash "$IF_RX" --rate 100/s --burst 100 --interval 1 --metrics "$ADDR4_RX:0"
if run_url && [ -n "$PORT" ] && [ "$URL" = "http://$ADDR4_RX:$PORT/metrics" ]; then
	ok "sluice run $IF_RX --metrics $ADDR4_RX:0 serves $URL"
else
	not_ok "sluice run $IF_RX --metrics $ADDR4_RX:0 serves the counters"
	diag "$(cat "$RUN_OUT")"
	exit 1
fi
for r in "$NET.0/28 --exempt" "$NET.16/28 --deny" "$NET.32/28 --rate 10/s --burst 5" \
	"$NET.48/28 --rate 10/s --burst 5 --dry-run" "$NET.0/24 --proto tcp --dport 80 --rate 5/s"; do
	# shellcheck disable=SC2086
	expect_status 0 "rule add $r" ctl rule add $r
done
expect_status 0 "set --fleet on (fleet-wide policies)" ctl set --fleet on
traffic() {
	local s
	for s in "$NET.2" "$NET.17" "$NET.33" "$NET.49" "$NET.200"; do
		tx_gen -s "$s" -d "$ADDR4_RX" -n "${1:-100}" >/dev/null 2>&1
	done
}
traffic 200

SCRAPE=$NETNS_TMP/scrape.txt
code=$(tx_exec curl -sS --max-time 5 -o "$SCRAPE" -w '%{http_code}' "$URL")
if [ "$code" = 200 ] && grep -q "^sluice_rx_total{interface=\"$IF_RX\"} [1-9]" "$SCRAPE"; then
	ok "a scrape from $ADDR4_TX: 200, with traffic counted"
else
	not_ok "a scrape from $ADDR4_TX: 200, with traffic counted"
	diag "HTTP status '$code': $(head -c 600 "$SCRAPE")"
fi
promtool_check "promtool check metrics accepts the scrape" "$SCRAPE"
scraped() { grep -v '^#' "$SCRAPE" | sed 's/[{ ].*//' | sort -u; }
diag "the scrape: $(scraped | wc -l) metrics, $(grep -vc '^#' "$SCRAPE") samples"

# A shaper's counters: only a shaper serves them. Where the kernel has fq, a
# shaper on the receiver's egress, its text from sluicectl stats
# --prometheus (the renderer run --metrics serves, prom.c).
SHAPE_SCRAPE=
if tx_exec tc qdisc replace dev "$IF_TX" root fq 2>/dev/null; then
	tx_exec tc qdisc del dev "$IF_TX" root 2>/dev/null
	if rx_sluice shape attach "$IF_RX" --rate 100/s --burst 10 >"$NETNS_TMP/shape.out" 2>&1; then
		SHAPED=1
		rx_exec ping -c 5 -i 0.05 -q "$ADDR4_TX" >/dev/null 2>&1
		SHAPE_SCRAPE=$NETNS_TMP/shape.txt
		rx_ctl -i "shape:$IF_RX" stats --prometheus >"$SHAPE_SCRAPE" 2>&1
	else
		not_ok "sluice shape attach $IF_RX (for the shaper's metrics)"
		diag "$(cat "$NETNS_TMP/shape.out")"
	fi
else
	diag "this kernel ($(uname -r)) cannot make an fq qdisc: no shaper here; the sluice_shape_*" \
		"metrics are checked against the names user/lib/prom.c writes, not a scrape"
fi

# in_prom_source NAME: prom.c writes NAME (a histogram's _bucket, _sum and
# _count: its family's name, which sluice_prometheus_shape() writes with them).
in_prom_source() {
	local base=$1
	case $base in *_bucket | *_sum | *_count)
		base=${base%_bucket} base=${base%_sum} base=${base%_count}
		grep -q "hist\[\] = \"$base\"" user/lib/prom.c && return 0 ;;
	esac
	grep -q "\"$1\"" user/lib/prom.c
}

# check_metric WHO NAME: NAME is in the scrape (or the shaper's).
check_metric() {
	local who=$1 m=$2 used
	used=$(where_used "$m")
	if [ "$who" = rules ] && [ "$m" = up ]; then
		ok "the rules' up: Prometheus's own (a target's health) ($used)"
	elif scraped | grep -qx "$m"; then
		ok "$m is in the scrape ($used)"
	elif [[ $m == sluice_shape_* ]] && [ -n "$SHAPE_SCRAPE" ]; then
		if grep -v '^#' "$SHAPE_SCRAPE" | sed 's/[{ ].*//' | grep -qx "$m"; then
			ok "$m is in the shaper's scrape ($used)"
		else
			not_ok "$m is in the shaper's scrape ($used)"
			diag "$(grep -v '^#' "$SHAPE_SCRAPE" | sed 's/[{ ].*//' | sort -u | paste -sd ' ')"
		fi
	elif [[ $m == sluice_shape_* ]]; then
		if in_prom_source "$m"; then
			ok "$m is a shaper's metric that user/lib/prom.c writes (no shaper here) ($used)"
		else
			not_ok "$m is a shaper's metric that user/lib/prom.c writes ($used)"
		fi
	else
		not_ok "$m is in the scrape ($used)"
		diag "the scrape has: $(scraped | paste -sd ' ')"
	fi
}
while read -r m; do check_metric dashboard "$m"; done < <(dash_metrics)
while read -r m; do
	dash_metrics | grep -qx "$m" && continue # checked above
	check_metric rules "$m"
done < <(rule_metrics)

# Every label grouped, matched, joined by or shown: the scrape's, le (a
# histogram's buckets: the shaper's), or instance and job, which Prometheus
# adds to every series it scrapes.
labels_scraped=$(grep -v '^#' "$SCRAPE" ${SHAPE_SCRAPE:+"$SHAPE_SCRAPE"} | grep -o '[{,][a-z_]*=' |
	tr -d '{,=' | sort -u)
bad=
for l in $(awk -F'\t' '$1 == "label" { print $2 }' "$Q" | sort -u); do
	case $l in instance | job) continue ;; esac
	[ "$l" = le ] && [ -z "$SHAPE_SCRAPE" ] && grep -q 'le=\\"+Inf\\"' user/lib/prom.c &&
		continue
	grep -qx "$l" <<<"$labels_scraped" || bad="$bad $l"
done
if [ -z "$bad" ]; then
	ok "every label the dashboard and the rules use is the scrape's, or instance and job ($(awk -F'\t' '$1 == "label" { print $2 }' "$Q" | sort -u | paste -sd ' '))"
else
	not_ok "every label the dashboard and the rules use is the scrape's, or instance and job: not$bad"
	diag "the scrape's labels: $(paste -sd ' ' <<<"$labels_scraped")"
fi

# ---- a real Prometheus answers every query ----

if ! command -v prometheus >/dev/null; then
	skip "prometheus is not installed (Debian's prometheus package): run 'sudo make deps'" \
		"a Prometheus scraping the run answers every query of the dashboard"
	tap_done
	exit
fi
PROM_PORT=19090
mkdir -p "$NETNS_TMP/prom"
cp "$RULES" "$NETNS_TMP/prom/sluice.rules.yml"
cat >"$NETNS_TMP/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - sluice.rules.yml
scrape_configs:
  - job_name: sluice
    static_configs:
      - targets: ['$ADDR4_RX:$PORT']
EOF
rx_exec prometheus --config.file="$NETNS_TMP/prom/prometheus.yml" \
	--storage.tsdb.path="$NETNS_TMP/prom/data" --web.listen-address="127.0.0.1:$PROM_PORT" \
	>"$NETNS_TMP/prom/log" 2>&1 &
PROM_PID=$!
NETNS_PIDS+=("$PROM_PID")
PROM=http://127.0.0.1:$PROM_PORT
# api PATH ARGS...: GET PATH of the Prometheus (curl -G ARGS).
api() { rx_exec curl -sS --max-time 5 -G "$PROM$1" "${@:2}"; }
ready=0
for i in $(seq 100); do
	api /-/ready >/dev/null 2>&1 && { ready=1; break; }
	kill -0 "$PROM_PID" 2>/dev/null || break
	sleep 0.1
done
if [ $ready = 1 ]; then
	ok "prometheus (job sluice, scraping $ADDR4_RX:$PORT every second, the rules loaded) is ready"
else
	not_ok "prometheus (job sluice, scraping $ADDR4_RX:$PORT every second, the rules loaded) is ready"
	diag "$(tail -20 "$NETNS_TMP/prom/log")"
	tap_done
	exit
fi
# Its first scrape comes a few seconds after it is ready (service discovery
# hands the targets over every 5 s): wait for it, then traffic while it
# scrapes, for rates of more than one sample, and not all zero.
for i in $(seq 150); do
	[ "$(api /api/v1/query --data-urlencode 'query=up{job="sluice"} == 1' |
		jq '.data.result | length' 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
diag "first scrape $((i / 10)).$((i % 10)) s after ready"
for i in 1 2 3 4; do traffic 50; sleep 1; done
sleep 2

INSTANCE=$ADDR4_RX:$PORT
# The variables: label_values(METRIC, LABEL) as Grafana asks it.
while IFS=$'\t' read -r _ name q; do
	m=$(sed -E 's/^label_values\(\s*(.*)\s*,\s*[a-z_]+\s*\)$/\1/' <<<"$q")
	m=${m//'$instance'/$INSTANCE}
	vals=$(api "/api/v1/label/$name/values" --data-urlencode "match[]=$m" | jq -r '.data[]?')
	want=$([ "$name" = instance ] && echo "$INSTANCE" || echo "$IF_RX")
	if grep -qxF "$want" <<<"$vals"; then
		ok "variable $name: $q gives $want"
	else
		not_ok "variable $name: $q gives $want"
		diag "got: $vals"
	fi
done < <(awk -F'\t' '$1 == "var"' "$Q")

# Every expression of the dashboard, as Grafana sends it: the variables
# those the dashboard would have picked, $__rate_interval 4 scrape intervals.
empty='' failed='' n=0
while IFS=$'\t' read -r _ where e; do
	[[ $where == alert* ]] && continue
	n=$((n + 1))
	q=${e//'$__rate_interval'/5s}
	q=${q//'$__range'/1m}
	q=${q//'$__interval'/1s}
	q=${q//'$instance'/$INSTANCE}
	q=${q//'$interface'/$IF_RX}
	r=$(api /api/v1/query --data-urlencode "query=$q")
	if [ "$(jq -r .status <<<"$r" 2>/dev/null)" != success ]; then
		failed="$failed
$where: $q: $(jq -r '.error // .' <<<"$r" 2>/dev/null || echo "$r")"
	elif [ "$(jq '.data.result | length' <<<"$r")" = 0 ] && [[ $q != *sluice_shape_* ]]; then
		empty="$empty
$where: $q"
	fi
done < <(awk -F'\t' '$1 == "expr"' "$Q")
if [ -z "$failed" ]; then
	ok "prometheus answers every query of the dashboard ($n)"
else
	not_ok "prometheus answers every query of the dashboard"
	diag "$failed"
fi
if [ -z "$empty" ]; then
	ok "every query of a limiter's metrics has series (the shaper's: none without a shaper)"
else
	not_ok "every query of a limiter's metrics has series"
	diag "empty:$empty"
fi

# The alerting rules: each evaluated without error on the real series.
r=$(api /api/v1/rules)
rules_ok=$(jq -r '[.data.groups[].rules[] | select(.type == "alerting")] |
	"\(length) \([.[] | select(.health != "ok")] | length)"' <<<"$r" 2>/dev/null)
want=$(grep -c '^ *- alert:' "$RULES")
if [ "$rules_ok" = "$want 0" ]; then
	ok "prometheus evaluates all $want alerting rules on the run's series without error"
else
	not_ok "prometheus evaluates all $want alerting rules on the run's series without error"
	diag "$(jq -c '.data.groups[].rules[] | {name, health, lastError}' <<<"$r" 2>&1 | head -20)"
fi
# The dry-run rule's would-drops are an alert of their own (no `for`); the
# run's other counters are healthy: nothing else is active.
active() { api /api/v1/rules | jq -r '[.data.groups[].rules[] | select(.state != "inactive") |
	"\(.name) (\(.state))"] | join(", ")' 2>/dev/null; }
for i in $(seq 50); do
	act=$(active)
	[[ $act == *"SluiceDryRunWouldDrop (firing)"* ]] && break
	sleep 0.2
done
if [ "$act" = "SluiceDryRunWouldDrop (firing)" ]; then
	ok "the dry-run rule's would-drops fire SluiceDryRunWouldDrop, and no other alert is active"
else
	not_ok "the dry-run rule's would-drops fire SluiceDryRunWouldDrop, and no other alert is active"
	diag "active: ${act:-none}"
	diag "$(api /api/v1/query --data-urlencode 'query=sluice_would_drop_total[30s]' |
		jq -c '.data.result' 2>&1)"
fi

kill "$PROM_PID" 2>/dev/null
wait "$PROM_PID" 2>/dev/null
kill -TERM "$RUN_PID"
if run_exit 10 && [ "$RUN_ST" = 0 ]; then
	ok "on SIGTERM the run exits 0"
else
	not_ok "on SIGTERM the run exits 0"
	diag "exit status $RUN_ST: $(tail -5 "$RUN_OUT")"
fi

tap_done
