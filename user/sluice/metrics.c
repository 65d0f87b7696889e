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

void metrics_serve(int listen_fd, struct sluice_handle *h)
{
	struct timeval tv = { .tv_sec = 1 };
	char req[REQ_MAX + 1], method[8], path[256], err[SLUICE_ERR_LEN];
	size_t got = 0, len = 0;
	char *body = NULL;
	bool head;
	FILE *f;
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
	head = !strcmp(method, "HEAD");
	if (strcmp(path, "/metrics") && strcmp(path, "/")) {
		reply(fd, "404 Not Found", "text/plain", "the counters are at /metrics\n", 29,
		      head);
		goto out;
	}
	f = open_memstream(&body, &len);
	if (!f) {
		reply(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14, head);
		goto out;
	}
	if (sluice_prometheus(f, h, err, sizeof(err))) {
		char msg[SLUICE_ERR_LEN + 1];

		fclose(f);
		snprintf(msg, sizeof(msg), "%s\n", err);
		reply(fd, "500 Internal Server Error", "text/plain", msg, strlen(msg), head);
	} else {
		fclose(f);
		reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len, head);
	}
	free(body);
out:
	close(fd);
}
