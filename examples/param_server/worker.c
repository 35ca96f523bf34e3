/*
 * param_server's workers: they own the data, compute the gradients and
 * (the chief) evaluate and save the model.
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

	if (ps_split_addr(c, addr, host, port))
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
			ps_set_timeouts(fd, c->timeout_s);
			wk->fds[s] = fd;
			return 0;
		}
		if (now_seconds() > deadline)
			return ps_fail(c, "cannot reach ps %d at %s: %s", s,
				       addr,
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
	int rc = ps_recv_header(wk->fds[s], &h);

	if (rc)
		return ps_fail(c, "ps %d: %s", s,
			       rc == 1 ? "closed the connection" :
					 strerror(errno));
	if (h.type == MSG_ERROR) {
		ps_drain_text(wk->fds[s], h.len, text, sizeof(text));
		return ps_fail(c, "%s", text);
	}
	if (h.type != type || (step >= 0 && (int64_t)h.step != step) ||
	    h.len != len)
		return ps_fail(c,
			       "ps %d: unexpected reply %u (step %llu, %u "
			       "bytes), want %u for step %lld",
			       s, h.type, (unsigned long long)h.step, h.len,
			       type, (long long)step);
	if (len && ps_read_all(wk->fds[s], dst, len))
		return ps_fail(c, "ps %d: read: %s", s, strerror(errno));
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
		if (ps_send_msg(wk->fds[s], MSG_HELLO, 0, 0.0,
				(uint32_t)c->cl.index, b, sizeof(b)))
			return ps_fail(c, "ps %d: send: %s", s,
				       strerror(errno));
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
			return ps_fail(c,
				       "the servers' checkpoints (step %lld) "
				       "are past the end of training (%lld "
				       "steps)",
				       (long long)start, (long long)wk->total);
		pos = 0;
		put_u64(st, &pos, (uint64_t)wk->bpe);
		put_u64(st, &pos, (uint64_t)wk->total);
		for (s = 0; s < c->cl.nservers; s++)
			if (ps_send_msg(wk->fds[s], MSG_START, (uint64_t)start,
					0.0, 0, st, sizeof(st)))
				return ps_fail(c, "ps %d: send: %s", s,
					       strerror(errno));
	}
	for (s = 0; s < c->cl.nservers; s++) {
		if (worker_expect(wk, s, MSG_READY, -1, NULL, 0, NULL, &ready))
			return -1;
		if (got >= 0 && ready != got)
			return ps_fail(c,
				       "servers started at steps %lld and %lld",
				       (long long)got, (long long)ready);
		got = ready;
	}
	if (got < 0 || got > wk->total)
		return ps_fail(c, "servers started at step %lld of %lld",
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
		if (ps_send_msg(wk->fds[s], MSG_PULL, (uint64_t)step, 0.0,
				(uint32_t)c->cl.index, NULL, 0))
			return ps_fail(c, "ps %d: send: %s", s,
				       strerror(errno));
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
		if (ps_send_floats_msg(wk->fds[s], MSG_PUSH, (uint64_t)step,
				       loss, (uint32_t)c->cl.index,
				       wk->grad + wk->off[s], wk->len[s]))
			return ps_fail(c, "ps %d: send: %s", s,
				       strerror(errno));
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
		return ps_fail(c, "out of memory");
	for (l = 0; l <= c->net.nlayers; l++) {
		wk->act[l] = calloc(b * (size_t)c->net.sizes[l], sizeof(float));
		if (!wk->act[l])
			return ps_fail(c, "out of memory");
		if ((size_t)c->net.sizes[l] > widest)
			widest = (size_t)c->net.sizes[l];
	}
	wk->dz = calloc(b * widest, sizeof(float));
	wk->dprev = calloc(b * widest, sizeof(float));
	if (!wk->dz || !wk->dprev)
		return ps_fail(c, "out of memory");
	for (s = 0; s < c->cl.nservers; s++)
		ps_shard_range(c->net.nparams, c->cl.nservers, s, &wk->off[s],
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
		return ps_fail(c, "images are not 28x28");
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
			return ps_fail(c,
				       "simulated failure after step %lld "
				       "(fail-at-step, attempt 1)",
				       (long long)step + 1);
		if (is_chief(wk) && (step + 1) % wk->bpe == 0 &&
		    worker_epoch_end(wk, step, acc))
			return -1;
	}
	return 0;
}

int ps_worker_run(struct common *c, const char *arg_data)
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
		if (ps_send_msg(wk.fds[s], MSG_DONE, (uint64_t)wk.total, 0.0,
				(uint32_t)c->cl.index, NULL, 0)) {
			ps_fail(c, "ps %d: send: %s", s, strerror(errno));
			goto out;
		}
	ret = 0;
out:
	worker_free(&wk);
	return ret;
}
