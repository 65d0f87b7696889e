// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-probe recv: every probe packet to one UDP port, with its kernel
 * receive time (SO_TIMESTAMPNS, CLOCK_REALTIME: fine for inter-arrival gaps,
 * and comparable with the sender's send time on the same kernel), then per
 * source the count, first and last arrival and the gaps' statistics. Reads
 * up to RECV_BATCH packets a call (recvmmsg()) so a slow machine's receiver
 * keeps up, and reports what the socket still dropped for want of buffer
 * (SO_RXQ_OVFL: the socket's drop count, carried by every packet read after
 * a drop): gaps measured across a drop are wrong.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "probe.h"

struct rec {
	uint32_t seq;
	int64_t arrive_ns, send_ns;
};

struct flow {
	char text[INET6_ADDRSTRLEN];
	uint32_t count; /* what the sender said it sends */
	size_t n, cap, dup, reordered;
	uint32_t max_seq;
	unsigned char *seen; /* one byte per seq < count */
	struct rec *r;
};

static struct flow flows[PROBE_MAX_SOURCES];
static unsigned nflows;
static unsigned long long foreign, overflow;
static uint32_t rcv_drops; /* SO_RXQ_OVFL: the last count seen */

#define RECV_BATCH 64

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct flow *flow_of(const struct sockaddr_storage *ss)
{
	char text[INET6_ADDRSTRLEN];
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	unsigned i;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, text, sizeof(text));
	for (i = 0; i < nflows; i++)
		if (!strcmp(flows[i].text, text))
			return &flows[i];
	if (nflows == PROBE_MAX_SOURCES)
		return NULL;
	memset(&flows[nflows], 0, sizeof(flows[0]));
	snprintf(flows[nflows].text, sizeof(flows[0].text), "%s", text);
	return &flows[nflows++];
}

/* add: one packet; -ENOMEM, 1 when it is no probe packet, else 0. */
static int add(struct flow *f, const struct probe_hdr *h, int64_t arrive)
{
	uint32_t seq = ntohl(h->seq), count = ntohl(h->count);

	if (ntohl(h->magic) != PROBE_MAGIC || !count || seq >= count)
		return 1;
	if (!f->seen) {
		f->count = count;
		f->seen = calloc(count, 1);
		if (!f->seen)
			return -ENOMEM;
	}
	if (count != f->count || seq >= f->count)
		return 1;
	if (f->seen[seq]) {
		f->dup++;
		return 0;
	}
	f->seen[seq] = 1;
	if (f->n && seq < f->max_seq)
		f->reordered++;
	if (seq > f->max_seq)
		f->max_seq = seq;
	if (sluice_array_room(f->r, f->n, f->cap, 256))
		return -ENOMEM;
	f->r[f->n].seq = seq;
	f->r[f->n].arrive_ns = arrive;
	f->r[f->n].send_ns = (int64_t)be64toh(h->send_ns);
	f->n++;
	return 0;
}

static int cmp_arrival(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return (x->arrive_ns > y->arrive_ns) - (x->arrive_ns < y->arrive_ns);
}

static int report(bool json, bool all, double expect_us, unsigned long long total)
{
	struct probe_stats s;
	unsigned i, shown = 0;
	size_t k;
	int64_t *t;

	if (json)
		printf("{\"total\":%llu,\"expect_us\":%.3f,\"foreign\":%llu,\"drops\":%u,"
		       "\"sources\":[",
		       total, expect_us, foreign, rcv_drops);
	else
		printf("%llu packets from %u sources%s, %u dropped by the socket\n", total, nflows,
		       foreign ? " (and some that were no probe packets)" : "", rcv_drops);
	for (i = 0; i < nflows; i++) {
		struct flow *f = &flows[i];

		if (!f->n)
			continue; /* only foreign packets from it */
		qsort(f->r, f->n, sizeof(*f->r), cmp_arrival);
		t = malloc((f->n ? f->n : 1) * sizeof(*t));
		if (!t)
			return probe_fail("out of memory for %zu arrivals", f->n);
		for (k = 0; k < f->n; k++)
			t[k] = f->r[k].arrive_ns;
		if (probe_stats(t, f->n, expect_us, &s)) {
			free(t);
			return probe_fail("out of memory for %zu arrivals", f->n);
		}
		free(t);
		if (json) {
			printf("%s{\"src\":\"%s\",\"count\":%zu,\"sent\":%u,\"lost\":%zu,"
			       "\"dup\":%zu,\"reordered\":%zu,\"first_ns\":%lld,\"last_ns\":%lld,"
			       "\"first_latency_us\":%.3f,\"span_us\":%.3f,"
			       "\"gap_mean_us\":%.3f,\"gap_median_us\":%.3f,\"gap_p99_us\":%.3f,"
			       "\"gap_min_us\":%.3f,\"gap_max_us\":%.3f,"
			       "\"err_mean_us\":%.3f,\"err_median_us\":%.3f,\"err_p99_us\":%.3f,"
			       "\"err_max_us\":%.3f,\"span_err_us\":%.3f,\"span_err_pct\":%.4f",
			       shown++ ? "," : "", f->text, f->n, f->count, f->count - f->n, f->dup,
			       f->reordered, (long long)f->r[0].arrive_ns,
			       (long long)f->r[f->n - 1].arrive_ns,
			       (double)(f->r[0].arrive_ns - f->r[0].send_ns) / 1e3, s.span_us,
			       s.gap_mean_us, s.gap_median_us, s.gap_p99_us,
			       f->n > 1 ? s.gap_min_us : 0, f->n > 1 ? s.gap_max_us : 0,
			       s.err_mean_us, s.err_median_us, s.err_p99_us, s.err_max_us,
			       s.span_err_us, s.span_err_pct);
			if (all) {
				/* [seq, arrival since the first, latency since its send] */
				printf(",\"packets\":[");
				for (k = 0; k < f->n; k++)
					printf("%s[%u,%.3f,%.3f]", k ? "," : "", f->r[k].seq,
					       (double)(f->r[k].arrive_ns - f->r[0].arrive_ns) /
						       1e3,
					       (double)(f->r[k].arrive_ns - f->r[k].send_ns) / 1e3);
				printf("]");
			}
			printf("}");
			continue;
		}
		printf("source %s: %zu of %u packets (lost %zu, dup %zu, reordered %zu),"
		       " span %.3f ms, first after %.1f us\n",
		       f->text, f->n, f->count, f->count - f->n, f->dup, f->reordered,
		       s.span_us / 1e3, (double)(f->r[0].arrive_ns - f->r[0].send_ns) / 1e3);
		if (f->n < 2)
			continue;
		printf("  gaps us: mean %.1f, median %.1f, p99 %.1f, min %.1f, max %.1f\n",
		       s.gap_mean_us, s.gap_median_us, s.gap_p99_us, s.gap_min_us, s.gap_max_us);
		if (expect_us > 0)
			printf("  error vs %.1f us: mean %.1f us, median |e| %.1f us, p99 |e| %.1f us,"
			       " max |e| %.1f us; span %+.3f ms (%+.2f %%)\n",
			       expect_us, s.err_mean_us, s.err_median_us, s.err_p99_us,
			       s.err_max_us, s.span_err_us / 1e3, s.span_err_pct);
	}
	if (json)
		printf("]}\n");
	return 0;
}

int probe_recv(int argc, char **argv)
{
	double port = 0, timeout = 3, want = 0, expect = 0;
	const char *bind_to = NULL, *ready = NULL;
	bool json = false, all = false, have_port = false;
	struct sockaddr_storage ss;
	unsigned long long total = 0;
	int c, fd, on = 1, off = 0, ret = 0, big = 32 << 20;
	int64_t deadline;

	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:b:t:n:e:r:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (probe_num(optarg, 1, 65535, &port) || port != (int)port)
				return probe_usage("recv", "-p %s: want a UDP port, 1..65535",
						   optarg);
			have_port = true;
			break;
		case 'b':
			bind_to = optarg;
			break;
		case 't':
			if (probe_num(optarg, 0.01, 3600, &timeout))
				return probe_usage("recv", "-t %s: want seconds, 0.01..3600",
						   optarg);
			break;
		case 'n':
			if (probe_num(optarg, 1, 1e9, &want) || want != (long long)want)
				return probe_usage("recv",
						   "-n %s: want a packet count, 1..1000000000",
						   optarg);
			break;
		case 'e':
			if (probe_num(optarg, 0.001, 1e9, &expect))
				return probe_usage("recv",
						   "-e %s: want an interval in microseconds,"
						   " 0.001..1000000000",
						   optarg);
			break;
		case 'r':
			ready = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return probe_help();
		default:
			return probe_usage("recv", "unknown option or missing value");
		}
	}
	if (optind < argc)
		return probe_usage("recv", "unexpected argument '%s'", argv[optind]);
	if (!have_port)
		return probe_usage("recv", "-p PORT is required (e.g. -p 9000)");
	if (bind_to) {
		if (probe_addr(bind_to, (uint16_t)port, &ss))
			return probe_usage("recv", "-b %s: not an IPv4 or IPv6 address", bind_to);
	} else {
		/* [::] with V6ONLY off: IPv4 too, as mapped addresses. */
		probe_addr("::", (uint16_t)port, &ss);
	}
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0)
		return probe_fail("Couldn't create a UDP socket: %s", strerror(errno));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on))) {
		ret = probe_fail("Couldn't enable SO_TIMESTAMPNS: %s", strerror(errno));
		goto out;
	}
	/* Room for a whole burst while we are off the CPU; FORCE passes
	 * rmem_max as root, plain SO_RCVBUF is the fallback. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (bind(fd, (struct sockaddr *)&ss, sizeof(ss))) {
		ret = probe_fail("Couldn't bind UDP port %d%s%s: %s: pick another port (-p)",
				 (int)port, bind_to ? " on " : "", bind_to ? bind_to : "",
				 strerror(errno));
		goto out;
	}
	if (ready) {
		int r = open(ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (r < 0) {
			ret = probe_fail("Couldn't create the ready file %s: %s", ready,
					 strerror(errno));
			goto out;
		}
		close(r);
	}

	if (setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof(on))) {
		ret = probe_fail("Couldn't enable SO_RXQ_OVFL: %s", strerror(errno));
		goto out;
	}

	deadline = mono_ms() + (int64_t)(timeout * 1000);
	while (!want || total < (unsigned long long)want) {
		static unsigned char buf[RECV_BATCH][2048];
		static char cbuf[RECV_BATCH][CMSG_SPACE(sizeof(struct timespec)) * 2 +
					     CMSG_SPACE(sizeof(uint32_t))];
		static struct sockaddr_storage from[RECV_BATCH];
		struct iovec iov[RECV_BATCH];
		struct mmsghdr mm[RECV_BATCH];
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		unsigned long long before = total;
		int r, got, j;

		if (left <= 0)
			break;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = probe_fail("poll failed: %s", strerror(errno));
			goto out;
		}
		if (!r)
			break;
		for (j = 0; j < RECV_BATCH; j++) {
			iov[j] = (struct iovec){ buf[j], sizeof(buf[j]) };
			mm[j].msg_hdr = (struct msghdr){ .msg_name = &from[j],
							 .msg_namelen = sizeof(from[j]),
							 .msg_iov = &iov[j],
							 .msg_iovlen = 1,
							 .msg_control = cbuf[j],
							 .msg_controllen = sizeof(cbuf[j]) };
			mm[j].msg_len = 0;
		}
		got = recvmmsg(fd, mm, RECV_BATCH, MSG_DONTWAIT, NULL);
		if (got < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			ret = probe_fail("recvmmsg failed: %s", strerror(errno));
			goto out;
		}
		for (j = 0; j < got && (!want || total < (unsigned long long)want); j++) {
			struct msghdr *m = &mm[j].msg_hdr;
			int64_t arrive = -1;
			struct cmsghdr *cm;
			struct flow *f;

			for (cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
				if (cm->cmsg_level != SOL_SOCKET)
					continue;
				if (cm->cmsg_type == SCM_TIMESTAMPNS) {
					struct timespec ts;

					memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
					arrive = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
				} else if (cm->cmsg_type == SO_RXQ_OVFL) {
					memcpy(&rcv_drops, CMSG_DATA(cm), sizeof(rcv_drops));
				}
			}
			if (arrive < 0) {
				ret = probe_fail("a packet came without its SO_TIMESTAMPNS receive"
						 " time (control data truncated?)");
				goto out;
			}
			if (mm[j].msg_len < sizeof(struct probe_hdr)) {
				foreign++;
				continue;
			}
			f = flow_of(&from[j]);
			if (!f) {
				overflow++;
				continue;
			}
			r = add(f, (const struct probe_hdr *)buf[j], arrive);
			if (r < 0) {
				ret = probe_fail("out of memory");
				goto out;
			}
			if (r) {
				foreign++;
				continue;
			}
			total++;
		}
		if (total > before)
			deadline = mono_ms() + (int64_t)(timeout * 1000);
	}
	ret = report(json, all, expect, total);
	if (!ret && overflow)
		ret = probe_fail("packets from more than %d sources: %llu were not counted",
				 PROBE_MAX_SOURCES, overflow);
	if (!ret && !total)
		ret = probe_fail("no probe packet arrived on UDP port %d within %g s (-t):"
				 " is the sender's route to this namespace up?",
				 (int)port, timeout);
out:
	close(fd);
	return ret;
}
