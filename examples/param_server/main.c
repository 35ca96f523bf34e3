/*
 * param_server: synchronous SGD on Fashion-MNIST with parameter servers,
 * run in the job's parameter_server mode (TF_CONFIG names every process).
 *
 * The flat parameter vector is cut into one contiguous shard per server.
 * A server owns its shard (weights and momentum) and the update rule;
 * the workers own the data and the arithmetic of the gradient. Each step
 * s, every worker pulls shard s from every server, computes the gradient
 * of its share of global batch s (the same split as mlp_dp's ranks), and
 * pushes each server its slice of it. A server waits for all workers'
 * pushes of step s, sums them in worker order (so the result does not
 * depend on who was first), applies SGD and only then answers pulls of
 * step s+1. That makes the run deterministic and, for the same seed and
 * global batch, the same trajectory as mlp_dp up to rounding.
 *
 * Worker 0 (TF_CONFIG's "master", the chief) also picks the step to
 * resume from, evaluates the held-out set and writes the model after a
 * final pull. Servers checkpoint their shards; workers need no
 * checkpoint, because the data order at step s follows from the seed.
 *
 * Wire protocol (TCP, little-endian): every message is a 32-byte header
 * {u32 magic, u32 type, u64 step, f64 aux, u32 worker, u32 length}
 * followed by length bytes. Each side knows exactly how long each
 * message may be, so nothing read from the network is ever trusted for
 * an allocation size.
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

#include <jansson.h>

#include "../mlp/mlp.h"

#define PS_MAGIC 0x31535054u /* "TPS1" */
#define PS_VERSION 1
#define HEADER_LEN 32
#define HELLO_LEN 32
#define START_LEN 16
#define ERROR_TEXT_MAX 512
#define MAX_WORKERS 256
#define MAX_SERVERS 64
#define ADDR_MAX 256
#define TF_CONFIG_MAX (1 << 20)
#define STATE_MAGIC "TCPSST01"
#define STATE_LEN (8 + 8 * 5)

enum msg_type {
	MSG_HELLO = 1,	/* worker -> server: who I am, what I train */
	MSG_INFO = 2,	/* server -> chief: newest checkpoint step */
	MSG_START = 3,	/* chief -> server: start (resume) at this step */
	MSG_READY = 4,	/* server -> worker: started at this step */
	MSG_PULL = 5,	/* worker -> server: weights of step s, please */
	MSG_PARAMS = 6, /* server -> worker: the shard at step s */
	MSG_PUSH = 7,	/* worker -> server: gradient slice of step s */
	MSG_DONE = 8,	/* worker -> server: no more steps from me */
	MSG_ERROR = 9	/* server -> worker: why it gives up (text) */
};

struct header {
	uint32_t type;
	uint64_t step;
	double aux; /* PUSH: loss share; PARAMS: last step's batch loss */
	uint32_t worker;
	uint32_t len;
};

/* The cluster as TF_CONFIG describes it, and this process's place in it. */
struct cluster {
	char workers[MAX_WORKERS][ADDR_MAX]; /* master first */
	int nworkers;
	char servers[MAX_SERVERS][ADDR_MAX];
	int nservers;
	int is_server;
	int index; /* worker number (chief = 0) or server number */
};

struct common {
	struct trainer *t;
	struct hparams hp;
	struct mlp net; /* layer sizes always; weights on workers */
	struct cluster cl;
	int timeout_s, connect_timeout_s;
	char err[MLP_ERRLEN];
};

static int fail(struct common *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct common *c, const char *fmt, ...)
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
		return fail(c, "TF_CONFIG: cluster.%s is not a list", what);
	json_array_foreach(arr, i, v)
	{
		const char *s = json_string_value(v);
		size_t len = s ? strlen(s) : 0;

		if (*n >= max)
			return fail(c, "TF_CONFIG: more than %d %s addresses",
				    max, what);
		if (!s || len == 0 || len >= ADDR_MAX)
			return fail(c,
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
		return fail(c,
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
		return fail(c, "TF_CONFIG: task needs a string 'type' and an "
			       "integer 'index'");
	index = json_integer_value(json_object_get(task, "index"));
	if (!strcmp(type, "ps")) {
		cl->is_server = 1;
		if (index < 0 || index >= cl->nservers)
			return fail(c, "TF_CONFIG: ps index %lld of %d",
				    (long long)index, cl->nservers);
	} else if (!strcmp(type, "master") || !strcmp(type, "chief")) {
		if (!nchief || index != 0)
			return fail(c,
				    "TF_CONFIG: task %s/%lld is not in the "
				    "cluster",
				    type, (long long)index);
	} else if (!strcmp(type, "worker")) {
		index += nchief;
		if (index < nchief || index >= cl->nworkers)
			return fail(c, "TF_CONFIG: worker index %lld of %d",
				    (long long)(index - nchief),
				    cl->nworkers - nchief);
	} else {
		return fail(c,
			    "TF_CONFIG: task type '%s' (want master, worker "
			    "or ps)",
			    type);
	}
	cl->index = (int)index;
	role = getenv("TRAINCTL_ROLE");
	if (role && strcmp(role, cl->is_server ? "ps" : "worker"))
		return fail(c,
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
static int parse_tf_config(struct common *c)
{
	const char *env = getenv("TF_CONFIG");
	json_t *root, *cluster, *task;
	json_error_t jerr;
	int ret = -1, nchief = 0;

	if (!env)
		return fail(c, "TF_CONFIG is not set: run param_server in the "
			       "job's parameter_server mode, or set TF_CONFIG "
			       "by hand (see README.md)");
	if (strlen(env) > TF_CONFIG_MAX)
		return fail(c, "TF_CONFIG is longer than %d bytes",
			    TF_CONFIG_MAX);
	root = json_loads(env, 0, &jerr);
	if (!root)
		return fail(c, "TF_CONFIG is not JSON: %s (column %d)",
			    jerr.text, jerr.column);
	cluster = json_object_get(root, "cluster");
	task = json_object_get(root, "task");
	if (!json_is_object(cluster) || !json_is_object(task))
		fail(c, "TF_CONFIG needs the objects 'cluster' and 'task'");
	else if (!parse_cluster(c, cluster, &nchief) &&
		 !parse_task(c, task, nchief))
		ret = 0;
	json_decref(root);
	return ret;
}

/* ---- sockets -------------------------------------------------------- */

/* "host:port" or "[v6]:port" into host and port strings. */
static int split_addr(struct common *c, const char *addr, char *host,
		      char *port)
{
	const char *colon = strrchr(addr, ':');
	size_t hl;

	if (!colon || !colon[1] || strlen(colon + 1) > 5)
		return fail(c, "address '%s' is not host:port", addr);
	hl = (size_t)(colon - addr);
	if (hl >= 2 && addr[0] == '[' && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl == 0 || hl >= ADDR_MAX)
		return fail(c, "address '%s' is not host:port", addr);
	memcpy(host, addr, hl);
	host[hl] = '\0';
	memcpy(port, colon + 1, strlen(colon + 1) + 1);
	return 0;
}

static void set_timeouts(int fd, int seconds)
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
static int read_all(int fd, void *buf, size_t len)
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

static int send_msg(int fd, uint32_t type, uint64_t step, double aux,
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
static int recv_header(int fd, struct header *h)
{
	uint8_t b[HEADER_LEN];
	size_t pos = 0;
	int rc = read_all(fd, b, sizeof(b));

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
static int send_floats_msg(int fd, uint32_t type, uint64_t step, double aux,
			   uint32_t worker, const float *v, size_t n)
{
	return send_msg(fd, type, step, aux, worker, v, n * sizeof(float));
}

static void drain_text(int fd, uint32_t len, char *text, size_t cap)
{
	size_t n = len < cap - 1 ? len : cap - 1;

	if (read_all(fd, text, n))
		n = 0;
	text[n] = '\0';
}

/* ---- the server ----------------------------------------------------- */

struct conn {
	int fd;
	int worker; /* -1 until its HELLO */
};

struct server {
	struct common *c;
	int lfd;
	struct conn conns[MAX_WORKERS + 16];
	int nconns;
	size_t off, len; /* our shard of the flat parameter vector */
	float *w, *v, *sum;
	float *grads; /* nworkers x len: each worker's push of this step */
	double *losses;
	uint8_t *hello, *pushed, *done, *pull_waiting;
	int nhello, npushed, ndone;
	uint64_t data_hash;
	int have_data_hash;
	int started;
	int64_t step, ckpt_every, latest;
	double last_loss;
};

static void shard_range(size_t nparams, int nservers, int s, size_t *off,
			size_t *len)
{
	size_t a = nparams * (size_t)s / (size_t)nservers;
	size_t b = nparams * (size_t)(s + 1) / (size_t)nservers;

	*off = a;
	*len = b - a;
}

static int server_listen(struct server *s)
{
	struct common *c = s->c;
	char host[ADDR_MAX], port[8];
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1, one = 1, rc;

	if (split_addr(c, c->cl.servers[c->cl.index], host, port))
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return fail(c, "ps address %s: %s", c->cl.servers[c->cl.index],
			    gai_strerror(rc));
	/*
	 * Bind the address TF_CONFIG gives when it is one of ours; when it
	 * is not (NAT, a name for another interface), any address.
	 */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, 0);
		if (fd < 0)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EADDRNOTAVAIL) {
			struct sockaddr_in any;

			memset(&any, 0, sizeof(any));
			any.sin_family = AF_INET;
			any.sin_port = htons((uint16_t)atoi(port));
			close(fd);
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (fd >= 0) {
				(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR,
						 &one, sizeof(one));
				if (bind(fd, (struct sockaddr *)&any,
					 sizeof(any)) == 0)
					break;
			}
		}
		rc = errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
		errno = rc;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fail(c, "cannot listen on %s: %s",
			    c->cl.servers[c->cl.index], strerror(errno));
	if (listen(fd, MAX_WORKERS) < 0) {
		close(fd);
		return fail(c, "listen: %s", strerror(errno));
	}
	s->lfd = fd;
	return 0;
}

static int server_alloc(struct server *s)
{
	size_t nw = (size_t)s->c->cl.nworkers;

	s->w = calloc(s->len ? s->len : 1, sizeof(float));
	s->v = calloc(s->len ? s->len : 1, sizeof(float));
	s->sum = calloc(s->len ? s->len : 1, sizeof(float));
	s->grads = calloc(nw * (s->len ? s->len : 1), sizeof(float));
	s->losses = calloc(nw, sizeof(double));
	s->hello = calloc(nw, 1);
	s->pushed = calloc(nw, 1);
	s->done = calloc(nw, 1);
	s->pull_waiting = calloc(nw, 1);
	if (!s->w || !s->v || !s->sum || !s->grads || !s->losses || !s->hello ||
	    !s->pushed || !s->done || !s->pull_waiting)
		return fail(s->c, "out of memory for a shard of %zu", s->len);
	return 0;
}

static void server_free(struct server *s)
{
	int i;

	for (i = 0; i < s->nconns; i++)
		close(s->conns[i].fd);
	if (s->lfd >= 0)
		close(s->lfd);
	free(s->w);
	free(s->v);
	free(s->sum);
	free(s->grads);
	free(s->losses);
	free(s->hello);
	free(s->pushed);
	free(s->done);
	free(s->pull_waiting);
}

/* Tells a worker why the server gives up, then reports it. */
static int server_refuse(struct server *s, struct conn *k, const char *why)
{
	size_t n = strlen(why);

	if (n > ERROR_TEXT_MAX)
		n = ERROR_TEXT_MAX;
	(void)send_msg(k->fd, MSG_ERROR, (uint64_t)s->step, 0.0, 0, why, n);
	return fail(s->c, "%s", why);
}

static int send_shard(struct server *s, int fd, uint32_t type)
{
	return send_floats_msg(fd, type, (uint64_t)s->step, s->last_loss, 0,
			       s->w, s->len);
}

static int server_save(struct server *s)
{
	struct common *c = s->c;
	uint8_t state[STATE_LEN];
	size_t pos;
	struct trainer_file files[3];

	memcpy(state, STATE_MAGIC, 8);
	pos = 8;
	put_u64(state, &pos, hparams_hash(&c->hp, 0));
	put_u64(state, &pos, (uint64_t)c->net.nparams);
	put_u64(state, &pos, (uint64_t)s->off);
	put_u64(state, &pos, (uint64_t)s->len);
	put_u64(state, &pos, (uint64_t)s->step);
	files[0] = (struct trainer_file){ "state.bin", state, pos };
	files[1] = (struct trainer_file){ "params.bin", s->w,
					  s->len * sizeof(float) };
	files[2] = (struct trainer_file){ "velocity.bin", s->v,
					  s->len * sizeof(float) };
	if (trainer_checkpoint_save(c->t, s->step, files, 3))
		return fail(c, "trainer_checkpoint_save: %s",
			    trainer_errmsg(c->t));
	return 0;
}

static int load_exact(struct common *c, int64_t step, const char *name,
		      void *dst, size_t len)
{
	void *data = NULL;
	size_t got = 0;

	if (trainer_checkpoint_load(c->t, step, name, &data, &got))
		return fail(c, "checkpoint %lld: %s", (long long)step,
			    trainer_errmsg(c->t));
	if (got != len) {
		free(data);
		return fail(c, "checkpoint %lld: %s has %zu bytes, want %zu",
			    (long long)step, name, got, len);
	}
	memcpy(dst, data, len);
	free(data);
	return 0;
}

/* The shard at START's step: fresh weights for 0, else a checkpoint. */
static int server_begin(struct server *s, int64_t step)
{
	struct common *c = s->c;
	uint8_t state[STATE_LEN];
	size_t pos = 8;

	if (step == 0) {
		memcpy(s->w, c->net.params + s->off, s->len * sizeof(float));
		memset(s->v, 0, s->len * sizeof(float));
		s->step = 0;
		return 0;
	}
	if (load_exact(c, step, "state.bin", state, sizeof(state)))
		return -1;
	if (memcmp(state, STATE_MAGIC, 8) ||
	    get_u64(state, &pos) != hparams_hash(&c->hp, 0) ||
	    get_u64(state, &pos) != c->net.nparams ||
	    get_u64(state, &pos) != s->off || get_u64(state, &pos) != s->len ||
	    get_u64(state, &pos) != (uint64_t)step)
		return fail(c,
			    "checkpoint %lld is of another configuration "
			    "or sharding; clear the checkpoint directory "
			    "to start afresh",
			    (long long)step);
	if (load_exact(c, step, "params.bin", s->w, s->len * sizeof(float)) ||
	    load_exact(c, step, "velocity.bin", s->v, s->len * sizeof(float)))
		return -1;
	s->step = step;
	printf("ps %d: resumed from checkpoint step %lld\n", c->cl.index,
	       (long long)step);
	return 0;
}

/* All pushes of the step are in: sum in worker order, update, answer. */
static int server_apply(struct server *s)
{
	struct common *c = s->c;
	int nw = c->cl.nworkers, w, i;
	size_t j;

	memcpy(s->sum, s->grads, s->len * sizeof(float));
	s->last_loss = s->losses[0];
	for (w = 1; w < nw; w++) {
		const float *g = s->grads + (size_t)w * s->len;

		for (j = 0; j < s->len; j++)
			s->sum[j] += g[j];
		s->last_loss += s->losses[w];
	}
	mlp_sgd(s->w, s->v, s->sum, s->len, (float)c->hp.learning_rate,
		(float)c->hp.momentum);
	s->step++;
	memset(s->pushed, 0, (size_t)nw);
	s->npushed = 0;
	if (s->ckpt_every > 0 && s->step % s->ckpt_every == 0 && server_save(s))
		return -1;
	for (i = 0; i < s->nconns; i++) {
		struct conn *k = &s->conns[i];

		if (k->worker >= 0 && s->pull_waiting[k->worker]) {
			s->pull_waiting[k->worker] = 0;
			if (send_shard(s, k->fd, MSG_PARAMS))
				return fail(c, "worker %d: send: %s", k->worker,
					    strerror(errno));
		}
	}
	return 0;
}

static int server_hello(struct server *s, struct conn *k,
			const struct header *h)
{
	struct common *c = s->c;
	uint8_t b[HELLO_LEN];
	size_t pos = 0;
	uint32_t version, nworkers;
	uint64_t nparams, model_hash, data_hash;
	char why[ERROR_TEXT_MAX];
	int w = (int)h->worker;

	if (h->len != HELLO_LEN || read_all(k->fd, b, sizeof(b)))
		return 1; /* not one of ours: drop it */
	version = get_u32(b, &pos);
	nworkers = get_u32(b, &pos);
	nparams = get_u64(b, &pos);
	model_hash = get_u64(b, &pos);
	data_hash = get_u64(b, &pos);
	if (version != PS_VERSION || h->worker >= (uint32_t)c->cl.nworkers ||
	    nworkers != (uint32_t)c->cl.nworkers || nparams != c->net.nparams ||
	    model_hash != hparams_hash(&c->hp, 0)) {
		snprintf(why, sizeof(why),
			 "ps %d: worker %u does not match this server "
			 "(version %u, %u workers, %llu parameters, or other "
			 "hyperparameters: every process needs the same "
			 "TF_CONFIG cluster and SM_HPS)",
			 c->cl.index, h->worker, version, nworkers,
			 (unsigned long long)nparams);
		return server_refuse(s, k, why);
	}
	if (s->hello[w]) {
		snprintf(why, sizeof(why), "ps %d: worker %d connected twice",
			 c->cl.index, w);
		return server_refuse(s, k, why);
	}
	if (s->have_data_hash && data_hash != s->data_hash) {
		snprintf(why, sizeof(why),
			 "ps %d: worker %d has different training data "
			 "(train-samples or files) than the others",
			 c->cl.index, w);
		return server_refuse(s, k, why);
	}
	s->data_hash = data_hash;
	s->have_data_hash = 1;
	s->hello[w] = 1;
	s->nhello++;
	k->worker = w;
	if (w == 0 &&
	    send_msg(k->fd, MSG_INFO, (uint64_t)s->latest, 0.0, 0, NULL, 0))
		return fail(c, "chief: send: %s", strerror(errno));
	if (s->started &&
	    send_msg(k->fd, MSG_READY, (uint64_t)s->step, 0.0, 0, NULL, 0))
		return fail(c, "worker %d: send: %s", w, strerror(errno));
	return 0;
}

static int server_start(struct server *s, struct conn *k,
			const struct header *h)
{
	struct common *c = s->c;
	uint8_t b[START_LEN];
	size_t pos = 0;
	int64_t every, per_epoch;
	int i;

	if (k->worker != 0 || s->started || h->len != START_LEN)
		return server_refuse(s, k, "unexpected START");
	if (read_all(k->fd, b, sizeof(b)))
		return fail(c, "chief: read: %s", strerror(errno));
	per_epoch = (int64_t)get_u64(b, &pos);
	(void)get_u64(b, &pos);
	if ((int64_t)h->step < 0 || (int64_t)h->step > s->latest)
		return server_refuse(s, k,
				     "START at a step with no checkpoint");
	every = c->hp.checkpoint_steps > 0 ? c->hp.checkpoint_steps : per_epoch;
	s->ckpt_every = every;
	if (server_begin(s, (int64_t)h->step)) {
		char why[MLP_ERRLEN + 16];

		snprintf(why, sizeof(why), "ps %d: %s", c->cl.index, c->err);
		return server_refuse(s, k, why);
	}
	s->started = 1;
	for (i = 0; i < s->nconns; i++)
		if (s->conns[i].worker >= 0 &&
		    send_msg(s->conns[i].fd, MSG_READY, (uint64_t)s->step, 0.0,
			     0, NULL, 0))
			return fail(c, "worker %d: send: %s",
				    s->conns[i].worker, strerror(errno));
	return 0;
}

/*
 * PULL of this step: the parameters at once; of the next one, after this
 * worker's push, once every worker has pushed (server_apply()).
 */
static int server_pull(struct server *s, struct conn *k, const struct header *h)
{
	struct common *c = s->c;
	char why[ERROR_TEXT_MAX];
	int w = k->worker;

	if ((int64_t)h->step == s->step)
		return send_shard(s, k->fd, MSG_PARAMS) ?
			       fail(c, "worker %d: send: %s", w,
				    strerror(errno)) :
			       0;
	if ((int64_t)h->step == s->step + 1 && s->pushed[w]) {
		s->pull_waiting[w] = 1;
		return 0;
	}
	snprintf(why, sizeof(why),
		 "ps %d: worker %d pulled step %llu at step %lld", c->cl.index,
		 w, (unsigned long long)h->step, (long long)s->step);
	return server_refuse(s, k, why);
}

/* PUSH of this step's gradients (checked by the caller). */
static int server_push(struct server *s, struct conn *k, const struct header *h)
{
	struct common *c = s->c;
	int w = k->worker;

	if (read_all(k->fd, s->grads + (size_t)w * s->len, h->len))
		return fail(c, "worker %d: read: %s", w, strerror(errno));
	s->losses[w] = h->aux;
	s->pushed[w] = 1;
	if (++s->npushed == c->cl.nworkers)
		return server_apply(s);
	return 0;
}

/*
 * One message from connection k. Returns 0 to go on, 1 to drop k (a
 * stranger, or a worker that is done), -1 to give up with c->err set.
 */
static int server_message(struct server *s, struct conn *k)
{
	struct common *c = s->c;
	struct header h;
	char why[ERROR_TEXT_MAX];
	int w = k->worker, rc;

	rc = recv_header(k->fd, &h);
	if (rc == 1 && (w < 0 || s->done[w]))
		return 1;
	if (rc)
		return w < 0 ? 1 :
			       fail(c, "worker %d: %s", w,
				    rc == 1 ? "closed the connection before "
					      "it was done" :
					      strerror(errno));
	if (w < 0) {
		if (h.type != MSG_HELLO)
			return 1;
		return server_hello(s, k, &h);
	}
	if (h.type == MSG_START)
		return server_start(s, k, &h);
	if (!s->started) {
		snprintf(why, sizeof(why), "ps %d: message %u before START",
			 c->cl.index, h.type);
		return server_refuse(s, k, why);
	}
	switch (h.type) {
	case MSG_PULL:
		if (h.len != 0)
			break;
		return server_pull(s, k, &h);
	case MSG_PUSH:
		if (h.len != s->len * sizeof(float) ||
		    (int64_t)h.step != s->step || s->pushed[w])
			break;
		return server_push(s, k, &h);
	case MSG_DONE:
		if (h.len != 0 || s->done[w])
			break;
		s->done[w] = 1;
		s->ndone++;
		return 0;
	default:
		break;
	}
	snprintf(why, sizeof(why),
		 "ps %d: unexpected message %u (step %llu, %u bytes) from "
		 "worker %d at step %lld",
		 c->cl.index, h.type, (unsigned long long)h.step, h.len, w,
		 (long long)s->step);
	return server_refuse(s, k, why);
}

static int server_run(struct common *c)
{
	struct server s;
	struct pollfd fds[MAX_WORKERS + 17];
	int64_t latest = 0;
	int ret = -1, i, rc;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.lfd = -1;
	shard_range(c->net.nparams, c->cl.nservers, c->cl.index, &s.off,
		    &s.len);
	rc = trainer_checkpoint_latest(c->t, &latest);
	if (rc && rc != TRAINER_ENOTFOUND) {
		fail(c, "trainer_checkpoint_latest: %s", trainer_errmsg(c->t));
		goto out;
	}
	s.latest = rc ? 0 : latest;
	if (server_alloc(&s) || server_listen(&s))
		goto out;
	printf("ps %d: listening on %s, shard of %zu parameters at %zu, %d "
	       "workers\n",
	       c->cl.index, c->cl.servers[c->cl.index], s.len, s.off,
	       c->cl.nworkers);
	fflush(stdout);
	while (s.ndone < c->cl.nworkers) {
		int n = 0;

		if (s.nconns < (int)(sizeof(s.conns) / sizeof(s.conns[0])))
			fds[n++] = (struct pollfd){ s.lfd, POLLIN, 0 };
		for (i = 0; i < s.nconns; i++)
			fds[n++] = (struct pollfd){ s.conns[i].fd, POLLIN, 0 };
		rc = poll(fds, (nfds_t)n, c->timeout_s * 1000);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0) {
			fail(c, "ps %d: %s", c->cl.index,
			     rc ? strerror(errno) :
				  "no message from any worker within "
				  "ps-timeout seconds");
			goto out;
		}
		i = 0;
		if (s.nconns < (int)(sizeof(s.conns) / sizeof(s.conns[0]))) {
			if (fds[0].revents & POLLIN) {
				int fd = accept(s.lfd, NULL, NULL);

				if (fd >= 0) {
					set_timeouts(fd, c->timeout_s);
					s.conns[s.nconns++] =
						(struct conn){ fd, -1 };
				}
			}
			i = 1;
		}
		for (; i < n; i++) {
			struct conn *k;
			int j;

			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			for (j = 0; j < s.nconns; j++)
				if (s.conns[j].fd == fds[i].fd)
					break;
			if (j == s.nconns)
				continue;
			k = &s.conns[j];
			rc = server_message(&s, k);
			if (rc < 0)
				goto out;
			if (rc == 1) {
				if (k->worker < 0)
					fprintf(stderr,
						"ps %d: dropped a connection "
						"that is not a worker of this "
						"job\n",
						c->cl.index);
				close(k->fd);
				s.conns[j] = s.conns[--s.nconns];
			}
		}
	}
	printf("ps %d: all %d workers done at step %lld\n", c->cl.index,
	       c->cl.nworkers, (long long)s.step);
	ret = 0;
out:
	server_free(&s);
	return ret;
}

/* ---- the workers ---------------------------------------------------- */

struct worker {
	struct common *c;
	struct dataset train, val;
	int fds[MAX_SERVERS];
	size_t off[MAX_SERVERS], len[MAX_SERVERS];
	float *grad;
	float *act[MLP_MAX_LAYERS + 1];
	float *dz, *dprev;
	uint8_t *labels;
	uint32_t *perm;
	int64_t bpe, total, start;
	int64_t params_step; /* the step net.params holds, -1: none yet */
	double epoch_loss;   /* chief: batch losses reported by ps 0 */
	int64_t epoch_batches;
};

static int is_chief(const struct worker *wk)
{
	return wk->c->cl.index == 0;
}

static int worker_connect(struct worker *wk, int s)
{
	struct common *c = wk->c;
	const char *addr = c->cl.servers[s];
	char host[ADDR_MAX], port[8];
	double deadline = now_seconds() + c->connect_timeout_s;
	struct timespec pause = { 0, 200 * 1000 * 1000 };

	if (split_addr(c, addr, host, port))
		return -1;
	/* Servers may start after us: retry until connect-timeout. */
	for (;;) {
		struct addrinfo hints, *res = NULL, *ai;
		int rc, fd = -1, e = 0;

		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		rc = getaddrinfo(host, port, &hints, &res);
		for (ai = rc ? NULL : res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, 0);
			if (fd >= 0 &&
			    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			e = errno;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		if (res)
			freeaddrinfo(res);
		if (fd >= 0) {
			set_timeouts(fd, c->timeout_s);
			wk->fds[s] = fd;
			return 0;
		}
		if (now_seconds() > deadline)
			return fail(c, "cannot reach ps %d at %s: %s", s, addr,
				    rc ? gai_strerror(rc) : strerror(e));
		nanosleep(&pause, NULL);
	}
}

/*
 * Reads server s's reply, which must be `type` for `step` (any step when
 * step < 0; then *got receives it) with exactly `len` bytes (into dst).
 * An ERROR reply becomes c->err.
 */
static int worker_expect(struct worker *wk, int s, uint32_t type, int64_t step,
			 void *dst, size_t len, double *aux, int64_t *got)
{
	struct common *c = wk->c;
	struct header h;
	char text[ERROR_TEXT_MAX + 1];
	int rc = recv_header(wk->fds[s], &h);

	if (rc)
		return fail(c, "ps %d: %s", s,
			    rc == 1 ? "closed the connection" :
				      strerror(errno));
	if (h.type == MSG_ERROR) {
		drain_text(wk->fds[s], h.len, text, sizeof(text));
		return fail(c, "%s", text);
	}
	if (h.type != type || (step >= 0 && (int64_t)h.step != step) ||
	    h.len != len)
		return fail(c,
			    "ps %d: unexpected reply %u (step %llu, %u "
			    "bytes), want %u for step %lld",
			    s, h.type, (unsigned long long)h.step, h.len, type,
			    (long long)step);
	if (len && read_all(wk->fds[s], dst, len))
		return fail(c, "ps %d: read: %s", s, strerror(errno));
	if (aux)
		*aux = h.aux;
	if (got)
		*got = (int64_t)h.step;
	return 0;
}

/*
 * HELLO to every server; the chief then collects each server's newest
 * checkpoint and starts them all at the oldest of those (servers save at
 * the same steps, and keep two, so that step exists everywhere). Every
 * worker then learns the start step from READY.
 */
static int worker_handshake(struct worker *wk)
{
	struct common *c = wk->c;
	uint8_t b[HELLO_LEN], st[START_LEN];
	int64_t start = INT64_MAX, latest, ready, got = -1;
	size_t pos = 0;
	int s;

	put_u32(b, &pos, PS_VERSION);
	put_u32(b, &pos, (uint32_t)c->cl.nworkers);
	put_u64(b, &pos, (uint64_t)c->net.nparams);
	put_u64(b, &pos, hparams_hash(&c->hp, 0));
	put_u64(b, &pos, hparams_hash(&c->hp, wk->train.n));
	for (s = 0; s < c->cl.nservers; s++) {
		if (worker_connect(wk, s))
			return -1;
		if (send_msg(wk->fds[s], MSG_HELLO, 0, 0.0,
			     (uint32_t)c->cl.index, b, sizeof(b)))
			return fail(c, "ps %d: send: %s", s, strerror(errno));
	}
	if (is_chief(wk)) {
		for (s = 0; s < c->cl.nservers; s++) {
			if (worker_expect(wk, s, MSG_INFO, -1, NULL, 0, NULL,
					  &latest))
				return -1;
			if (latest < start)
				start = latest;
		}
		if (start > wk->total)
			return fail(c,
				    "the servers' checkpoints (step %lld) "
				    "are past the end of training (%lld "
				    "steps)",
				    (long long)start, (long long)wk->total);
		pos = 0;
		put_u64(st, &pos, (uint64_t)wk->bpe);
		put_u64(st, &pos, (uint64_t)wk->total);
		for (s = 0; s < c->cl.nservers; s++)
			if (send_msg(wk->fds[s], MSG_START, (uint64_t)start,
				     0.0, 0, st, sizeof(st)))
				return fail(c, "ps %d: send: %s", s,
					    strerror(errno));
	}
	for (s = 0; s < c->cl.nservers; s++) {
		if (worker_expect(wk, s, MSG_READY, -1, NULL, 0, NULL, &ready))
			return -1;
		if (got >= 0 && ready != got)
			return fail(c, "servers started at steps %lld and %lld",
				    (long long)got, (long long)ready);
		got = ready;
	}
	if (got < 0 || got > wk->total)
		return fail(c, "servers started at step %lld of %lld",
			    (long long)got, (long long)wk->total);
	wk->start = got;
	return 0;
}

/* The whole network at `step`: ask every server first, then read. */
static int worker_pull(struct worker *wk, int64_t step)
{
	struct common *c = wk->c;
	double loss = 0.0;
	int s;

	if (wk->params_step == step)
		return 0;
	for (s = 0; s < c->cl.nservers; s++)
		if (send_msg(wk->fds[s], MSG_PULL, (uint64_t)step, 0.0,
			     (uint32_t)c->cl.index, NULL, 0))
			return fail(c, "ps %d: send: %s", s, strerror(errno));
	for (s = 0; s < c->cl.nservers; s++)
		if (worker_expect(wk, s, MSG_PARAMS, step,
				  c->net.params + wk->off[s],
				  wk->len[s] * sizeof(float),
				  s == 0 ? &loss : NULL, NULL))
			return -1;
	wk->params_step = step;
	/* PARAMS of step s carries the batch loss of step s - 1. */
	if (step > wk->start) {
		wk->epoch_loss += loss;
		wk->epoch_batches++;
	}
	return 0;
}

/*
 * The gradient of this worker's rows of global batch `step`: the same
 * split as mlp_dp's ranks (worker w of W takes rows [b w/W, b (w+1)/W)),
 * scaled by 1/b so that the servers' sum is the batch mean.
 */
static int worker_step(struct worker *wk, int64_t step)
{
	struct common *c = wk->c;
	const struct mlp *m = &c->net;
	int64_t start = (step % wk->bpe) * c->hp.batch_size;
	int64_t b = wk->train.n - start < c->hp.batch_size ?
			    wk->train.n - start :
			    c->hp.batch_size;
	int64_t lo = start + b * c->cl.index / c->cl.nworkers;
	int64_t hi = start + b * (c->cl.index + 1) / c->cl.nworkers;
	int n = (int)(hi - lo), dim = wk->train.dim, l, s;
	float scale = 1.0f / (float)b;
	double loss;
	int64_t i;

	if (worker_pull(wk, step))
		return -1;
	for (i = 0; i < n; i++) {
		uint32_t row = wk->perm[lo + i];

		memcpy(wk->act[0] + (size_t)i * dim,
		       wk->train.x + (size_t)row * dim,
		       (size_t)dim * sizeof(float));
		wk->labels[i] = wk->train.y[row];
	}
	for (l = 0; l < m->nlayers; l++)
		mlp_forward(m, m->params, l, wk->act[l], wk->act[l + 1], n);
	memset(wk->grad, 0, m->nparams * sizeof(float));
	loss = mlp_xent(wk->act[m->nlayers], wk->labels, n,
			mlp_out(m, m->nlayers - 1), scale, wk->dz, NULL) *
	       scale;
	for (l = m->nlayers - 1; l >= 0; l--) {
		float *tmp;

		mlp_backward(m, m->params, l, wk->act[l], wk->dz, wk->grad,
			     l > 0 ? wk->dprev : NULL, n);
		tmp = wk->dz;
		wk->dz = wk->dprev;
		wk->dprev = tmp;
	}
	for (s = 0; s < c->cl.nservers; s++)
		if (send_floats_msg(wk->fds[s], MSG_PUSH, (uint64_t)step, loss,
				    (uint32_t)c->cl.index,
				    wk->grad + wk->off[s], wk->len[s]))
			return fail(c, "ps %d: send: %s", s, strerror(errno));
	return 0;
}

static double worker_validate(struct worker *wk)
{
	const struct mlp *m = &wk->c->net;
	int chunk = (int)wk->c->hp.batch_size, r, l, right, correct = 0;

	for (r = 0; r < wk->val.n; r += chunk) {
		int n = wk->val.n - r < chunk ? wk->val.n - r : chunk;

		memcpy(wk->act[0], wk->val.x + (size_t)r * wk->val.dim,
		       (size_t)n * wk->val.dim * sizeof(float));
		for (l = 0; l < m->nlayers; l++)
			mlp_forward(m, m->params, l, wk->act[l], wk->act[l + 1],
				    n);
		(void)mlp_xent(wk->act[m->nlayers], wk->val.y + r, n,
			       mlp_out(m, m->nlayers - 1), 0.0f, NULL, &right);
		correct += right;
	}
	return (double)correct / wk->val.n;
}

static int worker_alloc(struct worker *wk)
{
	struct common *c = wk->c;
	size_t b = (size_t)c->hp.batch_size, widest = 0;
	int l, s;

	wk->grad = calloc(c->net.nparams, sizeof(float));
	wk->perm = calloc((size_t)wk->train.n, sizeof(uint32_t));
	wk->labels = calloc(b, 1);
	if (!wk->grad || !wk->perm || !wk->labels)
		return fail(c, "out of memory");
	for (l = 0; l <= c->net.nlayers; l++) {
		wk->act[l] = calloc(b * (size_t)c->net.sizes[l], sizeof(float));
		if (!wk->act[l])
			return fail(c, "out of memory");
		if ((size_t)c->net.sizes[l] > widest)
			widest = (size_t)c->net.sizes[l];
	}
	wk->dz = calloc(b * widest, sizeof(float));
	wk->dprev = calloc(b * widest, sizeof(float));
	if (!wk->dz || !wk->dprev)
		return fail(c, "out of memory");
	for (s = 0; s < c->cl.nservers; s++)
		shard_range(c->net.nparams, c->cl.nservers, s, &wk->off[s],
			    &wk->len[s]);
	return 0;
}

static void worker_free(struct worker *wk)
{
	int l, s;

	for (s = 0; s < wk->c->cl.nservers; s++)
		if (wk->fds[s] >= 0)
			close(wk->fds[s]);
	for (l = 0; l <= MLP_MAX_LAYERS; l++)
		free(wk->act[l]);
	free(wk->grad);
	free(wk->perm);
	free(wk->labels);
	free(wk->dz);
	free(wk->dprev);
	dataset_release(&wk->train);
	dataset_release(&wk->val);
}

/* The training images, and on worker 0 the held-out ones. */
static int worker_load(struct worker *wk, const char *arg_data)
{
	struct common *c = wk->c;
	const char *train_dir, *val_dir;

	data_dirs(c->t, arg_data, &train_dir, &val_dir);
	if (dataset_load(&wk->train, train_dir, "train",
			 (int)c->hp.train_samples, c->err, sizeof(c->err)) ||
	    (wk->c->cl.index == 0 &&
	     dataset_load(&wk->val, val_dir, "t10k", (int)c->hp.val_samples,
			  c->err, sizeof(c->err))))
		return -1;
	if (wk->train.dim != c->net.sizes[0] ||
	    (is_chief(wk) && wk->val.dim != c->net.sizes[0]))
		return fail(c, "images are not 28x28");
	return 0;
}

/* The chief at the end of an epoch: the epoch's metrics. */
static int worker_epoch_end(struct worker *wk, int64_t step, double *acc)
{
	struct common *c = wk->c;

	if (worker_pull(wk, step + 1))
		return -1;
	*acc = worker_validate(wk);
	trainer_metric(c->t, "train:loss",
		       wk->epoch_batches ? wk->epoch_loss / wk->epoch_batches :
					   0.0,
		       (step + 1) / wk->bpe);
	trainer_metric(c->t, "validation:accuracy", *acc, (step + 1) / wk->bpe);
	wk->epoch_loss = 0.0;
	wk->epoch_batches = 0;
	return 0;
}

/* The chief after the last step: validates and writes the model. */
static int worker_save(struct worker *wk, double acc, double t0)
{
	struct common *c = wk->c;
	char path[4096];

	if (worker_pull(wk, wk->total))
		return -1;
	if (acc < 0.0)
		acc = worker_validate(wk);
	if (c->hp.debug_hash)
		printf("model weights-hash %016llx\n",
		       (unsigned long long)mlp_hash(
			       c->net.params, c->net.nparams * sizeof(float),
			       MLP_HASH_INIT));
	snprintf(path, sizeof(path), "%s/model.bin", trainer_model_dir(c->t));
	if (mlp_save(&c->net, c->net.params, path, c->err, sizeof(c->err)))
		return -1;
	printf("model written to %s (%.1f s)\n", path, now_seconds() - t0);
	printf("final validation:accuracy=%.4f\n", acc);
	return 0;
}

/* Steps from wk->start to the end; acc: the last validation, or -1. */
static int worker_train(struct worker *wk, double *acc)
{
	struct common *c = wk->c;
	struct rng rng;
	int64_t step, epoch = -1;

	/* The data order has its own stream, as in mlp_dp. */
	rng_seed(&rng, (uint64_t)c->hp.seed ^ 0x5eed0fda7aULL);
	for (step = wk->start; step < wk->total; step++) {
		/* Epoch e's order is the e-th permutation drawn: replay. */
		while (epoch < step / wk->bpe) {
			rng_permutation(&rng, wk->perm, (size_t)wk->train.n);
			epoch++;
		}
		if (worker_step(wk, step))
			return -1;
		if (c->hp.fail_at_step && step + 1 == c->hp.fail_at_step &&
		    trainer_attempt(c->t) == 1)
			return fail(c,
				    "simulated failure after step %lld "
				    "(fail-at-step, attempt 1)",
				    (long long)step + 1);
		if (is_chief(wk) && (step + 1) % wk->bpe == 0 &&
		    worker_epoch_end(wk, step, acc))
			return -1;
	}
	return 0;
}

static int worker_run(struct common *c, const char *arg_data)
{
	struct worker wk;
	double t0 = now_seconds(), acc = -1.0;
	int ret = -1, s;

	memset(&wk, 0, sizeof(wk));
	wk.c = c;
	wk.params_step = -1;
	for (s = 0; s < MAX_SERVERS; s++)
		wk.fds[s] = -1;
	if (worker_load(&wk, arg_data))
		goto out;
	wk.bpe = (wk.train.n + c->hp.batch_size - 1) / c->hp.batch_size;
	wk.total = wk.bpe * c->hp.epochs;
	if (worker_alloc(&wk) || worker_handshake(&wk))
		goto out;
	if (is_chief(&wk))
		printf("worker 0 (chief): %d workers, %d servers, %d train / "
		       "%d held-out images, %lld steps from step %lld\n",
		       c->cl.nworkers, c->cl.nservers, wk.train.n, wk.val.n,
		       (long long)wk.total, (long long)wk.start);
	if (worker_train(&wk, &acc))
		goto out;
	if (is_chief(&wk) && worker_save(&wk, acc, t0))
		goto out;
	for (s = 0; s < c->cl.nservers; s++)
		if (send_msg(wk.fds[s], MSG_DONE, (uint64_t)wk.total, 0.0,
			     (uint32_t)c->cl.index, NULL, 0)) {
			fail(c, "ps %d: send: %s", s, strerror(errno));
			goto out;
		}
	ret = 0;
out:
	worker_free(&wk);
	return ret;
}

/* ---- main ----------------------------------------------------------- */

static int hp_seconds(struct common *c, const char *key, int def, int *out)
{
	int64_t v = def;
	int rc = trainer_hp_int(c->t, key, &v);

	if ((rc && rc != TRAINER_ENOTFOUND) || v < 1 || v > 86400)
		return fail(c, "hyperparameter '%s': want seconds 1..86400",
			    key);
	*out = (int)v;
	return 0;
}

extern char **environ;

/* As libtrainer decides it: any SM_* or TRAINCTL_* variable. */
static int in_job(void)
{
	char **e;

	for (e = environ; e && *e; e++)
		if (!strncmp(*e, "SM_", 3) || !strncmp(*e, "TRAINCTL_", 9))
			return 1;
	return 0;
}

/*
 * Servers on one host share its checkpoint directory, and libtrainer
 * names checkpoints by rank (0 for every process here): so each server
 * gets a subdirectory of its own. Workers keep no checkpoints.
 */
static int server_checkpoint_dir(struct common *c)
{
	const char *base = getenv("TRAINCTL_CHECKPOINT_DIR");
	char dir[4096];

	/* libtrainer's default, which is ./checkpoints outside a job. */
	if (!base || !*base)
		base = in_job() ? "/opt/ml/checkpoints" : "./checkpoints";
	if ((size_t)snprintf(dir, sizeof(dir), "%s/ps-%d", base, c->cl.index) >=
	    sizeof(dir))
		return fail(c, "TRAINCTL_CHECKPOINT_DIR is too long");
	if (setenv("TRAINCTL_CHECKPOINT_DIR", dir, 1))
		return fail(c, "setenv: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	static struct common c;
	const char *arg_data;
	const uint16_t one = 1;
	int sizes[MLP_MAX_LAYERS + 1], nlayers, ret;

	memset(&c, 0, sizeof(c));
	if (parse_args(argc, argv, &arg_data, c.err, sizeof(c.err))) {
		fprintf(stderr, "param_server: %s\n", c.err);
		return 2;
	}
	if (*(const uint8_t *)&one != 1) {
		fprintf(stderr, "param_server: error: the wire format is "
				"little-endian; this host is not\n");
		return 1;
	}
	if (parse_tf_config(&c) ||
	    (c.cl.is_server && server_checkpoint_dir(&c))) {
		fprintf(stderr, "param_server: error: %s\n", c.err);
		return 1;
	}
	if (trainer_init(&argc, &argv, TRAINER_DEVICE_CPU, &c.t, c.err,
			 sizeof(c.err))) {
		fprintf(stderr, "param_server: error: trainer_init: %s\n",
			c.err);
		return 1;
	}
	ret = hparams_load(c.t, &c.hp, c.err, sizeof(c.err));
	if (!ret && strcmp(c.hp.device, "cpu"))
		ret = fail(&c,
			   "param_server runs on the CPU only (device=cpu)");
	ret = ret ? ret : hp_seconds(&c, "ps-timeout", 600, &c.timeout_s);
	ret = ret ? ret :
		    hp_seconds(&c, "ps-connect-timeout", 300,
			       &c.connect_timeout_s);
	if (!ret) {
		nlayers = hparams_layers(&c.hp, sizes);
		ret = mlp_init(&c.net, sizes, nlayers, (uint64_t)c.hp.seed,
			       c.err, sizeof(c.err));
	}
	if (!ret)
		ret = c.cl.is_server ? server_run(&c) :
				       worker_run(&c, arg_data);
	if (ret)
		fprintf(stderr, "param_server: %s %d: error: %s\n",
			c.cl.is_server ? "ps" : "worker", c.cl.index, c.err);
	fflush(stdout);
	mlp_release(&c.net);
	trainer_free(c.t);
	return ret ? 1 : 0;
}
