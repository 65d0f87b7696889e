// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluice-probe: `send` and `recv`, UDP probes for the shaper's tests. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "probe.h"

static const char usage_text[] =
	"usage: sluice-probe send -s SRC[,SRC...] -d DST -p PORT [-n COUNT] [-r PPS]\n"
	"                         [-l BYTES] [-P BYTES/S] [-T US] [-b N] [-a] [-j]\n"
	"       sluice-probe recv -p PORT [-b ADDR] [-t SECS] [-n TOTAL] [-e US] [-r FILE]\n"
	"                         [-a] [-j]\n"
	"  send: COUNT (default 100) numbered UDP packets from each source address\n"
	"        (each bound in its own socket; the addresses must be on an interface\n"
	"        of this namespace) to DST:PORT, sources taking turns: as fast as the\n"
	"        socket allows, or PPS rounds a second (-r); -l the payload size\n"
	"        (24..1472, default 64); -P SO_MAX_PACING_RATE of every socket;\n"
	"        -T a departure time on every packet (SO_TXTIME, EDT for fq): packet k\n"
	"        leaves 10 ms + k x US after the start; -a adds the times before and\n"
	"        after every send to the JSON (us after the start, by seq); -b N hands\n"
	"        each source's packets to the kernel N (1..256, default 1) at a time in\n"
	"        one sendmmsg(), the send time then taken once per batch (before it)\n"
	"  recv: every packet to PORT (IPv4 and IPv6), its kernel receive time\n"
	"        (SO_TIMESTAMPNS); ends SECS (default 3) after the last packet (or the\n"
	"        start), or at TOTAL packets; reports per source the count, first and\n"
	"        last arrival and the inter-arrival gaps against an expected interval\n"
	"        of US microseconds (-e) and the packets the socket dropped for want of\n"
	"        buffer (SO_RXQ_OVFL); -a adds every packet (seq, arrival and\n"
	"        latency since its send time, in us) to the JSON; -r FILE is created\n"
	"        once the socket is bound\n"
	"  -j  JSON on stdout. Exit status: 0 ok, 1 failure, 2 usage error.\n";

int probe_help(void)
{
	fputs(usage_text, stdout);
	return 0;
}

int probe_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sluice-probe%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'sluice-probe --help'\n");
	return 2;
}

int probe_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sluice-probe: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int probe_addr(const char *text, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return 0;
	}
	return -1;
}

int probe_num(const char *text, double min, double max, double *out)
{
	char *end;
	double v;

	if (!text || !*text)
		return -1;
	v = strtod(text, &end);
	if (*end || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return probe_usage(NULL, "a command is missing: want send or recv");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		return probe_help();
	}
	if (!strcmp(argv[1], "send"))
		return probe_send(argc - 1, argv + 1);
	if (!strcmp(argv[1], "recv"))
		return probe_recv(argc - 1, argv + 1);
	return probe_usage(NULL, "unknown command '%s': want send or recv", argv[1]);
}
