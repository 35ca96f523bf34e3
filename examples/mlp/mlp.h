#ifndef EXAMPLES_MLP_H
#define EXAMPLES_MLP_H

/*
 * What the three C examples (mlp_dp, mlp_pipeline, param_server) share: a
 * small multi-layer perceptron on the CPU, Fashion-MNIST in IDX format,
 * a seeded random generator, the hyperparameters and the model file.
 * Each example is its own main.c plus this file, so that the differences
 * between the three programs are only in how they distribute the work.
 *
 * Everything here is deterministic: the same seed gives the same initial
 * weights and the same order of examples, whichever program (and however
 * many processes) trains the network.
 */

#include <stddef.h>
#include <stdint.h>

#include "trainer.h"

#define MLP_MAX_LAYERS 8
#define MLP_MAX_WIDTH 4096
#define MLP_ERRLEN 512

/*
 * A seeded generator (xoshiro256**). The whole state is four words, so a
 * checkpoint can store it and a resumed run draws the same numbers.
 */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* A uniform integer in 0..n-1 (n > 0), without modulo bias. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* A standard normal deviate (Box-Muller). */
double rng_normal(struct rng *r);
/* perm[0..n) = a random permutation of 0..n-1 drawn from r. */
void rng_permutation(struct rng *r, uint32_t *perm, size_t n);

/*
 * The network: nlayers fully connected layers, sizes[0] inputs,
 * sizes[nlayers] classes; ReLU after every layer but the last, softmax
 * cross-entropy on top. All parameters live in one flat vector, layer by
 * layer (W_l row-major, out x in, then b_l), so a layer range is one
 * contiguous slice: that is what gets allreduced, sent between pipeline
 * stages, sharded over parameter servers and written to model.bin.
 */
struct mlp {
	int nlayers;
	int sizes[MLP_MAX_LAYERS + 1];
	/* begin[l] is the offset of layer l's W; begin[nlayers] = nparams. */
	size_t begin[MLP_MAX_LAYERS + 1];
	size_t nparams;
	float *params; /* owned, nparams floats */
};

/*
 * Allocates m->params and draws the initial weights. Layer l's weights
 * come from their own generator, seeded from (seed, l), so a pipeline
 * stage that initialises only its layers gets the same numbers as the
 * whole network. Returns 0, or -1 with a reason in err.
 */
int mlp_init(struct mlp *m, const int *sizes, int nlayers, uint64_t seed,
	     char *err, size_t errlen);
void mlp_release(struct mlp *m);

/* Width of layer l's output / input. */
static inline int mlp_out(const struct mlp *m, int l)
{
	return m->sizes[l + 1];
}

static inline int mlp_in(const struct mlp *m, int l)
{
	return m->sizes[l];
}

/*
 * out[n][out] = act(in[n][in] W^T + b) with the parameters p (laid out as
 * m->params); act is ReLU except for the last layer.
 */
void mlp_forward(const struct mlp *m, const float *p, int l, const float *in,
		 float *out, int n);

/*
 * Backward through layer l for n rows: dz is the gradient of the loss with
 * respect to the layer's pre-activation output. Adds dL/dW and dL/db to
 * grad (laid out as m->params). When din is not NULL it receives the
 * gradient with respect to the previous layer's pre-activation, i.e.
 * (dz W) masked by in > 0, which is right because in is that layer's ReLU
 * output.
 */
void mlp_backward(const struct mlp *m, const float *p, int l, const float *in,
		  const float *dz, float *grad, float *din, int n);

/*
 * Softmax cross-entropy of n rows of logits (k classes). dz receives
 * (softmax - onehot) * scale (NULL: not wanted). Returns the sum of the
 * per-row losses; *correct (may be NULL) counts rows whose arg-max is the
 * label.
 */
double mlp_xent(const float *logits, const uint8_t *labels, int n, int k,
		float scale, float *dz, int *correct);

/* Plain SGD, with momentum when mu > 0: v = mu v + g; w -= lr v. */
void mlp_sgd(float *w, float *v, const float *g, size_t n, float lr, float mu);

/* A 64-bit FNV-1a hash of bytes, for comparing weights across ranks. */
uint64_t mlp_hash(const void *data, size_t len, uint64_t h);
#define MLP_HASH_INIT 0xcbf29ce484222325ULL

/*
 * model.bin: "TCMLP001", u32 nlayers, u32 sizes[nlayers + 1], then the
 * nparams floats; all little-endian. Creates the directory when needed,
 * writes a temporary file and renames it, so a reader never sees half a
 * model. Returns 0 or -1 (err).
 */
int mlp_save(const struct mlp *m, const float *p, const char *path, char *err,
	     size_t errlen);

/*
 * A data set: n rows of dim floats in 0..1 (x) and their labels (y).
 */
struct dataset {
	int n, dim;
	float *x;
	uint8_t *y;
};

/*
 * Reads <dir>/<prefix>-images-idx3-ubyte[.gz] and the matching labels
 * (prefix "train" or "t10k"), at most max_n rows (0: all). Gzip or plain;
 * the header is checked against hard limits before anything is allocated.
 * Returns 0, or -1 with a reason in err.
 */
int dataset_load(struct dataset *d, const char *dir, const char *prefix,
		 int max_n, char *err, size_t errlen);
void dataset_release(struct dataset *d);

/*
 * The hyperparameters the examples understand, with their defaults
 * filled in by hparams_load(). Strings point into t.
 */
struct hparams {
	int64_t epochs;	      /* 3 */
	int64_t batch_size;   /* global batch, 64 */
	double learning_rate; /* 0.1 */
	double momentum;      /* 0 = plain SGD */
	int nhidden;	      /* hidden: "128" or "128,64" */
	int hidden[MLP_MAX_LAYERS - 1];
	int64_t seed;		  /* 1 */
	int64_t train_samples;	  /* 0 = all 60000 */
	int64_t val_samples;	  /* 0 = all 10000 */
	int64_t checkpoint_steps; /* 0 = at the end of every epoch */
	int64_t fail_at_step;	  /* 0 = never; see hparams_load() */
	int64_t micro_batches;	  /* pipeline only, 4 */
	int debug_hash;		  /* print a hash of the final weights */
	const char *device;	  /* "cpu" or "gpu" */
};

/*
 * Reads every hyperparameter above through trainer_hp_*(), checks its
 * range and fills in defaults. Returns 0, or -1 with a reason in err.
 */
int hparams_load(const struct trainer *t, struct hparams *hp, char *err,
		 size_t errlen);

/* Layer sizes for 784 inputs, hp's hidden layers and 10 classes. */
int hparams_layers(const struct hparams *hp, int *sizes);

/*
 * A hash of everything a checkpoint or a peer must agree on: the layer
 * sizes, seed, learning rate, momentum, batch size and data size.
 */
uint64_t hparams_hash(const struct hparams *hp, int ntrain);

/*
 * Where the data is: the job's "train" channel, else the --data DIR
 * argument, else Debian's /usr/share/datasets/fashion-mnist. The held-out
 * set comes from the "validation" or "test" channel when the job has one,
 * else from the same directory. The strings live as long as t and argv.
 */
void data_dirs(const struct trainer *t, const char *arg_data,
	       const char **train_dir, const char **val_dir);

/*
 * The arguments a program accepts: a leading "train" (how trainctl and
 * SageMaker start a file:// image) and "--data DIR". Every other
 * "--key value" pair is a hyperparameter that SageMaker passes on the
 * command line too; trainer_hp_*() read them from SM_HPS, so they are
 * skipped here. Returns 0, or -1 on a malformed command line.
 */
int parse_args(int argc, char **argv, const char **arg_data, char *err,
	       size_t errlen);

/*
 * Whether SM_HPS asks for "device": "gpu". Programs need to know before
 * trainer_init() (which sets up NCCL for the GPU), and trainer_hp_*() only
 * work after it. hparams_load() checks the value properly later.
 */
int hps_wants_gpu(void);

/*
 * Little-endian serialisation for checkpoints and the wire: put_* append
 * at *pos (the caller sized the buffer), get_* read at *pos and advance.
 */
void put_u32(uint8_t *b, size_t *pos, uint32_t v);
void put_u64(uint8_t *b, size_t *pos, uint64_t v);
void put_f64(uint8_t *b, size_t *pos, double v);
uint32_t get_u32(const uint8_t *b, size_t *pos);
uint64_t get_u64(const uint8_t *b, size_t *pos);
double get_f64(const uint8_t *b, size_t *pos);

/* Monotonic seconds, for the timings the examples print. */
double now_seconds(void);

#endif
