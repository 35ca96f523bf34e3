/*
 * mlp_pipeline: model-parallel training of an MLP on Fashion-MNIST with
 * libtrainer, run under mpirun (the job's MPI mode).
 *
 * The network's layers are split over the ranks in order (with as many
 * ranks as layers, rank r holds layer r; with one rank, the whole
 * network), so no rank ever holds all the weights. Each global batch is
 * cut into micro-batches and run GPipe style: every micro-batch goes
 * forward through the stages (activations sent to the next rank with
 * trainer_send), the last rank computes the loss, then the micro-batches
 * go backward in reverse order (gradients sent to the previous rank), and
 * each rank applies SGD to its own layers. While stage r works on
 * micro-batch j, stage r-1 already works on j+1.
 *
 * Every layer does exactly the arithmetic it does in the unsplit network
 * (same init from the seed, same rows, same order of accumulation), so
 * 1, 2 or 3 ranks give bit-identical weights.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mlp/mlp.h"

#define STATE_MAGIC "TCPPST01"
#define STATE_LEN (8 + 8 * 8 + 8 * 4 + 8)
#define TAG_FORWARD 1
#define TAG_BACKWARD 2
#define TAG_METRICS 3
#define TAG_MODEL 4

struct pp {
	struct trainer *t;
	struct hparams hp;
	struct mlp net;
	struct dataset train, val;
	int rank, world;
	int l0, l1; /* this rank's layers: l0 <= l < l1 */

	float *grad, *vel; /* laid out as net.params; only our slice used */
	/* act[l] for l0 <= l <= l1: one global batch of rows each. */
	float *act[MLP_MAX_LAYERS + 1];
	float *dz, *dprev;
	uint8_t *labels;
	uint32_t *perm;

	int64_t step, epoch, batch, epoch_batches;
	struct rng epoch_rng, next_rng;
	double epoch_loss; /* last rank only */
};

static void die(const struct pp *pp, const char *what)
{
	fprintf(stderr, "mlp_pipeline: rank %d: error: %s\n", pp->rank, what);
	exit(1);
}

static void die_trainer(const struct pp *pp, const char *call)
{
	char msg[MLP_ERRLEN];

	snprintf(msg, sizeof(msg), "%s: %s", call, trainer_errmsg(pp->t));
	die(pp, msg);
}

static void *xcalloc(const struct pp *pp, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die(pp, "out of memory");
	return p;
}

static int last(const struct pp *pp)
{
	return pp->rank == pp->world - 1;
}

static void send_floats(struct pp *pp, const float *buf, size_t n, int peer,
			int tag)
{
	if (trainer_send(pp->t, buf, n, TRAINER_FLOAT, peer, tag))
		die_trainer(pp, "trainer_send");
}

static void recv_floats(struct pp *pp, float *buf, size_t n, int peer, int tag)
{
	if (trainer_recv(pp->t, buf, n, TRAINER_FLOAT, peer, tag))
		die_trainer(pp, "trainer_recv");
}

static void alloc_buffers(struct pp *pp)
{
	size_t b = (size_t)pp->hp.batch_size, widest = 0;
	int l;

	pp->grad = xcalloc(pp, pp->net.nparams, sizeof(float));
	pp->vel = xcalloc(pp, pp->net.nparams, sizeof(float));
	for (l = pp->l0; l <= pp->l1; l++) {
		pp->act[l] = xcalloc(pp, b * (size_t)pp->net.sizes[l],
				     sizeof(float));
		if ((size_t)pp->net.sizes[l] > widest)
			widest = (size_t)pp->net.sizes[l];
	}
	pp->dz = xcalloc(pp, b * widest, sizeof(float));
	pp->dprev = xcalloc(pp, b * widest, sizeof(float));
	pp->labels = xcalloc(pp, b, 1);
	pp->perm = xcalloc(pp, (size_t)pp->train.n, sizeof(uint32_t));
}

static void free_buffers(struct pp *pp)
{
	int l;

	free(pp->grad);
	free(pp->vel);
	for (l = pp->l0; l <= pp->l1; l++)
		free(pp->act[l]);
	free(pp->dz);
	free(pp->dprev);
	free(pp->labels);
	free(pp->perm);
}

static int64_t batches_per_epoch(const struct pp *pp)
{
	return (pp->train.n + pp->hp.batch_size - 1) / pp->hp.batch_size;
}

/*
 * Forward of rows [r0, r0+n) of the act buffers through this stage: the
 * input comes from the previous rank (or the caller filled act[0]), the
 * output goes to the next rank.
 */
static void stage_forward(struct pp *pp, int r0, int n)
{
	const struct mlp *m = &pp->net;
	int l;

	if (pp->rank > 0)
		recv_floats(pp, pp->act[pp->l0] + (size_t)r0 * m->sizes[pp->l0],
			    (size_t)n * m->sizes[pp->l0], pp->rank - 1,
			    TAG_FORWARD);
	for (l = pp->l0; l < pp->l1; l++)
		mlp_forward(m, m->params, l,
			    pp->act[l] + (size_t)r0 * m->sizes[l],
			    pp->act[l + 1] + (size_t)r0 * m->sizes[l + 1], n);
	if (!last(pp))
		send_floats(pp, pp->act[pp->l1] + (size_t)r0 * m->sizes[pp->l1],
			    (size_t)n * m->sizes[pp->l1], pp->rank + 1,
			    TAG_FORWARD);
}

/* Backward of one micro-batch, rows [r0, r0+n), through this stage. */
static void stage_backward(struct pp *pp, int r0, int n, float scale)
{
	const struct mlp *m = &pp->net;
	int l, k = m->sizes[m->nlayers];

	if (last(pp))
		pp->epoch_loss += mlp_xent(pp->act[m->nlayers] + (size_t)r0 * k,
					   pp->labels + r0, n, k, scale, pp->dz,
					   NULL) *
				  scale;
	else
		recv_floats(pp, pp->dz, (size_t)n * m->sizes[pp->l1],
			    pp->rank + 1, TAG_BACKWARD);
	for (l = pp->l1 - 1; l >= pp->l0; l--) {
		float *tmp;

		mlp_backward(m, m->params, l,
			     pp->act[l] + (size_t)r0 * m->sizes[l], pp->dz,
			     pp->grad, l > 0 ? pp->dprev : NULL, n);
		tmp = pp->dz;
		pp->dz = pp->dprev;
		pp->dprev = tmp;
	}
	if (pp->rank > 0)
		send_floats(pp, pp->dz, (size_t)n * m->sizes[pp->l0],
			    pp->rank - 1, TAG_BACKWARD);
}

/*
 * One step: every micro-batch forward, then every micro-batch backward in
 * reverse order (GPipe), then SGD on this rank's layers. The micro-batch
 * boundaries depend only on the batch, so the unsplit network (one rank)
 * accumulates the gradient in exactly the same order.
 */
static void train_step(struct pp *pp)
{
	struct mlp *m = &pp->net;
	int64_t start = pp->batch * pp->hp.batch_size;
	int b = (int)(pp->train.n - start < pp->hp.batch_size ?
			      pp->train.n - start :
			      pp->hp.batch_size);
	int mb = pp->hp.micro_batches < b ? (int)pp->hp.micro_batches : b;
	int dim = pp->train.dim, i, j;
	size_t lo = m->begin[pp->l0], len = m->begin[pp->l1] - lo;

	for (i = 0; i < b; i++) {
		uint32_t row = pp->perm[start + i];

		if (pp->rank == 0)
			memcpy(pp->act[0] + (size_t)i * dim,
			       pp->train.x + (size_t)row * dim,
			       (size_t)dim * sizeof(float));
		pp->labels[i] = pp->train.y[row];
	}
	memset(pp->grad + lo, 0, len * sizeof(float));
	for (j = 0; j < mb; j++) {
		int r0 = b * j / mb, r1 = b * (j + 1) / mb;

		stage_forward(pp, r0, r1 - r0);
	}
	for (j = mb - 1; j >= 0; j--) {
		int r0 = b * j / mb, r1 = b * (j + 1) / mb;

		stage_backward(pp, r0, r1 - r0, 1.0f / (float)b);
	}
	mlp_sgd(m->params + lo, pp->vel + lo, pp->grad + lo, len,
		(float)pp->hp.learning_rate, (float)pp->hp.momentum);
	pp->epoch_batches++;
	pp->batch++;
	pp->step++;
}

/*
 * Held-out accuracy, computed on the last rank, then sent with the
 * epoch's loss to rank 0, which prints the metrics. Returns the accuracy
 * on rank 0 (and the last rank).
 */
static double validate(struct pp *pp, double *loss)
{
	const struct mlp *m = &pp->net;
	int chunk = (int)pp->hp.batch_size, r, k = m->sizes[m->nlayers];
	double res[2] = { 0.0, 0.0 };
	int right, correct = 0;

	for (r = 0; r < pp->val.n; r += chunk) {
		int n = pp->val.n - r < chunk ? pp->val.n - r : chunk;

		if (pp->rank == 0)
			memcpy(pp->act[0], pp->val.x + (size_t)r * pp->val.dim,
			       (size_t)n * pp->val.dim * sizeof(float));
		stage_forward(pp, 0, n);
		if (last(pp)) {
			(void)mlp_xent(pp->act[m->nlayers], pp->val.y + r, n, k,
				       0.0f, NULL, &right);
			correct += right;
		}
	}
	if (last(pp)) {
		res[0] = (double)correct / pp->val.n;
		res[1] = pp->epoch_batches ?
				 pp->epoch_loss / (double)pp->epoch_batches :
				 0.0;
		if (pp->world > 1 &&
		    trainer_send(pp->t, res, 2, TRAINER_DOUBLE, 0, TAG_METRICS))
			die_trainer(pp, "trainer_send");
	} else if (pp->rank == 0 && trainer_recv(pp->t, res, 2, TRAINER_DOUBLE,
						 pp->world - 1, TAG_METRICS)) {
		die_trainer(pp, "trainer_recv");
	}
	*loss = res[1];
	return res[0];
}

static void save_checkpoint(struct pp *pp)
{
	uint8_t state[STATE_LEN];
	size_t pos, lo = pp->net.begin[pp->l0];
	size_t len = pp->net.begin[pp->l1] - lo;
	struct trainer_file files[3];
	int i;

	memcpy(state, STATE_MAGIC, 8);
	pos = 8;
	put_u64(state, &pos, hparams_hash(&pp->hp, pp->train.n));
	put_u64(state, &pos, (uint64_t)pp->hp.micro_batches);
	put_u64(state, &pos, (uint64_t)pp->l0);
	put_u64(state, &pos, (uint64_t)pp->l1);
	put_u64(state, &pos, (uint64_t)pp->step);
	put_u64(state, &pos, (uint64_t)pp->epoch);
	put_u64(state, &pos, (uint64_t)pp->batch);
	put_u64(state, &pos, (uint64_t)pp->epoch_batches);
	for (i = 0; i < 4; i++)
		put_u64(state, &pos, pp->epoch_rng.s[i]);
	put_f64(state, &pos, pp->epoch_loss);
	files[0] = (struct trainer_file){ "state.bin", state, pos };
	files[1] = (struct trainer_file){ "params.bin", pp->net.params + lo,
					  len * sizeof(float) };
	files[2] = (struct trainer_file){ "velocity.bin", pp->vel + lo,
					  len * sizeof(float) };
	if (trainer_checkpoint_save(pp->t, pp->step, files, 3))
		die_trainer(pp, "trainer_checkpoint_save");
}

static void load_file(struct pp *pp, int64_t step, const char *name, void *dst,
		      size_t len)
{
	void *data = NULL;
	size_t got = 0;
	char msg[MLP_ERRLEN];

	if (trainer_checkpoint_load(pp->t, step, name, &data, &got))
		die_trainer(pp, "trainer_checkpoint_load");
	if (got != len) {
		snprintf(msg, sizeof(msg),
			 "checkpoint %lld: %s has %zu bytes, want %zu",
			 (long long)step, name, got, len);
		free(data);
		die(pp, msg);
	}
	memcpy(dst, data, len);
	free(data);
}

/*
 * Each rank checkpoints its own layers; all resume from the newest step
 * every rank has. The split must be the same as when it was saved.
 */
static void resume(struct pp *pp)
{
	uint8_t state[STATE_LEN];
	size_t pos = 8, lo = pp->net.begin[pp->l0];
	size_t len = pp->net.begin[pp->l1] - lo;
	int64_t step;
	int rc, i;

	rc = trainer_checkpoint_latest_all(pp->t, &step);
	if (rc == TRAINER_ENOTFOUND)
		return;
	if (rc)
		die_trainer(pp, "trainer_checkpoint_latest_all");
	load_file(pp, step, "state.bin", state, sizeof(state));
	if (memcmp(state, STATE_MAGIC, 8) ||
	    get_u64(state, &pos) != hparams_hash(&pp->hp, pp->train.n) ||
	    get_u64(state, &pos) != (uint64_t)pp->hp.micro_batches)
		die(pp, "the checkpoint is of another configuration (layers, "
			"seed, learning rate, momentum, batch size, "
			"micro-batches or data); clear the checkpoint "
			"directory to start afresh");
	if (get_u64(state, &pos) != (uint64_t)pp->l0 ||
	    get_u64(state, &pos) != (uint64_t)pp->l1)
		die(pp, "the checkpoint was written by a different number of "
			"pipeline stages");
	pp->step = (int64_t)get_u64(state, &pos);
	pp->epoch = (int64_t)get_u64(state, &pos);
	pp->batch = (int64_t)get_u64(state, &pos);
	pp->epoch_batches = (int64_t)get_u64(state, &pos);
	for (i = 0; i < 4; i++)
		pp->epoch_rng.s[i] = get_u64(state, &pos);
	pp->epoch_loss = get_f64(state, &pos);
	if (pp->step != step || pp->batch > batches_per_epoch(pp))
		die(pp, "the checkpoint's state is inconsistent");
	load_file(pp, step, "params.bin", pp->net.params + lo,
		  len * sizeof(float));
	load_file(pp, step, "velocity.bin", pp->vel + lo, len * sizeof(float));
	if (pp->rank == 0)
		printf("resumed from checkpoint step %lld\n", (long long)step);
}

/* fail-at-step N: a simulated crash after step N on attempt 1 only. */
static void maybe_fail(struct pp *pp)
{
	if (!pp->hp.fail_at_step || pp->step != pp->hp.fail_at_step ||
	    trainer_attempt(pp->t) != 1)
		return;
	(void)trainer_barrier(pp->t);
	if (pp->rank == 0)
		printf("simulated failure after step %lld (fail-at-step, "
		       "attempt 1)\n",
		       (long long)pp->step);
	fflush(stdout);
	trainer_free(pp->t);
	exit(1);
}

/*
 * The model file holds the whole network: every other stage sends its
 * slice of the flat parameter vector to rank 0, which writes model.bin.
 */
static void write_model(struct pp *pp, double t0, double acc)
{
	struct mlp *m = &pp->net;
	char path[4096], err[MLP_ERRLEN];
	int r;

	if (pp->rank != 0) {
		send_floats(pp, m->params + m->begin[pp->l0],
			    m->begin[pp->l1] - m->begin[pp->l0], 0, TAG_MODEL);
		return;
	}
	for (r = 1; r < pp->world; r++) {
		int a = r * m->nlayers / pp->world;
		int z = (r + 1) * m->nlayers / pp->world;

		recv_floats(pp, m->params + m->begin[a],
			    m->begin[z] - m->begin[a], r, TAG_MODEL);
	}
	if (pp->hp.debug_hash)
		printf("model weights-hash %016llx\n",
		       (unsigned long long)mlp_hash(m->params,
						    m->nparams * sizeof(float),
						    MLP_HASH_INIT));
	snprintf(path, sizeof(path), "%s/model.bin", trainer_model_dir(pp->t));
	if (mlp_save(m, m->params, path, err, sizeof(err)))
		die(pp, err);
	printf("model written to %s (%.1f s)\n", path, now_seconds() - t0);
	printf("final validation:accuracy=%.4f\n", acc);
}

int main(int argc, char **argv)
{
	struct pp pp;
	char err[MLP_ERRLEN];
	const char *arg_data, *train_dir, *val_dir;
	int sizes[MLP_MAX_LAYERS + 1], nlayers, validated = 0;
	double t0 = now_seconds(), acc = 0.0, loss = 0.0;

	memset(&pp, 0, sizeof(pp));
	if (parse_args(argc, argv, &arg_data, err, sizeof(err))) {
		fprintf(stderr, "mlp_pipeline: %s\n", err);
		return 2;
	}
	if (trainer_init(&argc, &argv, TRAINER_DEVICE_CPU, &pp.t, err,
			 sizeof(err))) {
		fprintf(stderr, "mlp_pipeline: error: trainer_init: %s\n", err);
		return 1;
	}
	pp.rank = trainer_rank(pp.t);
	pp.world = trainer_world_size(pp.t);
	if (hparams_load(pp.t, &pp.hp, err, sizeof(err)))
		die(&pp, err);
	if (strcmp(pp.hp.device, "cpu"))
		die(&pp, "mlp_pipeline runs on the CPU only (device=cpu)");
	nlayers = hparams_layers(&pp.hp, sizes);
	if (pp.world > nlayers) {
		snprintf(err, sizeof(err),
			 "%d ranks but only %d layers: give 'hidden' at least "
			 "%d widths (e.g. \"128,64\" for 3 ranks)",
			 pp.world, nlayers, pp.world - 1);
		die(&pp, err);
	}
	pp.l0 = pp.rank * nlayers / pp.world;
	pp.l1 = (pp.rank + 1) * nlayers / pp.world;
	/*
	 * Every stage draws the whole network's initial weights (each layer
	 * from its own seeded stream, a few milliseconds), so that rank 0
	 * can assemble the model in place at the end.
	 */
	if (mlp_init(&pp.net, sizes, nlayers, (uint64_t)pp.hp.seed, err,
		     sizeof(err)))
		die(&pp, err);
	data_dirs(pp.t, arg_data, &train_dir, &val_dir);
	if (dataset_load(&pp.train, train_dir, "train",
			 (int)pp.hp.train_samples, err, sizeof(err)) ||
	    dataset_load(&pp.val, val_dir, "t10k", (int)pp.hp.val_samples, err,
			 sizeof(err)))
		die(&pp, err);
	if (pp.train.dim != sizes[0] || pp.val.dim != sizes[0])
		die(&pp, "images are not 28x28");
	alloc_buffers(&pp);
	rng_seed(&pp.epoch_rng, (uint64_t)pp.hp.seed ^ 0x5eed0fda7aULL);
	resume(&pp);
	printf("mlp_pipeline: rank %d of %d holds layers %d..%d of %d\n",
	       pp.rank, pp.world, pp.l0 + 1, pp.l1, nlayers);

	while (pp.epoch < pp.hp.epochs) {
		pp.next_rng = pp.epoch_rng;
		rng_permutation(&pp.next_rng, pp.perm, (size_t)pp.train.n);
		while (pp.batch < batches_per_epoch(&pp)) {
			train_step(&pp);
			if (pp.hp.checkpoint_steps > 0 &&
			    pp.step % pp.hp.checkpoint_steps == 0)
				save_checkpoint(&pp);
			maybe_fail(&pp);
		}
		acc = validate(&pp, &loss);
		validated = 1;
		if (pp.rank == 0) {
			trainer_metric(pp.t, "train:loss", loss, pp.epoch + 1);
			trainer_metric(pp.t, "validation:accuracy", acc,
				       pp.epoch + 1);
		}
		pp.epoch++;
		pp.batch = 0;
		pp.epoch_loss = 0.0;
		pp.epoch_batches = 0;
		pp.epoch_rng = pp.next_rng;
		if (pp.hp.checkpoint_steps == 0)
			save_checkpoint(&pp);
	}
	if (!validated)
		acc = validate(&pp, &loss);
	write_model(&pp, t0, acc);
	fflush(stdout);
	free_buffers(&pp);
	dataset_release(&pp.train);
	dataset_release(&pp.val);
	mlp_release(&pp.net);
	trainer_free(pp.t);
	return 0;
}
