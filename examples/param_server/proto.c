/*
 * param_server's wire protocol (see main.c) and its reading of TF_CONFIG.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "ps.h"

int ps_fail(struct common *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- TF_CONFIG ------------------------------------------------------ */

static int copy_addrs(struct common *c, json_t *arr, const char *what,
		      char (*dst)[ADDR_MAX], int *n, int max)
{
	size_t i;
	json_t *v;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return ps_fail(c, "TF_CONFIG: cluster.%s is not a list", what);
	json_array_foreach(arr, i, v)
	{
		const char *s = json_string_value(v);
		size_t len = s ? strlen(s) : 0;

		if (*n >= max)
			return ps_fail(c,
				       "TF_CONFIG: more than %d %s addresses",
				       max, what);
		if (!s || len == 0 || len >= ADDR_MAX)
			return ps_fail(c,
				       "TF_CONFIG: cluster.%s[%zu] is not a "
				       "host:port string",
				       what, i);
		memcpy(dst[*n], s, len + 1);
		(*n)++;
	}
	return 0;
}

/*
 * cluster: the chief ("master", or "chief") and the workers into
 * cl->workers, the servers into cl->servers; *nchief: 1 with a chief.
 */
static int parse_cluster(struct common *c, json_t *cluster, int *nchief)
{
	struct cluster *cl = &c->cl;
	json_t *chief;

	chief = json_object_get(cluster, "master");
	if (!chief)
		chief = json_object_get(cluster, "chief");
	if (copy_addrs(c, chief, "master", cl->workers, &cl->nworkers, 1) ||
	    copy_addrs(c, json_object_get(cluster, "worker"), "worker",
		       cl->workers, &cl->nworkers, MAX_WORKERS) ||
	    copy_addrs(c, json_object_get(cluster, "ps"), "ps", cl->servers,
		       &cl->nservers, MAX_SERVERS))
		return -1;
	*nchief = chief ? 1 : 0;
	if (cl->nworkers < 1 || cl->nservers < 1)
		return ps_fail(
			c,
			"TF_CONFIG names %d workers and %d servers; want "
			"at least one of each",
			cl->nworkers, cl->nservers);
	return 0;
}

/*
 * task: which of the cluster this process is (cl->is_server, cl->index),
 * and that TRAINCTL_ROLE, when set, agrees.
 */
static int parse_task(struct common *c, json_t *task, int nchief)
{
	struct cluster *cl = &c->cl;
	const char *type, *role;
	json_int_t index;

	type = json_string_value(json_object_get(task, "type"));
	if (!json_is_integer(json_object_get(task, "index")) || !type)
		return ps_fail(c,
			       "TF_CONFIG: task needs a string 'type' and an "
			       "integer 'index'");
	index = json_integer_value(json_object_get(task, "index"));
	if (!strcmp(type, "ps")) {
		cl->is_server = 1;
		if (index < 0 || index >= cl->nservers)
			return ps_fail(c, "TF_CONFIG: ps index %lld of %d",
				       (long long)index, cl->nservers);
	} else if (!strcmp(type, "master") || !strcmp(type, "chief")) {
		if (!nchief || index != 0)
			return ps_fail(c,
				       "TF_CONFIG: task %s/%lld is not in the "
				       "cluster",
				       type, (long long)index);
	} else if (!strcmp(type, "worker")) {
		index += nchief;
		if (index < nchief || index >= cl->nworkers)
			return ps_fail(c, "TF_CONFIG: worker index %lld of %d",
				       (long long)(index - nchief),
				       cl->nworkers - nchief);
	} else {
		return ps_fail(c,
			       "TF_CONFIG: task type '%s' (want master, worker "
			       "or ps)",
			       type);
	}
	cl->index = (int)index;
	role = getenv("TRAINCTL_ROLE");
	if (role && strcmp(role, cl->is_server ? "ps" : "worker"))
		return ps_fail(c,
			       "TRAINCTL_ROLE=%s but TF_CONFIG says task type "
			       "'%s'",
			       role, type);
	return 0;
}

/*
 * {"cluster": {"master": [a], "worker": [b, ...], "ps": [c, ...]},
 *  "task": {"type": "master"|"worker"|"ps", "index": i}}.
 * "chief" is accepted for "master" (newer TensorFlow); without either,
 * worker 0 is the chief, as in TensorFlow.
 */
int ps_parse_tf_config(struct common *c)
{
	const char *env = getenv("TF_CONFIG");
	json_t *root, *cluster, *task;
	json_error_t jerr;
	int ret = -1, nchief = 0;

	if (!env)
		return ps_fail(c,
			       "TF_CONFIG is not set: run param_server in the "
			       "job's parameter_server mode, or set TF_CONFIG "
			       "by hand (see README.md)");
	if (strlen(env) > TF_CONFIG_MAX)
		return ps_fail(c, "TF_CONFIG is longer than %d bytes",
			       TF_CONFIG_MAX);
	root = json_loads(env, 0, &jerr);
	if (!root)
		return ps_fail(c, "TF_CONFIG is not JSON: %s (column %d)",
			       jerr.text, jerr.column);
	cluster = json_object_get(root, "cluster");
	task = json_object_get(root, "task");
	if (!json_is_object(cluster) || !json_is_object(task))
		ps_fail(c, "TF_CONFIG needs the objects 'cluster' and 'task'");
	else if (!parse_cluster(c, cluster, &nchief) &&
		 !parse_task(c, task, nchief))
		ret = 0;
	json_decref(root);
	return ret;
}

/* ---- sockets -------------------------------------------------------- */

/* "host:port" or "[v6]:port" into host and port strings. */
int ps_split_addr(struct common *c, const char *addr, char *host, char *port)
{
	const char *colon = strrchr(addr, ':');
	size_t hl;

	if (!colon || !colon[1] || strlen(colon + 1) > 5)
		return ps_fail(c, "address '%s' is not host:port", addr);
	hl = (size_t)(colon - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl == 0 || hl >= ADDR_MAX)
		return ps_fail(c, "address '%s' is not host:port", addr);
	memcpy(host, addr, hl);
	host[hl] = '\0';
	memcpy(port, colon + 1, strlen(colon + 1) + 1);
	return 0;
}

void ps_set_timeouts(int fd, int seconds)
{
	struct timeval tv = { seconds, 0 };
	int one = 1;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* Small control messages must not wait for Nagle. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* 0 when all of it came, 1 on a clean end of stream first, -1 else. */
int ps_read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, p + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 && got == 0)
			return 1;
		if (n <= 0) {
			if (n == 0)
				errno = EPIPE;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

int ps_send_msg(int fd, uint32_t type, uint64_t step, double aux,
		uint32_t worker, const void *payload, size_t len)
{
	uint8_t h[HEADER_LEN];
	size_t pos = 0;

	put_u32(h, &pos, PS_MAGIC);
	put_u32(h, &pos, type);
	put_u64(h, &pos, step);
	put_f64(h, &pos, aux);
	put_u32(h, &pos, worker);
	put_u32(h, &pos, (uint32_t)len);
	if (write_all(fd, h, sizeof(h)))
		return -1;
	return len ? write_all(fd, payload, len) : 0;
}

/* Reads a header: 0, 1 at end of stream, -1 on error or bad magic. */
int ps_recv_header(int fd, struct header *h)
{
	uint8_t b[HEADER_LEN];
	size_t pos = 0;
	int rc = ps_read_all(fd, b, sizeof(b));

	if (rc)
		return rc;
	if (get_u32(b, &pos) != PS_MAGIC) {
		errno = EPROTO;
		return -1;
	}
	h->type = get_u32(b, &pos);
	h->step = get_u64(b, &pos);
	h->aux = get_f64(b, &pos);
	h->worker = get_u32(b, &pos);
	h->len = get_u32(b, &pos);
	return 0;
}

/*
 * Floats travel as their bit patterns in host order; main() refuses to
 * run on a big-endian host, so that is little-endian as the header says.
 */
int ps_send_floats_msg(int fd, uint32_t type, uint64_t step, double aux,
		       uint32_t worker, const float *v, size_t n)
{
	return ps_send_msg(fd, type, step, aux, worker, v, n * sizeof(float));
}

void ps_drain_text(int fd, uint32_t len, char *text, size_t cap)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	if (ps_read_all(fd, text, n))
		n = 0;
	text[n] = '\0';
}
