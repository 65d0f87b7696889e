// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-probe send: COUNT numbered packets from each source address, the
 * sources taking turns (one round = one packet of each), as fast as the
 * sockets allow or at PPS rounds a second on an absolute schedule
 * (clock_nanosleep), so a late wakeup does not stretch the rest. With -T US
 * every packet carries a departure time (SO_TXTIME, CLOCK_MONOTONIC): packet
 * k of each source leaves at start + k x US, which fq honours (EDT), the way
 * the shaper's program stamps them: a reference that needs no sluice.
 *
 * With -b N (2..256) each source hands its packets to the kernel N at a time
 * in one sendmmsg() call (packets k..k+N-1, each with its own sequence number
 * and, with -T, its own departure time): far fewer system calls, for senders
 * that must outrun a shaper on a slow machine. The send time is then taken
 * once per batch, before the call: every packet of a batch carries it (and -a
 * records it, and the time after the call, for each of them); with -r PPS a
 * batch waits for the slot of its first packet.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define PROBE_MAX_BATCH 256

struct source {
	char text[INET6_ADDRSTRLEN];
	int fd;
	unsigned long long sent, errors;
	int last_errno;
	/* -a: CLOCK_REALTIME before and after every sendmsg(), by seq (the
	 * egress path, tc included, runs in between) */
	uint64_t *sent_at, *sent_end;
};

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t at)
{
	struct timespec ts = { .tv_sec = at / 1000000000ULL, .tv_nsec = at % 1000000000ULL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Packet k's departure time with -T: 10 ms ahead of the first, so the
 * departures are all in the future however slow the sending. */
static uint64_t departure(uint64_t t0, unsigned k, double txtime_us)
{
	return t0 + 10000000ULL + (uint64_t)((double)k * txtime_us * 1e3);
}

/* m's control buffer (room for one uint64_t) carries SCM_TXTIME at. */
static void set_txtime(struct msghdr *m, uint64_t at)
{
	struct cmsghdr *cm = CMSG_FIRSTHDR(m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_TXTIME;
	cm->cmsg_len = CMSG_LEN(sizeof(at));
	memcpy(CMSG_DATA(cm), &at, sizeof(at));
}

/* -b N: packets k..k+N-1 of each source in one sendmmsg() (resumed where
 * the kernel stopped short; a message it refuses is an error and skipped),
 * every packet of a batch stamped with the time before the first call. */
static void send_batches(struct source *src, unsigned nsrc, const struct sockaddr_storage *to,
			 unsigned char (*bufs)[PROBE_MAX_PAYLOAD], struct mmsghdr *mm,
			 struct iovec *iovs, char (*cbufs)[CMSG_SPACE(sizeof(uint64_t))],
			 unsigned batch, unsigned count, size_t len, double pps, double txtime_us,
			 uint64_t t0)
{
	unsigned k0, n, i, j;

	for (j = 0; j < batch; j++) {
		struct probe_hdr *h = (struct probe_hdr *)bufs[j];

		h->magic = htonl(PROBE_MAGIC);
		h->count = htonl(count);
		iovs[j] = (struct iovec){ bufs[j], len };
	}
	for (k0 = 0; k0 < count; k0 += batch) {
		n = count - k0 < batch ? count - k0 : batch;
		if (pps > 0)
			sleep_until(t0 + (uint64_t)((double)k0 * 1e9 / pps));
		for (i = 0; i < nsrc; i++) {
			uint64_t t = now_ns(CLOCK_REALTIME), te;
			unsigned done = 0;

			for (j = 0; j < n; j++) {
				struct probe_hdr *h = (struct probe_hdr *)bufs[j];
				struct msghdr *m = &mm[j].msg_hdr;

				h->seq = htonl(k0 + j);
				h->send_ns = htobe64(t);
				memset(m, 0, sizeof(*m));
				m->msg_name = (void *)to;
				m->msg_namelen = sizeof(*to);
				m->msg_iov = &iovs[j];
				m->msg_iovlen = 1;
				if (txtime_us) {
					memset(cbufs[j], 0, sizeof(cbufs[j]));
					m->msg_control = cbufs[j];
					m->msg_controllen = sizeof(cbufs[j]);
					set_txtime(m, departure(t0, k0 + j, txtime_us));
				}
			}
			while (done < n) {
				int r = sendmmsg(src[i].fd, mm + done, n - done, 0);

				if (r < 0) {
					src[i].errors++;
					src[i].last_errno = errno;
					done++;
				} else {
					src[i].sent += (unsigned)r;
					done += (unsigned)r;
				}
			}
			te = now_ns(CLOCK_REALTIME);
			for (j = 0; j < n; j++) {
				if (src[i].sent_at)
					src[i].sent_at[k0 + j] = t;
				if (src[i].sent_end)
					src[i].sent_end[k0 + j] = te;
			}
		}
	}
}

int probe_send(int argc, char **argv)
{
	const char *srcs = NULL, *dst = NULL;
	double port = 0, count = 100, pps = 0, len = 64, pacing = 0, txtime_us = 0, batch = 1;
	struct sockaddr_storage to, from;
	struct source src[PROBE_MAX_SOURCES];
	unsigned char buf[PROBE_MAX_PAYLOAD] = { 0 };
	struct probe_hdr *h = (struct probe_hdr *)buf;
	unsigned nsrc = 0, i, k;
	uint64_t t0, start, end;
	unsigned long long sent = 0, errors = 0;
	bool json = false, have_port = false, all = false;
	char *list, *tok, *save;
	unsigned char(*bufs)[PROBE_MAX_PAYLOAD] = NULL;
	struct mmsghdr *mm = NULL;
	struct iovec *iovs = NULL;
	char(*cbufs)[CMSG_SPACE(sizeof(uint64_t))] = NULL;
	int c, ret = 0;

	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	optind = 1;
	while ((c = getopt_long(argc, argv, "s:d:p:n:r:l:P:T:b:ajh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			srcs = optarg;
			break;
		case 'd':
			dst = optarg;
			break;
		case 'p':
			if (probe_num(optarg, 1, 65535, &port) || port != (int)port)
				return probe_usage("send", "-p %s: want a UDP port, 1..65535",
						   optarg);
			have_port = true;
			break;
		case 'n':
			if (probe_num(optarg, 1, 10000000, &count) || count != (int)count)
				return probe_usage(
					"send", "-n %s: want a packet count, 1..10000000", optarg);
			break;
		case 'r':
			if (probe_num(optarg, 0.001, 10000000, &pps))
				return probe_usage("send",
						   "-r %s: want rounds a second, 0.001..10000000"
						   " (omit -r for as fast as the socket allows)",
						   optarg);
			break;
		case 'l':
			if (probe_num(optarg, PROBE_MIN_PAYLOAD, PROBE_MAX_PAYLOAD, &len) ||
			    len != (int)len)
				return probe_usage(
					"send",
					"-l %s: want a payload size in bytes, %u..%u"
					" (the header is %u bytes; 1472 fills a 1500 MTU)",
					optarg, PROBE_MIN_PAYLOAD, PROBE_MAX_PAYLOAD,
					PROBE_MIN_PAYLOAD);
			break;
		case 'P':
			if (probe_num(optarg, 1, 4294967295.0, &pacing) ||
			    pacing != (long long)pacing)
				return probe_usage("send",
						   "-P %s: want a pacing rate in bytes a second,"
						   " 1..4294967295",
						   optarg);
			break;
		case 'T':
			if (probe_num(optarg, 1, 1e7, &txtime_us))
				return probe_usage("send",
						   "-T %s: want a departure interval in"
						   " microseconds, 1..10000000",
						   optarg);
			break;
		case 'b':
			if (probe_num(optarg, 1, PROBE_MAX_BATCH, &batch) || batch != (int)batch)
				return probe_usage("send",
						   "-b %s: want packets a sendmmsg() call, 1..%d"
						   " (1: one sendmsg() a packet)",
						   optarg, PROBE_MAX_BATCH);
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
			return probe_usage("send", "unknown option or missing value");
		}
	}
	if (optind < argc)
		return probe_usage("send", "unexpected argument '%s'", argv[optind]);
	if (!srcs || !dst || !have_port)
		return probe_usage("send", "-s SRC, -d DST and -p PORT are required"
					   " (e.g. -s 198.18.1.1 -d 198.18.1.2 -p 9000)");
	if (probe_addr(dst, (uint16_t)port, &to))
		return probe_usage("send", "-d %s: not an IPv4 or IPv6 address", dst);

	list = strdup(srcs);
	if (!list)
		return probe_fail("out of memory");
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct source *s = &src[nsrc];

		if (nsrc == PROBE_MAX_SOURCES) {
			ret = probe_usage("send",
					  "-s: more than %d source addresses: send from"
					  " several probes instead",
					  PROBE_MAX_SOURCES);
			goto out;
		}
		if (probe_addr(tok, 0, &from) || from.ss_family != to.ss_family) {
			ret = probe_usage("send", "-s %s: not an %s address (as -d %s)", tok,
					  to.ss_family == AF_INET ? "IPv4" : "IPv6", dst);
			goto out;
		}
		memset(s, 0, sizeof(*s));
		snprintf(s->text, sizeof(s->text), "%s", tok);
		s->fd = socket(to.ss_family, SOCK_DGRAM, 0);
		if (s->fd < 0) {
			ret = probe_fail("Couldn't create a UDP socket: %s", strerror(errno));
			goto out;
		}
		nsrc++;
		if (all && (!(s->sent_at = calloc((size_t)count, sizeof(*s->sent_at))) ||
			    !(s->sent_end = calloc((size_t)count, sizeof(*s->sent_end))))) {
			ret = probe_fail("out of memory for %.0f send times", count);
			goto out;
		}
		if (bind(s->fd, (struct sockaddr *)&from, sizeof(from))) {
			ret = probe_fail(
				"Couldn't bind source %s: %s: the address must be on an"
				" interface of this namespace (ip addr add %s/%s dev IFACE)",
				tok, strerror(errno), tok, to.ss_family == AF_INET ? "32" : "128");
			goto out;
		}
		if (txtime_us) {
			struct sock_txtime st = { .clockid = CLOCK_MONOTONIC };

			if (setsockopt(s->fd, SOL_SOCKET, SO_TXTIME, &st, sizeof(st))) {
				ret = probe_fail("Couldn't set SO_TXTIME: %s (needs CAP_NET_ADMIN"
						 " for CLOCK_MONOTONIC)",
						 strerror(errno));
				goto out;
			}
		}
		if (pacing) {
			unsigned int r = (unsigned int)pacing;

			if (setsockopt(s->fd, SOL_SOCKET, SO_MAX_PACING_RATE, &r, sizeof(r))) {
				ret = probe_fail("Couldn't set SO_MAX_PACING_RATE %u: %s", r,
						 strerror(errno));
				goto out;
			}
		}
	}

	h->magic = htonl(PROBE_MAGIC);
	h->count = htonl((uint32_t)count);
	if (batch > 1) {
		bufs = calloc((size_t)batch, sizeof(*bufs));
		mm = calloc((size_t)batch, sizeof(*mm));
		iovs = calloc((size_t)batch, sizeof(*iovs));
		cbufs = calloc((size_t)batch, sizeof(*cbufs));
		if (!bufs || !mm || !iovs || !cbufs) {
			ret = probe_fail("out of memory for a batch of %.0f packets (-b)", batch);
			goto out;
		}
	}
	start = now_ns(CLOCK_REALTIME);
	t0 = now_ns(CLOCK_MONOTONIC);
	if (batch > 1) {
		send_batches(src, nsrc, &to, bufs, mm, iovs, cbufs, (unsigned)batch,
			     (unsigned)count, (size_t)len, pps, txtime_us, t0);
		goto done;
	}
	for (k = 0; k < (unsigned)count; k++) {
		if (pps > 0)
			sleep_until(t0 + (uint64_t)((double)k * 1e9 / pps));
		h->seq = htonl(k);
		for (i = 0; i < nsrc; i++) {
			char cbuf[CMSG_SPACE(sizeof(uint64_t))] = { 0 };
			struct iovec iov = { buf, (size_t)len };
			struct msghdr m = { .msg_name = &to,
					    .msg_namelen = sizeof(to),
					    .msg_iov = &iov,
					    .msg_iovlen = 1 };

			if (txtime_us) {
				m.msg_control = cbuf;
				m.msg_controllen = sizeof(cbuf);
				set_txtime(&m, departure(t0, k, txtime_us));
			}
			uint64_t t = now_ns(CLOCK_REALTIME);

			h->send_ns = htobe64(t);
			if (src[i].sent_at)
				src[i].sent_at[k] = t;
			if (sendmsg(src[i].fd, &m, 0) < 0) {
				src[i].errors++;
				src[i].last_errno = errno;
			} else {
				src[i].sent++;
			}
			if (src[i].sent_end)
				src[i].sent_end[k] = now_ns(CLOCK_REALTIME);
		}
	}
done:
	end = now_ns(CLOCK_REALTIME);

	for (i = 0; i < nsrc; i++) {
		sent += src[i].sent;
		errors += src[i].errors;
	}
	if (json) {
		printf("{\"sent\":%llu,\"errors\":%llu,\"seconds\":%.6f,\"start_ns\":%llu,"
		       "\"payload\":%d,\"batch\":%d,\"sources\":[",
		       sent, errors, (double)(end - start) / 1e9, (unsigned long long)start,
		       (int)len, (int)batch);
		for (i = 0; i < nsrc; i++) {
			printf("%s{\"src\":\"%s\",\"sent\":%llu,\"errors\":%llu", i ? "," : "",
			       src[i].text, src[i].sent, src[i].errors);
			if (src[i].sent_at) {
				/* us after the start, by seq */
				printf(",\"send_us\":[");
				for (k = 0; k < (unsigned)count; k++)
					printf("%s%.3f", k ? "," : "",
					       (double)(int64_t)(src[i].sent_at[k] - start) / 1e3);
				printf("],\"send_end_us\":[");
				for (k = 0; k < (unsigned)count; k++)
					printf("%s%.3f", k ? "," : "",
					       (double)(int64_t)(src[i].sent_end[k] - start) / 1e3);
				printf("]");
			}
			printf("}");
		}
		printf("]}\n");
	} else {
		printf("sent %llu packets (%d bytes of payload) from %u sources in %.3f ms"
		       " (%d a call), %llu errors\n",
		       sent, (int)len, nsrc, (double)(end - start) / 1e6, (int)batch, errors);
	}
	for (i = 0; i < nsrc; i++) {
		if (src[i].errors) {
			ret = probe_fail("%llu of %llu sends from %s failed, the last: %s",
					 src[i].errors, src[i].errors + src[i].sent, src[i].text,
					 strerror(src[i].last_errno));
		}
	}
out:
	for (i = 0; i < nsrc; i++) {
		close(src[i].fd);
		free(src[i].sent_at);
		free(src[i].sent_end);
	}
	free(bufs);
	free(mm);
	free(iovs);
	free(cbufs);
	free(list);
	return ret;
}
