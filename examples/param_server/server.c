/*
 * param_server's server: it owns one shard of the parameters, applies
 * the workers' gradients to it and checkpoints it.
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

void ps_shard_range(size_t nparams, int nservers, int s, size_t *off,
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

	if (ps_split_addr(c, c->cl.servers[c->cl.index], host, port))
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		return ps_fail(c, "ps address %s: %s",
			       c->cl.servers[c->cl.index], gai_strerror(rc));
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
		return ps_fail(c, "cannot listen on %s: %s",
			       c->cl.servers[c->cl.index], strerror(errno));
	if (listen(fd, MAX_WORKERS) < 0) {
		close(fd);
		return ps_fail(c, "listen: %s", strerror(errno));
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
		return ps_fail(s->c, "out of memory for a shard of %zu",
			       s->len);
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
	(void)ps_send_msg(k->fd, MSG_ERROR, (uint64_t)s->step, 0.0, 0, why, n);
	return ps_fail(s->c, "%s", why);
}

static int send_shard(struct server *s, int fd, uint32_t type)
{
	return ps_send_floats_msg(fd, type, (uint64_t)s->step, s->last_loss, 0,
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
		return ps_fail(c, "trainer_checkpoint_save: %s",
			       trainer_errmsg(c->t));
	return 0;
}

static int load_exact(struct common *c, int64_t step, const char *name,
		      void *dst, size_t len)
{
	void *data = NULL;
	size_t got = 0;

	if (trainer_checkpoint_load(c->t, step, name, &data, &got))
		return ps_fail(c, "checkpoint %lld: %s", (long long)step,
			       trainer_errmsg(c->t));
	if (got != len) {
		free(data);
		return ps_fail(c, "checkpoint %lld: %s has %zu bytes, want %zu",
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
		return ps_fail(c,
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
				return ps_fail(c, "worker %d: send: %s",
					       k->worker, strerror(errno));
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

	if (h->len != HELLO_LEN || ps_read_all(k->fd, b, sizeof(b)))
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
	    ps_send_msg(k->fd, MSG_INFO, (uint64_t)s->latest, 0.0, 0, NULL, 0))
		return ps_fail(c, "chief: send: %s", strerror(errno));
	if (s->started &&
	    ps_send_msg(k->fd, MSG_READY, (uint64_t)s->step, 0.0, 0, NULL, 0))
		return ps_fail(c, "worker %d: send: %s", w, strerror(errno));
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
	if (ps_read_all(k->fd, b, sizeof(b)))
		return ps_fail(c, "chief: read: %s", strerror(errno));
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
		    ps_send_msg(s->conns[i].fd, MSG_READY, (uint64_t)s->step,
				0.0, 0, NULL, 0))
			return ps_fail(c, "worker %d: send: %s",
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
			       ps_fail(c, "worker %d: send: %s", w,
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

	if (ps_read_all(k->fd, s->grads + (size_t)w * s->len, h->len))
		return ps_fail(c, "worker %d: read: %s", w, strerror(errno));
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

	rc = ps_recv_header(k->fd, &h);
	if (rc == 1 && (w < 0 || s->done[w]))
		return 1;
	if (rc)
		return w < 0 ? 1 :
			       ps_fail(c, "worker %d: %s", w,
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

int ps_server_run(struct common *c)
{
	struct server s;
	struct pollfd fds[MAX_WORKERS + 17];
	int64_t latest = 0;
	int ret = -1, i, rc;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.lfd = -1;
	ps_shard_range(c->net.nparams, c->cl.nservers, c->cl.index, &s.off,
		       &s.len);
	rc = trainer_checkpoint_latest(c->t, &latest);
	if (rc && rc != TRAINER_ENOTFOUND) {
		ps_fail(c, "trainer_checkpoint_latest: %s",
			trainer_errmsg(c->t));
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
			ps_fail(c, "ps %d: %s", c->cl.index,
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
					ps_set_timeouts(fd, c->timeout_s);
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
