#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# A reproducer, not part of `make test` (suite "stress": SUITES=stress, or
# `make test-kernels KERNEL_SUITES=stress`). Under qemu, Debian's 6.12.117
# oopsed twice during the net suite ("int3" in bpf_dispatcher_xdp_func, in
# veth_poll's XDP run, while sluice-gen's BPF_PROG_TEST_RUN live-frames run
# was being torn down); this script oopses it within seconds, in the
# generator's own run (xdp_test_run_batch). 6.1 and 6.18 live through it. Both halves here: XDP traffic through a veth whose
# receiver runs sluice (every packet through the kernel's XDP dispatcher),
# and, on a second pair, short live-frames runs one after another (each one
# registers its program with that dispatcher and unregisters it). The kernel
# must live through it; a guest that oopses is reported by test-kernels.
set -u
source tests/lib/tap.sh
source tests/lib/netns.sh

netns_need_root "dispatcher stress"
netns_need_sluice "dispatcher stress"
RUNS=${STRESS_RUNS:-200}

netns_setup sd 66 || { not_ok "build the namespaces and the veth pair"; exit 1; }
# The second pair, between the same namespaces, with sluice on its receiver.
ip link add "${IF_TX}b" netns "$NS_TX" type veth peer name "${IF_RX}b" netns "$NS_RX"
ip -n "$NS_TX" addr add 198.18.67.1/24 dev "${IF_TX}b"
ip -n "$NS_RX" addr add 198.18.67.2/24 dev "${IF_RX}b"
ip -n "$NS_TX" link set "${IF_TX}b" up
ip -n "$NS_RX" link set "${IF_RX}b" up
netns_extra_cleanup() { rx_sluice detach "${IF_RX}b" >/dev/null 2>&1; }
expect_status 0 "sluice on the first receiver" rx_sluice attach "$IF_RX" --rate 1000/s || exit 1
expect_status 0 "sluice on the second receiver" rx_sluice attach "${IF_RX}b" || exit 1

# A long flood through the first pair, stopped at the end.
gen_bg flood -s 198.18.66.10 -d "$ADDR4_RX" -r 200000 -t 600s
sleep 1
failed=0
for ((i = 0; i < RUNS; i++)); do
	ip netns exec "$NS_TX" "$SLUICE_GEN" -i "${IF_TX}b" -s 198.18.67.10 -d 198.18.67.2 -n 100 \
		>/dev/null 2>&1 || failed=$((failed + 1))
done
gen_stop flood
gen_wait flood || not_ok "the flood through the first pair"
if [ "$failed" = 0 ]; then ok "$RUNS live-frames runs during a flood through the dispatcher"
else not_ok "$RUNS live-frames runs during a flood: $failed failed"; fi
tap_done
