#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# sluice@.service under a real systemd, where systemd is not PID 1 (a CI
# container): systemd runs as PID 1 of a private PID and mount namespace,
# inside the lab's receiver network namespace, and this script starts,
# reloads, restarts (under a flood from a held source, counted by an nft
# counter independent of sluice) and stops the service, then detaches.
#   sudo scripts/service-demo.sh        (root; about 20 s)
# First it enables and starts the unit without its config file (enable --now
# --runtime): that fails (exit 1), the unit stays failed (systemctl --failed),
# and nothing is attached (its attach names the file).
# The unit is the one `make install` writes, less its two device lines (no
# udev in such a namespace, so no device units). It has DefaultDependencies=no
# itself (it is ordered before network-pre.target), so starting it pulls in
# no sysinit.target, whose systemd-tmpfiles would clean the machine's /tmp.
# Not part of `make test`: this systemd makes its cgroups in the machine's
# cgroup tree (init.scope, system.slice), and leaves them.
set -u
cd "$(dirname "$0")/.."
D=$(mktemp -d /var/tmp/sluice-service-demo.XXXXXX) || exit 1
source tests/lib/tap.sh
source tests/lib/netns.sh
netns_setup sd 51 || exit 1
PFX=$D/prefix
make -s install PREFIX="$PFX" >/dev/null || exit 1
UNIT=$PFX/lib/systemd/system/sluice@.service
mkdir -p $D/etc; CONF=$D/etc/$IF_RX.conf
printf 'set --rate 1000/s --burst 1000\nrule add 198.18.51.100/32 --exempt\n' > $CONF
cat > $D/inner.sh <<IN
#!/bin/bash
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /run/systemd/system /etc/sluice
mount --bind $D/etc /etc/sluice
# No udev here, so no device units: the copy leaves out the two device lines
# (a drop-in cannot reset dependencies).
grep -v 'sys-subsystem-net-devices' $UNIT > /run/systemd/system/sluice@.service
# This systemd shares the machine: no sysinit.target (tmpfiles would clean the host's /tmp).
printf '[Unit]\nDescription=demo\nDefaultDependencies=no\n' > /run/systemd/system/demo.target
export container=sluice-demo
exec /lib/systemd/systemd --system --unit=demo.target
IN
chmod +x $D/inner.sh
nsenter --net=/var/run/netns/$NS_RX unshare --pid --fork --mount --uts --mount-proc $D/inner.sh >$D/systemd.log 2>&1 </dev/null &
NETNS_PIDS+=($!)
sleep 3
SDPID=$(pgrep -f "lib/systemd/systemd --system --unit=demo.target" | head -1)
netns_extra_cleanup() { kill -9 "$SDPID" 2>/dev/null; sleep 0.5; rm -rf "$D"; }
sc() { timeout 30 nsenter -t $SDPID -m -p systemctl "$@"; }
echo "systemd PID (host view): $SDPID, state: $(sc is-system-running)"
mv $CONF $CONF.away
echo '$ systemctl enable --now --runtime sluice@'$IF_RX' (no /etc/sluice/'$IF_RX'.conf)'
sc enable --now --runtime sluice@$IF_RX; echo "exit $?"
sc status sluice@$IF_RX --no-pager -n 3 | sed 's/^/  /'
echo "program: '$(xdp_prog_id)' (none: nothing attached); systemctl --failed: $(sc --failed --plain --no-legend | awk '{print $1}')"
mv $CONF.away $CONF; sc disable --runtime sluice@$IF_RX 2>/dev/null; sc reset-failed sluice@$IF_RX
echo '$ systemctl start sluice@'$IF_RX; sc start sluice@$IF_RX; echo "exit $?"
sc status sluice@$IF_RX --no-pager -n 8 | sed 's/^/  /'
echo "program: $(xdp_prog_id)"
rx_counter_add held ip saddr 198.18.51.1 || exit 1
gen_bg flood -s 198.18.51.1 -d $ADDR4_RX -r 20000 -t 6
sleep 1.5
printf 'set --rate 1000/s --burst 1000\nrule add 198.18.51.100/32 --exempt\nrule add 198.18.51.200/32 --deny\n' > $CONF
echo '$ systemctl reload sluice@'$IF_RX; sc reload sluice@$IF_RX; echo "exit $?"; p1=$(xdp_prog_id)
sleep 1.5
echo '$ systemctl restart sluice@'$IF_RX; sc restart sluice@$IF_RX; echo "exit $?"; p2=$(xdp_prog_id)
gen_wait flood || exit 1
sleep 0.3
adm=$(rx_counter held)
echo "program before restart $p1, after $p2"
held_verdict "$adm" 1000 1000 "$flood_seconds" "$flood_lag"; echo "verdict $? (0 = within 2%)"
echo "sluice's own counters: $(rx_ctl -j stats | grep -o '"passed":[0-9]*\|"limited":[0-9]*' | tr '\n' ' ')"
rx_ctl rule list
echo '$ systemctl stop sluice@'$IF_RX; sc stop sluice@$IF_RX; echo "exit $?"
sc is-active sluice@$IF_RX
echo "program after stop: $(xdp_prog_id) (stop leaves the limiter in the kernel)"
sc status sluice@$IF_RX --no-pager -n 20 | sed 's/^/  /'
echo '$ sluice detach (removing it for good)'; rx_sluice detach $IF_RX
echo "program after detach: '$(xdp_prog_id)'"
