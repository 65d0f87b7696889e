#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Install what sluice needs to build, test, bench and demo, from Debian.
#   scripts/deps.sh          install every package that is missing
#   scripts/deps.sh --check  install nothing: name what is missing and exit 1
#                            (make test, test-kernels, soak and bench: a test
#                            run never installs; `make deps` does)
set -euo pipefail

PKGS=(clang llvm libbpf-dev libxdp-dev bpftool xdp-tools libelf-dev zlib1g-dev
      gcc-multilib pkg-config make gcc iproute2 nftables iptables netsniff-ng
      ethtool gnuplot-nox util-linux systemd man-db jq libmicrohttpd-dev curl prometheus
      qemu-system-x86 busybox-static cpio kmod xz-utils libhiredis-dev redis-server
      python3 clang-format dnsmasq-base)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	[ "${1:-}" = "--check" ] || echo "deps: everything is installed"
	exit 0
fi

if [ "${1:-}" = "--check" ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run 'sudo make deps' to install them, then run this again" >&2
	exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: run 'sudo make deps' (or install them with apt-get) and try again" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
