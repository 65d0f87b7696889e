// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `sluice run --metrics ADDR:PORT`: the counters of one interface in the
 * Prometheus text format, on a tiny HTTP/1.0 listener. One request at a
 * time, each bounded by socket timeouts, from the run loop's thread: a
 * scrape every few seconds needs nothing more, and nothing here can stall
 * the datapath, which never waits for userspace.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "loader.h"

#define REQ_MAX 4096

int metrics_open(const char *addr_port, int *out_fd, char *err, size_t errlen)
{
	struct addrinfo hints = {}, *ai = NULL;
	char host[256], *port;
	int fd = -1, one = 1, ret;

	if (strlen(addr_port) >= sizeof(host))
		goto bad;
	strcpy(host, addr_port);
	port = strrchr(host, ':');
	if (!port || port == host || !port[1])
		goto bad;
	*port++ = '\0';
	if (host[0] == '[') {
		size_t n = strlen(host);

		if (n < 3 || host[n - 1] != ']')
			goto bad;
		host[n - 1] = '\0';
		memmove(host, host + 1, n - 1);
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	ret = getaddrinfo(host, port, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--metrics %s: %s (write ADDR:PORT, e.g. 127.0.0.1:9100 or "
			 "[::1]:9100)", addr_port, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto sys_err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16))
		goto sys_err;
	freeaddrinfo(ai);
	*out_fd = fd;
	return 0;

sys_err:
	ret = -errno;
	snprintf(err, errlen, "Couldn't listen on %s: %s (is the port in use?)", addr_port,
		 strerror(errno));
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return ret;
bad:
	snprintf(err, errlen, "--metrics '%s' is not ADDR:PORT (e.g. 127.0.0.1:9100 or "
		 "[::1]:9100)", addr_port);
	return -EINVAL;
}

/* A growing text buffer. */
struct text {
	char *buf;
	size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0)
			return;
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		{
			size_t cap = (t->cap ? t->cap * 2 : 8192) + (size_t)n;
			char *b = realloc(t->buf, cap);

			if (!b)
				return;
			t->buf = b;
			t->cap = cap;
		}
	}
}

static void counter(struct text *t, const char *name, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
}

/* Why a packet passed or was dropped: the reason fields of sluice_stats. */
static const struct {
	const char *field;
	size_t offset;
} reasons[] = {
#define R(x) { #x, offsetof(struct sluice_stats, x) }
	R(non_ip), R(malformed), R(limited), R(would_drop), R(exempt), R(denied), R(contended),
#undef R
};

static void render(struct text *t, const char *ifname, const struct sluice_handle *h)
{
	struct sluice_settings *s = &h->cfg->settings[h->cfg->active & 1];
	struct sluice_stats st;
	long keys = sluice_count_keys(h->buckets_fd);
	size_t i;

	if (sluice_read_stats(h, &st))
		memset(&st, 0, sizeof(st));
	counter(t, "sluice_rx_packets_total", "Packets the sluice program saw.");
	put(t, "sluice_rx_packets_total{iface=\"%s\"} %llu\n", ifname, (unsigned long long)st.rx);
	counter(t, "sluice_rx_bytes_total", "Bytes the sluice program saw.");
	put(t, "sluice_rx_bytes_total{iface=\"%s\"} %llu\n", ifname,
	    (unsigned long long)st.rx_bytes);
	counter(t, "sluice_packets_total", "Packets by verdict.");
	put(t, "sluice_packets_total{iface=\"%s\",verdict=\"passed\"} %llu\n", ifname,
	    (unsigned long long)st.passed);
	put(t, "sluice_packets_total{iface=\"%s\",verdict=\"dropped\"} %llu\n", ifname,
	    (unsigned long long)st.dropped);
	counter(t, "sluice_bytes_total", "Bytes by verdict.");
	put(t, "sluice_bytes_total{iface=\"%s\",verdict=\"passed\"} %llu\n", ifname,
	    (unsigned long long)(st.rx_bytes >= st.dropped_bytes ? st.rx_bytes - st.dropped_bytes :
								   0));
	put(t, "sluice_bytes_total{iface=\"%s\",verdict=\"dropped\"} %llu\n", ifname,
	    (unsigned long long)st.dropped_bytes);
	counter(t, "sluice_reason_packets_total",
		"Packets by the reason of their verdict (passed: non_ip, malformed, would_drop, "
		"exempt; dropped: limited, denied, contended).");
	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		put(t, "sluice_reason_packets_total{iface=\"%s\",reason=\"%s\"} %llu\n", ifname,
		    reasons[i].field,
		    (unsigned long long)*(__u64 *)((char *)&st + reasons[i].offset));
	counter(t, "sluice_new_keys_total", "Buckets created for new sources.");
	put(t, "sluice_new_keys_total{iface=\"%s\"} %llu\n", ifname,
	    (unsigned long long)st.new_keys);
	counter(t, "sluice_aggregated_total", "New sources charged to their aggregate bucket.");
	put(t, "sluice_aggregated_total{iface=\"%s\"} %llu\n", ifname,
	    (unsigned long long)st.aggregated);
	counter(t, "sluice_update_failed_total", "Sources the key table could not hold.");
	put(t, "sluice_update_failed_total{iface=\"%s\"} %llu\n", ifname,
	    (unsigned long long)st.update_failed);
	counter(t, "sluice_events_lost_total", "Drop events the ring buffer had no room for.");
	put(t, "sluice_events_lost_total{iface=\"%s\"} %llu\n", ifname,
	    (unsigned long long)st.events_lost);
	put(t, "# HELP sluice_keys Sources in the key table.\n# TYPE sluice_keys gauge\n");
	put(t, "sluice_keys{iface=\"%s\"} %ld\n", ifname, keys < 0 ? 0 : keys);
	put(t, "# HELP sluice_max_keys Size of the key table.\n# TYPE sluice_max_keys gauge\n");
	put(t, "sluice_max_keys{iface=\"%s\"} %u\n", ifname, sluice_map_max_entries(h->buckets_fd));
	put(t, "# HELP sluice_rules Rules in force.\n# TYPE sluice_rules gauge\n");
	put(t, "sluice_rules{iface=\"%s\"} %u\n", ifname, s->nr_rules);
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t len,
		  bool head)
{
	char hdr[256];
	int n;

	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n", status, type, len);
	send_all(fd, hdr, (size_t)n);
	if (!head)
		send_all(fd, body, len);
}

void metrics_serve(int listen_fd, const char *ifname, const struct sluice_handle *h)
{
	struct timeval tv = { .tv_sec = 1 };
	char req[REQ_MAX + 1], method[8], path[256];
	struct text t = {};
	size_t got = 0;
	int fd;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* A slow or silent client costs the run loop at most a second or two. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (got < REQ_MAX) {
		ssize_t n = recv(fd, req + got, REQ_MAX - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = '\0';
	if (sscanf(req, "%7s %255s", method, path) != 2) {
		reply(fd, "400 Bad Request", "text/plain", "bad request\n", 12, false);
		goto out;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		reply(fd, "405 Method Not Allowed", "text/plain", "use GET\n", 8, false);
		goto out;
	}
	if (strcmp(path, "/metrics") && strcmp(path, "/")) {
		reply(fd, "404 Not Found", "text/plain", "the counters are at /metrics\n", 29,
		      !strcmp(method, "HEAD"));
		goto out;
	}
	render(&t, ifname, h);
	reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", t.buf ? t.buf : "",
	      t.len, !strcmp(method, "HEAD"));
	free(t.buf);
out:
	close(fd);
}
