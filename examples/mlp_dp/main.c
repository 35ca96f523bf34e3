/*
 * mlp_dp: data-parallel training of an MLP on Fashion-MNIST with
 * libtrainer, run under mpirun (the job's MPI mode).
 *
 * Every rank holds the whole network. Each step takes one global
 * mini-batch of batch-size examples (the same permutation on every rank,
 * drawn from the seed), rank r computes the gradient of its share of it,
 * one trainer_allreduce_avg() of the flattened gradient (with the batch
 * loss riding along as one more float) gives every rank the gradient of
 * the whole batch, and every rank applies the same SGD update. Because the
 * global batch is the same for any world size, 1, 2 or 3 processes follow
 * the same trajectory up to floating-point rounding.
 *
 * Checkpoints (weights, velocity, epoch/step and the data order's random
 * state) go through trainer_checkpoint_save(); a restart resumes from
 * trainer_checkpoint_latest_all() and continues the same trajectory.
 * Each step also asks trainer_checkpoint_requested(): before a planned
 * stop (preemption, a drain, StopTrainingJob) the step in progress is
 * saved, whatever the checkpoint interval.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef EXAMPLE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "../mlp/mlp.h"

#define STATE_MAGIC "TCDPST01"
#define STATE_LEN (8 + 8 * 6 + 8 * 4 + 8)

struct dp {
	struct trainer *t;
	struct hparams hp;
	struct mlp net;
	struct dataset train, val;
	int rank, world, gpu;

	/* nparams + 1 floats: the gradient, then the batch loss. */
	float *grad;
	float *vel;
	float *dev_buf; /* device copy of grad (GPU only) */

	/* Per-step scratch for at most one global batch of rows. */
	float *act[MLP_MAX_LAYERS + 1];
	float *dz, *dprev;
	uint8_t *labels;
	uint32_t *perm;

	/* Where training stands; all of it goes into a checkpoint. */
	int64_t step;	       /* updates applied so far */
	int64_t epoch;	       /* current epoch, 0-based */
	int64_t batch;	       /* next batch within the epoch */
	struct rng epoch_rng;  /* state that drew this epoch's order */
	struct rng next_rng;   /* state after drawing it */
	double epoch_loss;     /* sum of batch losses so far this epoch */
	int64_t epoch_batches; /* how many batches that sum covers */
};

static void die(struct dp *dp, const char *what)
{
	fprintf(stderr, "mlp_dp: rank %d: error: %s\n", dp ? dp->rank : -1,
		what);
	exit(1);
}

static void die_trainer(struct dp *dp, const char *call)
{
	char msg[MLP_ERRLEN];

	snprintf(msg, sizeof(msg), "%s: %s", call, trainer_errmsg(dp->t));
	die(dp, msg);
}

/*
 * The one collective of a step. On the GPU path NCCL wants device memory,
 * so the buffer takes a round trip through it; the arithmetic stays on the
 * CPU (this example has no kernels).
 */
static void allreduce_grad(struct dp *dp, float *buf, size_t n)
{
	if (!dp->gpu) {
		if (trainer_allreduce_avg(dp->t, buf, n))
			die_trainer(dp, "trainer_allreduce_avg");
		return;
	}
#ifdef EXAMPLE_HAVE_CUDA
	if (cudaMemcpy(dp->dev_buf, buf, n * sizeof(float),
		       cudaMemcpyHostToDevice) != cudaSuccess)
		die(dp, "cudaMemcpy to the device failed");
	if (trainer_allreduce_avg(dp->t, dp->dev_buf, n))
		die_trainer(dp, "trainer_allreduce_avg");
	if (cudaMemcpy(buf, dp->dev_buf, n * sizeof(float),
		       cudaMemcpyDeviceToHost) != cudaSuccess)
		die(dp, "cudaMemcpy from the device failed");
#endif
}

/* A small SUM of doubles (validation counts), through the device on GPU. */
static void allreduce_sum(struct dp *dp, double *v, size_t n)
{
	void *buf = v;

#ifdef EXAMPLE_HAVE_CUDA
	if (dp->gpu) {
		buf = dp->dev_buf;
		if (cudaMemcpy(buf, v, n * sizeof(double),
			       cudaMemcpyHostToDevice) != cudaSuccess)
			die(dp, "cudaMemcpy to the device failed");
	}
#endif
	if (trainer_allreduce(dp->t, buf, n, TRAINER_DOUBLE, TRAINER_SUM))
		die_trainer(dp, "trainer_allreduce");
#ifdef EXAMPLE_HAVE_CUDA
	if (dp->gpu && cudaMemcpy(v, buf, n * sizeof(double),
				  cudaMemcpyDeviceToHost) != cudaSuccess)
		die(dp, "cudaMemcpy from the device failed");
#endif
}

static void *xcalloc(struct dp *dp, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die(dp, "out of memory");
	return p;
}

static void alloc_buffers(struct dp *dp)
{
	size_t b = (size_t)dp->hp.batch_size, widest = 0;
	int l;

	dp->grad = xcalloc(dp, dp->net.nparams + 1, sizeof(float));
	dp->vel = xcalloc(dp, dp->net.nparams, sizeof(float));
	for (l = 0; l <= dp->net.nlayers; l++) {
		dp->act[l] = xcalloc(dp, b * (size_t)dp->net.sizes[l],
				     sizeof(float));
		if ((size_t)dp->net.sizes[l] > widest)
			widest = (size_t)dp->net.sizes[l];
	}
	dp->dz = xcalloc(dp, b * widest, sizeof(float));
	dp->dprev = xcalloc(dp, b * widest, sizeof(float));
	dp->labels = xcalloc(dp, b, 1);
	dp->perm = xcalloc(dp, (size_t)dp->train.n, sizeof(uint32_t));
#ifdef EXAMPLE_HAVE_CUDA
	if (dp->gpu &&
	    cudaMalloc((void **)&dp->dev_buf,
		       (dp->net.nparams + 1) * sizeof(float)) != cudaSuccess)
		die(dp, "cudaMalloc failed");
#endif
}

static void free_buffers(struct dp *dp)
{
	int l;

	free(dp->grad);
	free(dp->vel);
	for (l = 0; l <= dp->net.nlayers; l++)
		free(dp->act[l]);
	free(dp->dz);
	free(dp->dprev);
	free(dp->labels);
	free(dp->perm);
#ifdef EXAMPLE_HAVE_CUDA
	if (dp->dev_buf)
		cudaFree(dp->dev_buf);
#endif
}

/* This epoch's order of examples, from the state that starts the epoch. */
static void draw_order(struct dp *dp)
{
	dp->next_rng = dp->epoch_rng;
	rng_permutation(&dp->next_rng, dp->perm, (size_t)dp->train.n);
}

static int64_t batches_per_epoch(const struct dp *dp)
{
	return (dp->train.n + dp->hp.batch_size - 1) / dp->hp.batch_size;
}

/*
 * One SGD step on global batch dp->batch: this rank's rows of it forward
 * and backward, one allreduce, the same update everywhere.
 */
static void train_step(struct dp *dp)
{
	const struct mlp *m = &dp->net;
	int64_t start = dp->batch * dp->hp.batch_size;
	int64_t b = dp->train.n - start < dp->hp.batch_size ?
			    dp->train.n - start :
			    dp->hp.batch_size;
	int64_t lo = start + b * dp->rank / dp->world;
	int64_t hi = start + b * (dp->rank + 1) / dp->world;
	int n = (int)(hi - lo), dim = dp->train.dim,
	    k = mlp_out(m, m->nlayers - 1);
	/*
	 * Each rank scales its sum by world/b, so that the average over the
	 * ranks is the mean over the whole batch even when the shards differ
	 * in size by one.
	 */
	float scale = (float)dp->world / (float)b;
	int64_t i;
	int l;

	for (i = 0; i < n; i++) {
		uint32_t row = dp->perm[lo + i];

		memcpy(dp->act[0] + (size_t)i * dim,
		       dp->train.x + (size_t)row * dim,
		       (size_t)dim * sizeof(float));
		dp->labels[i] = dp->train.y[row];
	}
	for (l = 0; l < m->nlayers; l++)
		mlp_forward(m, m->params, l, dp->act[l], dp->act[l + 1], n);
	memset(dp->grad, 0, (m->nparams + 1) * sizeof(float));
	dp->grad[m->nparams] = (float)mlp_xent(dp->act[m->nlayers], dp->labels,
					       n, k, scale, dp->dz, NULL) *
			       scale;
	for (l = m->nlayers - 1; l >= 0; l--) {
		float *tmp;

		mlp_backward(m, m->params, l, dp->act[l], dp->dz, dp->grad,
			     l > 0 ? dp->dprev : NULL, n);
		tmp = dp->dz;
		dp->dz = dp->dprev;
		dp->dprev = tmp;
	}
	allreduce_grad(dp, dp->grad, m->nparams + 1);
	mlp_sgd(m->params, dp->vel, dp->grad, m->nparams,
		(float)dp->hp.learning_rate, (float)dp->hp.momentum);
	dp->epoch_loss += dp->grad[m->nparams];
	dp->epoch_batches++;
	dp->batch++;
	dp->step++;
}

/* Held-out accuracy: each rank scores a slice, one SUM combines them. */
static double validate(struct dp *dp)
{
	const struct mlp *m = &dp->net;
	int lo = (int)((int64_t)dp->val.n * dp->rank / dp->world);
	int hi = (int)((int64_t)dp->val.n * (dp->rank + 1) / dp->world);
	int chunk = (int)dp->hp.batch_size, r, l,
	    k = mlp_out(m, m->nlayers - 1);
	double sums[2] = { 0.0, 0.0 };

	for (r = lo; r < hi; r += chunk) {
		int n = hi - r < chunk ? hi - r : chunk, right;

		memcpy(dp->act[0], dp->val.x + (size_t)r * dp->val.dim,
		       (size_t)n * dp->val.dim * sizeof(float));
		for (l = 0; l < m->nlayers; l++)
			mlp_forward(m, m->params, l, dp->act[l], dp->act[l + 1],
				    n);
		sums[1] += mlp_xent(dp->act[m->nlayers], dp->val.y + r, n, k,
				    0.0f, NULL, &right);
		sums[0] += right;
	}
	allreduce_sum(dp, sums, 2);
	return sums[0] / dp->val.n;
}

static void save_checkpoint(struct dp *dp)
{
	uint8_t state[STATE_LEN];
	size_t pos = 0;
	int i;
	struct trainer_file files[3];

	memcpy(state, STATE_MAGIC, 8);
	pos = 8;
	put_u64(state, &pos, hparams_hash(&dp->hp, dp->train.n));
	put_u64(state, &pos, (uint64_t)dp->net.nparams);
	put_u64(state, &pos, (uint64_t)dp->step);
	put_u64(state, &pos, (uint64_t)dp->epoch);
	put_u64(state, &pos, (uint64_t)dp->batch);
	put_u64(state, &pos, (uint64_t)dp->epoch_batches);
	for (i = 0; i < 4; i++)
		put_u64(state, &pos, dp->epoch_rng.s[i]);
	put_f64(state, &pos, dp->epoch_loss);
	files[0] = (struct trainer_file){ "state.bin", state, pos };
	files[1] = (struct trainer_file){ "params.bin", dp->net.params,
					  dp->net.nparams * sizeof(float) };
	files[2] = (struct trainer_file){ "velocity.bin", dp->vel,
					  dp->net.nparams * sizeof(float) };
	if (trainer_checkpoint_save(dp->t, dp->step, files, 3))
		die_trainer(dp, "trainer_checkpoint_save");
}

static void load_file(struct dp *dp, int64_t step, const char *name, void *dst,
		      size_t len)
{
	void *data = NULL;
	size_t got = 0;
	char msg[MLP_ERRLEN];

	if (trainer_checkpoint_load(dp->t, step, name, &data, &got))
		die_trainer(dp, "trainer_checkpoint_load");
	if (got != len) {
		snprintf(msg, sizeof(msg),
			 "checkpoint %lld: %s has %zu bytes, want %zu",
			 (long long)step, name, got, len);
		free(data);
		die(dp, msg);
	}
	memcpy(dst, data, len);
	free(data);
}

/*
 * Resumes from the newest step every rank has, so all ranks restart from
 * the same state. A checkpoint of a different configuration is refused
 * rather than silently continued.
 */
static void resume(struct dp *dp)
{
	uint8_t state[STATE_LEN];
	size_t pos = 8;
	int64_t step;
	int rc, i;

	rc = trainer_checkpoint_latest_all(dp->t, &step);
	if (rc == TRAINER_ENOTFOUND)
		return;
	if (rc)
		die_trainer(dp, "trainer_checkpoint_latest_all");
	load_file(dp, step, "state.bin", state, sizeof(state));
	if (memcmp(state, STATE_MAGIC, 8) ||
	    get_u64(state, &pos) != hparams_hash(&dp->hp, dp->train.n) ||
	    get_u64(state, &pos) != dp->net.nparams)
		die(dp, "the checkpoint is of another configuration (layers, "
			"seed, learning rate, momentum, batch size or data); "
			"clear the checkpoint directory to start afresh");
	dp->step = (int64_t)get_u64(state, &pos);
	dp->epoch = (int64_t)get_u64(state, &pos);
	dp->batch = (int64_t)get_u64(state, &pos);
	dp->epoch_batches = (int64_t)get_u64(state, &pos);
	for (i = 0; i < 4; i++)
		dp->epoch_rng.s[i] = get_u64(state, &pos);
	dp->epoch_loss = get_f64(state, &pos);
	if (dp->step != step || dp->batch > batches_per_epoch(dp))
		die(dp, "the checkpoint's state is inconsistent");
	load_file(dp, step, "params.bin", dp->net.params,
		  dp->net.nparams * sizeof(float));
	load_file(dp, step, "velocity.bin", dp->vel,
		  dp->net.nparams * sizeof(float));
	if (dp->rank == 0 && dp->epoch >= dp->hp.epochs)
		printf("resumed from checkpoint step %lld (training is "
		       "finished)\n",
		       (long long)step);
	else if (dp->rank == 0)
		printf("resumed from checkpoint step %lld (epoch %lld, batch "
		       "%lld)\n",
		       (long long)step, (long long)dp->epoch + 1,
		       (long long)dp->batch);
}

/*
 * fail-at-step N: a simulated crash right after step N (and its
 * checkpoint, if one was due), on the job's first attempt only, so that
 * a restarted job gets past it. For testing resumption.
 */
static void maybe_fail(struct dp *dp)
{
	if (!dp->hp.fail_at_step || dp->step != dp->hp.fail_at_step ||
	    trainer_attempt(dp->t) != 1)
		return;
	(void)trainer_barrier(dp->t);
	if (dp->rank == 0)
		printf("simulated failure after step %lld (fail-at-step, "
		       "attempt 1)\n",
		       (long long)dp->step);
	fflush(stdout);
	trainer_free(dp->t);
	exit(1);
}

static void load_data(struct dp *dp, const char *arg_data)
{
	const char *train_dir, *val_dir;
	char err[MLP_ERRLEN];

	data_dirs(dp->t, arg_data, &train_dir, &val_dir);
	if (dataset_load(&dp->train, train_dir, "train",
			 (int)dp->hp.train_samples, err, sizeof(err)) ||
	    dataset_load(&dp->val, val_dir, "t10k", (int)dp->hp.val_samples,
			 err, sizeof(err)))
		die(dp, err);
	if (dp->train.dim != dp->net.sizes[0] || dp->val.dim != dp->train.dim)
		die(dp, "images are not 28x28");
}

int main(int argc, char **argv)
{
	struct dp dp;
	char err[MLP_ERRLEN];
	const char *arg_data;
	int sizes[MLP_MAX_LAYERS + 1], nlayers, gpu = 0;
	double t0 = now_seconds(), acc = 0.0;
	int validated = 0, asked;

	memset(&dp, 0, sizeof(dp));
	dp.rank = 0;
	if (parse_args(argc, argv, &arg_data, err, sizeof(err))) {
		fprintf(stderr, "mlp_dp: %s\n", err);
		return 2;
	}
	/*
	 * The device has to be known before trainer_init(), which sets up
	 * NCCL for it, but trainer_hp_*() only work after it: so SM_HPS is
	 * read for "device" once here.
	 */
	gpu = hps_wants_gpu();
#ifndef EXAMPLE_HAVE_CUDA
	if (gpu) {
		fprintf(stderr, "mlp_dp: error: device=gpu, but this mlp_dp "
				"was built without CUDA (EXAMPLE_HAVE_CUDA)\n");
		return 1;
	}
#endif
	if (trainer_init(&argc, &argv,
			 gpu ? TRAINER_DEVICE_GPU : TRAINER_DEVICE_CPU, &dp.t,
			 err, sizeof(err))) {
		fprintf(stderr, "mlp_dp: error: trainer_init: %s\n", err);
		return 1;
	}
	dp.gpu = gpu;
	dp.rank = trainer_rank(dp.t);
	dp.world = trainer_world_size(dp.t);
	if (hparams_load(dp.t, &dp.hp, err, sizeof(err)))
		die(&dp, err);
	if ((strcmp(dp.hp.device, "gpu") == 0) != gpu)
		die(&dp, "could not tell the device from SM_HPS");
	nlayers = hparams_layers(&dp.hp, sizes);
	if (mlp_init(&dp.net, sizes, nlayers, (uint64_t)dp.hp.seed, err,
		     sizeof(err)))
		die(&dp, err);
	load_data(&dp, arg_data);
	alloc_buffers(&dp);
	/* The data order has its own stream, apart from the weights'. */
	rng_seed(&dp.epoch_rng, (uint64_t)dp.hp.seed ^ 0x5eed0fda7aULL);
	resume(&dp);
	if (dp.rank == 0)
		printf("mlp_dp: %d ranks, %d train / %d held-out images, "
		       "%lld epochs of %lld batches of %lld, %zu parameters\n",
		       dp.world, dp.train.n, dp.val.n, (long long)dp.hp.epochs,
		       (long long)batches_per_epoch(&dp),
		       (long long)dp.hp.batch_size, dp.net.nparams);

	while (dp.epoch < dp.hp.epochs) {
		draw_order(&dp);
		while (dp.batch < batches_per_epoch(&dp)) {
			train_step(&dp);
			/* Before a planned stop the agent asks for one now,
			 * so that the restart redoes no step. */
			asked = trainer_checkpoint_requested(dp.t);
			if (asked < 0)
				die_trainer(&dp, "trainer_checkpoint_requested");
			if (asked || (dp.hp.checkpoint_steps > 0 &&
				      dp.step % dp.hp.checkpoint_steps == 0))
				save_checkpoint(&dp);
			maybe_fail(&dp);
		}
		acc = validate(&dp);
		validated = 1;
		if (dp.rank == 0) {
			trainer_metric(dp.t, "train:loss",
				       dp.epoch_loss / (double)dp.epoch_batches,
				       dp.epoch + 1);
			trainer_metric(dp.t, "validation:accuracy", acc,
				       dp.epoch + 1);
		}
		dp.epoch++;
		dp.batch = 0;
		dp.epoch_loss = 0.0;
		dp.epoch_batches = 0;
		dp.epoch_rng = dp.next_rng;
		if (dp.hp.checkpoint_steps == 0)
			save_checkpoint(&dp);
	}
	/* A resumed run that had already finished still reports. */
	if (!validated)
		acc = validate(&dp);

	if (dp.hp.debug_hash)
		printf("rank %d weights-hash %016llx\n", dp.rank,
		       (unsigned long long)mlp_hash(
			       dp.net.params, dp.net.nparams * sizeof(float),
			       MLP_HASH_INIT));
	if (dp.rank == 0) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/model.bin",
			 trainer_model_dir(dp.t));
		if (mlp_save(&dp.net, dp.net.params, path, err, sizeof(err)))
			die(&dp, err);
		printf("model written to %s (%.1f s)\n", path,
		       now_seconds() - t0);
		printf("final validation:accuracy=%.4f\n", acc);
	}
	fflush(stdout);
	free_buffers(&dp);
	dataset_release(&dp.train);
	dataset_release(&dp.val);
	mlp_release(&dp.net);
	trainer_free(dp.t);
	return 0;
}
