// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl set: change the default policy (sources no rule matches) and the
 * interface's settings (dry-run, new-key admission, fail-closed). */
#include <stdio.h>

#include "sluicectl.h"

void set_help(FILE *f)
{
	fprintf(f,
		"Usage: sluicectl [-i IFACE] set [--rate RATE [--burst N] [--delay N|--nodelay]]...\n"
		"                 [--algo ALGO] [--window DUR] [--prefix4 LEN] [--prefix6 LEN]\n"
		"                 [--fleet on|off] [--dry-run on|off] [--new-keys RATE|off]\n"
		"                 [--fail-closed on|off]\n"
		"\n"
		"Change the default policy: the limit of every source that no rule matches,\n"
		"and the settings of the interface (--dry-run, --new-keys, --fail-closed,\n"
		"which given alone leave the policy as it is).\n"
		"What is not given is kept, with two exceptions: --rate replaces every rate\n"
		"of the policy (give both kinds to keep both), and a new --rate without\n"
		"--burst gets the default burst of that rate (on a shaper, without --delay\n"
		"delay 0). The change is atomic: a packet sees the old policy or the new\n"
		"one, never a mix.\n"
		"\n"
		"  --rate RATE     packets (100/s 6000/m 1/h 100pps) or bytes (10mbit 1gbit\n"
		"                  500kbps) per source; give it twice, once of each kind, to\n"
		"                  limit both: a packet passes only if both admit it\n"
		"  --burst N       the --rate before it may be exceeded by N back-to-back units\n"
		"                  (packets, or bytes for a byte rate); default one second's\n"
		"                  worth. For leaky-bucket it is the queue the meter emulates.\n"
		"                  On a shaper it is the queue beyond the packet being sent\n"
		"                  (nginx's burst=): burst+1 packets go into an idle key at\n"
		"                  once or queued, more are dropped; --burst 0 is allowed\n"
		"  --delay N       a shaper's (-i shape:IFACE, sluice shape attach): of a burst\n"
		"                  the first N excess units of the --rate before it (packets,\n"
		"                  or bytes for a byte rate) go at once, the rest wait their\n"
		"                  turn at the rate (nginx's delay=); default 0: every excess\n"
		"                  unit waits. At most --burst. A limiter refuses it\n"
		"  --nodelay       a shaper's: every accepted packet goes at once, the excess\n"
		"                  beyond --burst is dropped (a meter)\n"
		"                  A shaper's longest delay, (burst - delay) x interval, must\n"
		"                  stay below its fq horizon ('sluice shape attach --horizon')\n"
		"  --algo ALGO     token-bucket | leaky-bucket | sliding-window | fixed-window |\n"
		"                  sliding-log (without --rate the rate is kept); on a shaper\n"
		"                  the window algorithms are meters: their excess is dropped,\n"
		"                  nothing waits, and they take no --delay\n"
		"  --window DUR    window of the window algorithms, 100ms to 1h; default the\n"
		"                  period of the rate as written (1s for 100/s, 1m for 30/m)\n"
		"  --prefix4 LEN   IPv4 sources share a bucket per /LEN (default 32)\n"
		"  --prefix6 LEN   IPv6 sources share a bucket per /LEN (default 64)\n"
		"  --fleet on|off  one limit per source across every box of a fleet (token-\n"
		"                  bucket and leaky-bucket; the window algorithms count per\n"
		"                  box and refuse it): 'sluice run IFACE --redis ADDR --fleet\n"
		"                  NAME' on each box shares the usage through Redis. Of N live\n"
		"                  boxes each holds burst/N; while Redis is unreachable each\n"
		"                  admits rate/N. See sluice(8), FLEET-WIDE LIMITS\n"
		"  --dry-run on|off  every policy only counts what it would drop\n"
		"  --new-keys RATE|off  admit at most RATE new sources (a packet rate, one\n"
		"                  second's worth at once); past it, new sources share their\n"
		"                  /24 (IPv6: /48) bucket. 'off' (the default) admits all\n"
		"  --fail-closed on|off  when the key table cannot hold a new source, drop its\n"
		"                  packets (on) or pass them (off, the default)\n"
		"\n"
		"A new rate, burst or delay keeps every bucket's state. A new algorithm,\n"
		"window or prefix starts every source with a fresh, full bucket.\n"
		"\n"
		"Examples:\n"
		"  sluicectl set --rate 1000/s --burst 2000\n"
		"  sluicectl set --rate 500/s --rate 20mbit\n"
		"  sluicectl set --algo sliding-window --rate 6000/m --window 10s\n"
		"  sluicectl set --prefix6 56 --dry-run on\n"
		"  sluicectl set --new-keys 1000/s --fail-closed on\n"
		"  sluicectl set --rate 100/s --burst 300 --fleet on\n"
		"  sluicectl -i shape:eth1 set --rate 100/s --burst 50 --delay 10\n"
		"  sluicectl -i shape:eth1 set --rate 1000/s --nodelay\n");
}

int do_set(int argc, char **argv)
{
	return ctl_edit("set", NULL, argc, argv, set_help);
}
