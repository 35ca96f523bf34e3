#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/netcheck.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_CONNS 64
#define SLICE_MS 50

struct conn {
	int fd;
	int state; /* 0: a command, 1: the length, 2: bulk data */
	unsigned char len[4];
	int n_len;
	uint32_t left;
};

struct agent_netcheck {
	int lfd;
	int wake[2]; /* the server's poll wakes on wake[0] */
	int stop;    /* __atomic */
	int done;    /* __atomic: the measuring is over */
	pthread_t server, client;
	int have_client;
	char **addrs;
	int *ports;
	size_t n_peers;
	int64_t deadline_us;
	struct agent_net_peer peers[AGENT_NET_MAX_PEERS];
	struct api_net_figures result;
};

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int stopped(struct agent_netcheck *nc)
{
	return __atomic_load_n(&nc->stop, __ATOMIC_ACQUIRE);
}

int agent_netcheck_port(int port_base, size_t host_index)
{
	return port_base + 2 * (int)host_index + 1;
}

int64_t agent_netcheck_median(int64_t *v, size_t n)
{
	size_t i, j;

	if (!n)
		return -1;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int64_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[(n - 1) / 2];
}

void agent_netcheck_best(const struct agent_net_peer *p, size_t n,
			 struct api_net_figures *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->peers = (int)n;
	out->rtt_us = -1;
	out->mbps = -1;
	for (i = 0; i < n; i++) {
		if (p[i].rtt_us < 0)
			continue;
		out->reached++;
		if (out->rtt_us < 0 || p[i].rtt_us < out->rtt_us)
			out->rtt_us = p[i].rtt_us;
		if (p[i].mbps > out->mbps)
			out->mbps = p[i].mbps;
	}
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---------------------------------------------------------------- server */

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int reply(struct conn *c, char what)
{
	/* One byte into an empty send buffer: it does not block. */
	return send(c->fd, &what, 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Takes n bytes a peer sent; -1 when the connection must go. */
static int conn_feed(struct conn *c, const unsigned char *p, size_t n)
{
	while (n) {
		if (c->state == 0) {
			if (*p == 'P' && reply(c, 'P'))
				return -1;
			if (*p == 'B') {
				c->state = 1;
				c->n_len = 0;
			} else if (*p != 'P') {
				return -1;
			}
			p++, n--;
		} else if (c->state == 1) {
			c->len[c->n_len++] = *p++;
			n--;
			if (c->n_len < 4)
				continue;
			c->left = (uint32_t)c->len[0] << 24 |
				  (uint32_t)c->len[1] << 16 |
				  (uint32_t)c->len[2] << 8 | c->len[3];
			c->state = 2;
		} else {
			size_t k = n < c->left ? n : c->left;

			p += k, n -= k;
			c->left -= (uint32_t)k;
		}
		if (c->state == 2 && !c->left) {
			c->state = 0;
			if (reply(c, 'A'))
				return -1;
		}
	}
	return 0;
}

static void accept_one(int lfd, struct conn *conns)
{
	int fd = accept(lfd, NULL, NULL);
	int one = 1;
	size_t i;

	if (fd < 0)
		return;
	for (i = 0; i < MAX_CONNS && conns[i].fd >= 0; i++)
		;
	if (i == MAX_CONNS) {
		close(fd);
		return;
	}
	set_nonblock(fd);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conns[i].fd = fd;
}

static void *serve(void *arg)
{
	struct agent_netcheck *nc = arg;
	unsigned char *buf = xcalloc(1, 64 * 1024);
	struct conn conns[MAX_CONNS];
	struct pollfd pf[MAX_CONNS + 2];
	size_t i, map[MAX_CONNS], np;

	for (i = 0; i < MAX_CONNS; i++) {
		memset(&conns[i], 0, sizeof(conns[i]));
		conns[i].fd = -1;
	}
	while (!stopped(nc)) {
		pf[0] = (struct pollfd){ .fd = nc->wake[0], .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = nc->lfd, .events = POLLIN };
		for (i = 0, np = 2; i < MAX_CONNS; i++)
			if (conns[i].fd >= 0) {
				map[np - 2] = i;
				pf[np++] = (struct pollfd){ .fd = conns[i].fd,
							    .events = POLLIN };
			}
		if (poll(pf, np, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents & POLLIN)
			accept_one(nc->lfd, conns);
		for (i = 2; i < np; i++) {
			struct conn *c = &conns[map[i - 2]];
			ssize_t got;

			if (!pf[i].revents)
				continue;
			got = recv(c->fd, buf, 64 * 1024, 0);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got <= 0 || conn_feed(c, buf, (size_t)got))
				conn_close(c);
		}
	}
	for (i = 0; i < MAX_CONNS; i++)
		conn_close(&conns[i]);
	free(buf);
	return NULL;
}

/* A socket of family bound to every address's port, listening; -1 with
 * errno set when it cannot be. IPv6 takes IPv4 too (not V6ONLY). */
static int bind_any(int family, int port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, zero = 0, e;

	if (fd < 0)
		return -1;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_any;
		len = sizeof(*a);
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
				 sizeof(zero));
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		len = sizeof(*a);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!bind(fd, (struct sockaddr *)&ss, len) && !listen(fd, MAX_CONNS))
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

/* A listening socket on port (every address, IPv6 and IPv4, else IPv4
 * alone where IPv6 is off), or -1 with err set. */
static int listen_on(int port, struct buf *err)
{
	int fd = bind_any(AF_INET6, port);

	if (fd < 0 && errno != EADDRINUSE)
		fd = bind_any(AF_INET, port);
	if (fd < 0) {
		(void)buf_addf(err,
			       "network check: cannot listen on port %d: %s",
			       port, strerror(errno));
		return -1;
	}
	set_nonblock(fd);
	return fd;
}

/* ---------------------------------------------------------------- client */

/* Waits until fd is ready for events, in slices that look at the stop
 * flag; 0 when ready, -1 past deadline_us or stopped. */
static int wait_fd(struct agent_netcheck *nc, int fd, short events,
		   int64_t deadline_us)
{
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = events };
		int64_t left = (deadline_us - mono_us()) / 1000;
		int r;

		if (left <= 0 || stopped(nc))
			return -1;
		r = poll(&pf, 1, left < SLICE_MS ? (int)left + 1 : SLICE_MS);
		if (r > 0)
			return pf.revents & (POLLERR | POLLNVAL) ? -1 : 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int send_all(struct agent_netcheck *nc, int fd, const void *p, size_t n,
		    int64_t deadline_us)
{
	const char *s = p;

	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w > 0) {
			s += w, n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (wait_fd(nc, fd, POLLOUT, deadline_us))
			return -1;
	}
	return 0;
}

/* Reads the one byte that must be want. */
static int recv_byte(struct agent_netcheck *nc, int fd, char want,
		     int64_t deadline_us)
{
	char c;

	for (;;) {
		ssize_t r = recv(fd, &c, 1, 0);

		if (r == 1)
			return c == want ? 0 : -1;
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
		if (wait_fd(nc, fd, POLLIN, deadline_us))
			return -1;
	}
}

static int try_connect(struct agent_netcheck *nc, const struct addrinfo *ai,
		       int64_t deadline_us)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, e = 0;
	socklen_t el = sizeof(e);
	int64_t until = mono_us() + 1000000;

	if (fd < 0)
		return -1;
	set_nonblock(fd);
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		goto fail;
	if (wait_fd(nc, fd, POLLOUT, until < deadline_us ? until : deadline_us))
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e)
		goto fail;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return -1;
}

/* A connection to addr:port, tried again until deadline_us (the peer's
 * agent may not listen yet); -1 when none came. */
static int connect_until(struct agent_netcheck *nc, const char *addr, int port,
			 int64_t deadline_us)
{
	struct addrinfo hints, *res = NULL, *ai;
	char svc[16];
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	(void)snprintf(svc, sizeof(svc), "%d", port);
	while (fd < 0 && mono_us() < deadline_us && !stopped(nc)) {
		if (!res && getaddrinfo(addr, svc, &hints, &res))
			res = NULL;
		for (ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = try_connect(nc, ai, deadline_us);
		if (fd < 0)
			(void)poll(NULL, 0, SLICE_MS);
	}
	if (res)
		freeaddrinfo(res);
	return fd;
}

static int64_t measure_rtt(struct agent_netcheck *nc, int fd,
			   int64_t deadline_us)
{
	int64_t v[AGENT_NET_PINGS];
	size_t i;

	for (i = 0; i < AGENT_NET_PINGS; i++) {
		int64_t t0 = mono_us();

		if (send_all(nc, fd, "P", 1, deadline_us) ||
		    recv_byte(nc, fd, 'P', deadline_us))
			return -1;
		v[i] = mono_us() - t0;
		if (!v[i])
			v[i] = 1;
	}
	return agent_netcheck_median(v, AGENT_NET_PINGS);
}

/* Mbit/s from chunks sent and acknowledged for AGENT_NET_BULK_MS. */
static int64_t measure_bandwidth(struct agent_netcheck *nc, int fd,
				 int64_t deadline_us)
{
	static const unsigned char hdr[5] = { 'B', AGENT_NET_CHUNK >> 24,
					      (AGENT_NET_CHUNK >> 16) & 0xff,
					      (AGENT_NET_CHUNK >> 8) & 0xff,
					      AGENT_NET_CHUNK & 0xff };
	char *data = xcalloc(1, AGENT_NET_CHUNK);
	int64_t t0 = mono_us(), until = t0 + AGENT_NET_BULK_MS * 1000;
	int64_t bytes = 0, took;

	if (until > deadline_us)
		until = deadline_us;
	do {
		if (send_all(nc, fd, hdr, sizeof(hdr), deadline_us) ||
		    send_all(nc, fd, data, AGENT_NET_CHUNK, deadline_us) ||
		    recv_byte(nc, fd, 'A', deadline_us))
			break;
		bytes += AGENT_NET_CHUNK;
	} while (mono_us() < until);
	free(data);
	took = mono_us() - t0;
	if (!bytes)
		return 0; /* reached, but not one chunk in the budget */
	return took > 0 ? bytes * 8 / took : bytes * 8; /* bit/us = Mbit/s */
}

/*
 * The time one peer may take once connected: an equal share of what is
 * left, within [200 ms, 1.5 s], so that a slow peer cannot eat the
 * others' share.
 */
static int64_t slice_end(const struct agent_netcheck *nc, size_t left)
{
	int64_t now = mono_us();
	int64_t share = (nc->deadline_us - now) / (int64_t)(left ? left : 1);

	if (share > 1500000)
		share = 1500000;
	if (share < 200000)
		share = 200000;
	return now + share < nc->deadline_us ? now + share : nc->deadline_us;
}

static void *measure(void *arg)
{
	struct agent_netcheck *nc = arg;
	size_t i;

	for (i = 0; i < nc->n_peers; i++)
		nc->peers[i].rtt_us = nc->peers[i].mbps = -1;
	for (i = 0; i < nc->n_peers && !stopped(nc); i++) {
		struct agent_net_peer *p = &nc->peers[i];
		int fd = connect_until(nc, nc->addrs[i], nc->ports[i],
				       nc->deadline_us);
		int64_t until;

		if (fd < 0)
			continue;
		until = slice_end(nc, nc->n_peers - i);
		p->rtt_us = measure_rtt(nc, fd, until);
		if (p->rtt_us >= 0)
			p->mbps = measure_bandwidth(nc, fd, until);
		close(fd);
	}
	agent_netcheck_best(nc->peers, nc->n_peers, &nc->result);
	__atomic_store_n(&nc->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Threads that take no signal: the agent's loop handles them. */
static int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static int wake_pipe(int fd[2])
{
	if (pipe(fd))
		return -1;
	(void)fcntl(fd[0], F_SETFD, FD_CLOEXEC);
	(void)fcntl(fd[1], F_SETFD, FD_CLOEXEC);
	set_nonblock(fd[0]);
	set_nonblock(fd[1]);
	return 0;
}

struct agent_netcheck *agent_netcheck_start(const char *const *addrs, size_t n,
					    size_t me, int port_base,
					    int64_t budget_ms, struct buf *err)
{
	struct agent_netcheck *nc = xcalloc(1, sizeof(*nc));
	size_t i;

	nc->wake[0] = nc->wake[1] = -1;
	nc->lfd = listen_on(agent_netcheck_port(port_base, me), err);
	if (nc->lfd < 0 || wake_pipe(nc->wake) ||
	    spawn(&nc->server, serve, nc)) {
		if (nc->lfd >= 0)
			(void)buf_addf(err, "network check: %s",
				       strerror(errno));
		goto fail;
	}
	nc->n_peers = n - 1 < AGENT_NET_MAX_PEERS ? n - 1 : AGENT_NET_MAX_PEERS;
	nc->addrs = xcalloc(nc->n_peers + 1, sizeof(*nc->addrs));
	nc->ports = xcalloc(nc->n_peers + 1, sizeof(*nc->ports));
	for (i = 0; i < nc->n_peers; i++) {
		size_t j = (me + 1 + i) % n;

		nc->addrs[i] = xstrdup(addrs[j] ? addrs[j] : "127.0.0.1");
		nc->ports[i] = agent_netcheck_port(port_base, j);
	}
	nc->deadline_us = mono_us() + budget_ms * 1000;
	if (spawn(&nc->client, measure, nc)) {
		agent_netcheck_free(nc);
		(void)buf_adds(err, "network check: no thread to measure");
		return NULL;
	}
	nc->have_client = 1;
	return nc;
fail:
	if (nc->lfd >= 0)
		close(nc->lfd);
	if (nc->wake[0] >= 0) {
		close(nc->wake[0]);
		close(nc->wake[1]);
	}
	free(nc);
	return NULL;
}

int agent_netcheck_done(struct agent_netcheck *nc, struct api_net_figures *out)
{
	if (!__atomic_load_n(&nc->done, __ATOMIC_ACQUIRE))
		return 0;
	*out = nc->result;
	return 1;
}

void agent_netcheck_free(struct agent_netcheck *nc)
{
	size_t i;

	if (!nc)
		return;
	__atomic_store_n(&nc->stop, 1, __ATOMIC_RELEASE);
	(void)!write(nc->wake[1], "x", 1);
	pthread_join(nc->server, NULL);
	if (nc->have_client)
		pthread_join(nc->client, NULL);
	close(nc->lfd);
	close(nc->wake[0]);
	close(nc->wake[1]);
	for (i = 0; nc->addrs && i < nc->n_peers; i++)
		free(nc->addrs[i]);
	free(nc->addrs);
	free(nc->ports);
	free(nc);
}
