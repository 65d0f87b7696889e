#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The compiled datapath, read with llvm-objdump: what no kernel of ours can
# show. A helper's result is an int; on a kernel whose helper returns int
# (Debian 12's 6.1) the register's upper half is zero, so -EEXIST compared as
# 64 bits never matches and a lost race to create a key was taken for a
# failed update (update_failed, passed fail-open). Every test of the result of
# bpf_map_update_elem (helper 2) must be a 32-bit one (w0).
set -u
source tests/lib/tap.sh

OBJ=${BUILD:-build}/sluice.bpf.o
OBJDUMP=$(command -v llvm-objdump || ls /usr/bin/llvm-objdump-* 2>/dev/null | head -1)
if [ ! -f "$OBJ" ] || [ -z "$OBJDUMP" ]; then
	skip "needs $OBJ (make) and llvm-objdump (package llvm)" "helper results compared as int"
	tap_done
	exit 0
fi
# After each "call 2", the first instruction that reads r0 or w0.
uses=$("$OBJDUMP" -d --no-show-raw-insn "$OBJ" | awk '
	/\tcall 2$/ { want = 1; next }
	want && /[rw]0/ { print; want = 0 }')
n=$(grep -c . <<<"$uses")
bad=$(grep -v 'w0' <<<"$uses" | grep -c .)
if [ "$n" -ge 2 ] && [ "$bad" = 0 ]; then
	ok "the $n results of bpf_map_update_elem are tested as 32-bit ints"
else
	not_ok "the results of bpf_map_update_elem are tested as 32-bit ints"
	diag "$uses"
fi
tap_done
