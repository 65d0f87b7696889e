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
      qemu-system-x86 busybox-static cpio kmod xz-utils libhiredis-dev redis-server redis-sentinel
      python3 clang-format dnsmasq-base nginx-light wrk
      debhelper dpkg-dev lintian python3-jsonschema bash-completion)

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

# The tests and the bench run nginx of their own, in their namespaces: the
# service that its package has just started on this machine's port 80 is
# stopped and disabled (one that was installed before is left as it was).
case " ${missing[*]} " in
*" nginx-light "*)
	echo "deps: stopping and disabling the nginx service (the tests start their own)"
	if [ -d /run/systemd/system ]; then
		systemctl disable --now nginx >/dev/null 2>&1 || true
	else
		invoke-rc.d nginx stop >/dev/null 2>&1 || true
		update-rc.d nginx disable >/dev/null 2>&1 || true
	fi
	;;
esac
