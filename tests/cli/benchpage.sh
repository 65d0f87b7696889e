#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# docs/performance.md's tables are one make bench run's, not typed by hand:
# every <!-- bench:NAME --> block of the page is what tools/bench/render.py
# makes of the run's measurements kept in docs/bench/ (make bench-page), and
# the check fails on a page whose block was edited, names an unknown table,
# or lacks the run's files.
set -u
source tests/lib/tap.sh

command -v python3 >/dev/null || { skip "python3 is not installed (run 'sudo make deps')" \
	"the performance page's tables"; exit 0; }
R=tools/bench/render.py
PAGE=docs/performance.md
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

out=$("$R" page "$PAGE" docs/bench --check 2>&1)
st=$?
if [ $st = 0 ]; then
	ok "docs/performance.md's bench blocks are what docs/bench/ renders"
else
	not_ok "docs/performance.md's bench blocks are what docs/bench/ renders"
	diag "exit status $st: $out"
fi

n=$(grep -c "^<!-- bench:[a-z0-9-]* -->$" "$PAGE")
want=$(grep -o "^    \"[a-z0-9-]*\": (" "$R" | wc -l)
if [ "$n" -ge "$want" ]; then
	ok "the page has a block for each of the bench's $want tables ($n blocks)"
else
	not_ok "the page has a block for each of the bench's $want tables ($n blocks)"
fi

# A number changed inside a block (the first digit of the rules block's table)
cp "$PAGE" "$T/page.md"
awk '/^<!-- bench:rules -->$/ { inb = 1 } /^<!-- \/bench:rules -->$/ { inb = 0 }
     inb && !done && /^\| one batch/ { sub(/[0-9]/, "9"); done = 1 } { print }' \
	"$PAGE" >"$T/edited.md"
if cmp -s "$PAGE" "$T/edited.md"; then
	not_ok "a page with a number edited in a block (the edit was made)"
else
	out=$("$R" page "$T/edited.md" docs/bench --check 2>&1)
	st=$?
	if [ $st = 1 ] && grep -q "rules" <<<"$out" && grep -q "make bench-page" <<<"$out"; then
		ok "a number typed into a block fails the check, naming the block and make bench-page"
	else
		not_ok "a number typed into a block fails the check, naming the block and make bench-page"
		diag "exit status $st: $out"
	fi
	"$R" page "$T/edited.md" docs/bench >/dev/null 2>&1
	if cmp -s "$PAGE" "$T/edited.md"; then
		ok "rendering the edited page puts the run's table back"
	else
		not_ok "rendering the edited page puts the run's table back"
	fi
fi

# An unknown table
printf '# x\n\n<!-- bench:nosuch -->\n| 1 |\n<!-- /bench:nosuch -->\n' >"$T/unknown.md"
out=$("$R" page "$T/unknown.md" docs/bench --check 2>&1)
st=$?
if [ $st != 0 ] && grep -q "no such bench table 'nosuch'" <<<"$out"; then
	ok "a block naming no bench table is refused, naming it"
else
	not_ok "a block naming no bench table is refused, naming it"
	diag "exit status $st: $out"
fi

# The run's files missing
mkdir "$T/empty"
out=$("$R" page "$PAGE" "$T/empty" --check 2>&1)
st=$?
if [ $st != 0 ] && grep -q "make bench" <<<"$out"; then
	ok "without the run's files the check fails and says to run make bench"
else
	not_ok "without the run's files the check fails and says to run make bench"
	diag "exit status $st: $out"
fi

# The page names the run its tables come from
run=$(head -1 docs/bench/results.md 2>/dev/null | sed -n 's/^## sluice benchmarks (\(.*\))$/\1/p')
if [ -n "$run" ] && grep -qF "$run" "$PAGE"; then
	ok "the page names the run its tables come from ($run)"
else
	not_ok "the page names the run its tables come from (${run:-no docs/bench/results.md})"
fi
tap_done
