#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Issue 23's goals 1 and 2 in the cost tables (render.py issue23_goals()),
# on made-up measurements, no timing: each ratio is of the run's medians,
# each algorithm has its own bound (1.25x the floor's hot path for the
# buckets, 1.5x for the windows, 2x for the sliding log), the drop path is
# held to 1.10x the pass path, a new set-table key (free and held) to 1.15x
# the floor's new key, and a quick run (-q, no T3) says so instead.
set -u
source tests/lib/tap.sh

command -v python3 >/dev/null || { skip "python3 is not installed (run 'sudo make deps')" \
	"the bench's goals"; exit 0; }

# py CODE: python3 with render.py imported as r and run(quick, ns) making
# a cost document whose case (test, table, family, algo) runs in ns[key]
# (every unnamed case: 100 ns), rendering the goals, and row(g, table, fam,
# algo) the goals' row of one case: prints what CODE prints.
py() {
	PYTHONDONTWRITEBYTECODE=1 python3 -c "import sys; sys.path.insert(0, 'tools/bench'); import render as r
ALGOS = ['token-bucket', 'leaky-bucket', 'sliding-window', 'fixed-window', 'sliding-log']
def run(quick, ns):
    cases = []
    def case(t, table, fam, algo):
        v = ns.get((t, table, fam, algo), 100.0)
        cases.append({'test': t, 'table': table, 'family': fam, 'algo': algo, 'valid': True,
                      'fs_runs': [v * 1e6] * 3})
    for fam in (4, 6):
        for t in ('T1', 'T2', 'T3'):
            case(t, 'floor', fam, 'none')
        case('T1', 'lru', fam, 'none')
        for table in ('lru', 'sets'):
            for a in ALGOS:
                for t in ('T2a', 'T2b', 'T3', 'T3held'):
                    case(t, table, fam, a)
    c = r.Cost({'cases': cases, 'quick': quick})
    md, out = [], {}
    r.issue23_goals(c, md, out)
    return ''.join(md), out['issue23']
def row(g, table, fam, algo):
    return [x for x in g['rows'] if (x['table'], x['family'], x['algo']) == (table, fam, algo)][0]
$1" 2>&1
}
is() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; diag "want '$2', got '$3'"; fi
}

# A floor of 30 parse + 40 (T2) and 200 (T3); sluice's parse 30.
base='{}
for fam in (4, 6):
    ns[("T1", "floor", fam, "none")] = 30; ns[("T2", "floor", fam, "none")] = 70
    ns[("T3", "floor", fam, "none")] = 230; ns[("T1", "lru", fam, "none")] = 30
    for table in ("lru", "sets"):
        for a in ALGOS:
            ns[("T2a", table, fam, a)] = 80; ns[("T2b", table, fam, a)] = 84
            ns[("T3", table, fam, a)] = 250; ns[("T3held", table, fam, a)] = 250'

is "within every bound: hot 1.25x, drop 1.08x, new keys 1.10x: all met" \
	"{'hot': True, 'drop': True, 'new_key': True}" \
	"$(py "ns = $base
md, g = run(False, ns); print(g['met'])")"
is "a token bucket 51 ns over parse against the floor's 40 is 1.275x: missed" \
	"1.275 False" \
	"$(py "ns = $base
ns[('T2a', 'sets', 6, 'token-bucket')] = 81
md, g = run(False, ns); print(row(g, 'sets', 6, 'token-bucket')['hot'], g['met']['hot'])")"
is "a window may take 1.5x (60 ns over parse) and the log 2x (80): met" "True" \
	"$(py "ns = $base
for table in ('lru', 'sets'):
    for fam in (4, 6):
        ns[('T2a', table, fam, 'sliding-window')] = 90; ns[('T2b', table, fam, 'sliding-window')] = 90
        ns[('T2a', table, fam, 'sliding-log')] = 110; ns[('T2b', table, fam, 'sliding-log')] = 110
md, g = run(False, ns); print(g['met']['hot'])")"
is "a window at 1.525x is missed, and its row says so" "False True" \
	"$(py "ns = $base
ns[('T2a', 'lru', 4, 'fixed-window')] = 91; ns[('T2b', 'lru', 4, 'fixed-window')] = 91
md, g = run(False, ns)
print(g['met']['hot'], '| lru | IPv4 | fixed-window | 1.52 | MISSED |' in md)")"
is "a drop path 11% over the pass path (55.5 over 50) is missed" "False" \
	"$(py "ns = $base
ns[('T2b', 'lru', 6, 'leaky-bucket')] = 85.5
md, g = run(False, ns); print(g['met']['drop'])")"
is "a held new key at 1.2x the floor's (240 over 200) is missed (the free one at 1.1x)" \
	"False 1.1 1.2" \
	"$(py "ns = $base
ns[('T3held', 'sets', 4, 'leaky-bucket')] = 270
md, g = run(False, ns); x = row(g, 'sets', 4, 'leaky-bucket')
print(g['met']['new_key'], round(x['new_key_free'], 3), round(x['new_key_held'], 3))")"
is "the sliding log's new keys (its LRU sluice_logs) are left out of goal 2" "True" \
	"$(py "ns = $base
ns[('T3', 'sets', 4, 'sliding-log')] = 1000
md, g = run(False, ns); print(g['met']['new_key'])")"
is "a quick run (no T3) has no new-key goal and says so" "False True" \
	"$(py "ns = $base
md, g = run(True, ns); print('new_key' in g['met'], 'New keys (T3) not run (-q).' in md)")"
tap_done
