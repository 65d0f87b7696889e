#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A test run installs nothing (issue 21, item 8): `scripts/deps.sh --check`,
# which make test, test-kernels, soak and bench run first, names the missing
# packages and `make deps`, exits 1, and never calls apt-get; with everything
# there it is silent and exits 0. dpkg-query and apt-get are stand-ins on PATH:
# dpkg-query says "jq" is not installed, apt-get notes that it was called.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/tap.sh

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/dpkg-query" <<'SH'
#!/bin/sh
for a; do p=$a; done
[ "$p" = "${SLUICE_TEST_MISSING:-}" ] && { echo "dpkg-query: no packages found matching $p" >&2; exit 1; }
printf 'install ok installed'
SH
cat >"$TMP/apt-get" <<SH
#!/bin/sh
echo "\$*" >>"$TMP/apt-get.calls"
exit 0
SH
chmod +x "$TMP/dpkg-query" "$TMP/apt-get"

out=$(PATH="$TMP:$PATH" SLUICE_TEST_MISSING=jq scripts/deps.sh --check 2>&1)
st=$?
if [ "$st" = 1 ]; then ok "deps --check with jq missing: exit status 1"
else not_ok "deps --check with jq missing: exit status 1 (got $st)"; fi
case $out in
*"missing packages: jq"*"make deps"*) ok "deps --check names the missing package and 'make deps'" ;;
*) not_ok "deps --check names the missing package and 'make deps'"; diag "$out" ;;
esac
if [ ! -e "$TMP/apt-get.calls" ]; then ok "deps --check with jq missing calls no apt-get"
else not_ok "deps --check with jq missing calls no apt-get"; diag "$(cat "$TMP/apt-get.calls")"; fi

out=$(PATH="$TMP:$PATH" SLUICE_TEST_MISSING= scripts/deps.sh --check 2>&1)
st=$?
if [ "$st" = 0 ] && [ -z "$out" ]; then ok "deps --check with everything there: silent, exit status 0"
else not_ok "deps --check with everything there: silent, exit status 0 (got $st)"; diag "$out"; fi

# The Makefile's test targets go through check-deps, and check-deps is --check.
rule=$(make -n -p check-deps 2>/dev/null | sed -n '/^check-deps:/,/^$/p')
case $rule in
*"deps.sh --check"*) ok "make check-deps runs scripts/deps.sh --check" ;;
*) not_ok "make check-deps runs scripts/deps.sh --check"; diag "$rule" ;;
esac
for t in test test-kernels soak bench; do
	if make -n -p "$t" 2>/dev/null | grep -q "^$t: check-deps"; then
		ok "make $t goes through check-deps"
	else
		not_ok "make $t goes through check-deps"
	fi
done
exit $((TAP_FAILED > 0))
