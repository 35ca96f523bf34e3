/*
 * The network, the data and the hyperparameters shared by the C examples
 * (see mlp.h). Plain loops, no BLAS: the point of the examples is how the
 * work is distributed, and Fashion-MNIST with one hidden layer of 128
 * trains in seconds on a laptop core anyway.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <jansson.h>
#include <zlib.h>

#include "mlp.h"

#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define IMAGE_SIDE_MAX 64
#define IDX_ROWS_MAX 1000000

/* splitmix64, to spread one seed over the generator's four words. */
static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Reject the top partial bucket so every value is equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;

	do
		x = rng_next(r);
	while (x >= limit);
	return x % n;
}

double rng_normal(struct rng *r)
{
	/* 53 random bits in (0, 1]; never 0, so the log is finite. */
	double u1 = ((double)(rng_next(r) >> 11) + 1.0) / 9007199254740992.0;
	double u2 = (double)(rng_next(r) >> 11) / 9007199254740992.0;

	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void rng_permutation(struct rng *r, uint32_t *perm, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (i = n; i > 1; i--) {
		size_t j = (size_t)rng_below(r, i);
		uint32_t tmp = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = tmp;
	}
}

int mlp_init(struct mlp *m, const int *sizes, int nlayers, uint64_t seed,
	     char *err, size_t errlen)
{
	size_t off = 0;
	int l;

	memset(m, 0, sizeof(*m));
	if (nlayers < 1 || nlayers > MLP_MAX_LAYERS) {
		snprintf(err, errlen, "%d layers: want 1..%d", nlayers,
			 MLP_MAX_LAYERS);
		return -1;
	}
	m->nlayers = nlayers;
	for (l = 0; l <= nlayers; l++) {
		if (sizes[l] < 1 || sizes[l] > MLP_MAX_WIDTH) {
			snprintf(err, errlen, "layer width %d: want 1..%d",
				 sizes[l], MLP_MAX_WIDTH);
			return -1;
		}
		m->sizes[l] = sizes[l];
	}
	for (l = 0; l < nlayers; l++) {
		m->begin[l] = off;
		off += (size_t)sizes[l] * (size_t)sizes[l + 1] +
		       (size_t)sizes[l + 1];
	}
	m->begin[nlayers] = off;
	m->nparams = off;
	m->params = calloc(off, sizeof(float));
	if (!m->params) {
		snprintf(err, errlen, "out of memory for %zu parameters", off);
		return -1;
	}
	for (l = 0; l < nlayers; l++) {
		struct rng r;
		size_t i, nw = (size_t)sizes[l] * (size_t)sizes[l + 1];
		/*
		 * He initialisation for the ReLU layers, variance 1/in for
		 * the logits; biases start at zero (calloc).
		 */
		double sd = sqrt((l + 1 < nlayers ? 2.0 : 1.0) / sizes[l]);

		rng_seed(&r, seed * 1000003ULL + (uint64_t)l + 1);
		for (i = 0; i < nw; i++)
			m->params[m->begin[l] + i] =
				(float)(sd * rng_normal(&r));
	}
	return 0;
}

void mlp_release(struct mlp *m)
{
	free(m->params);
	memset(m, 0, sizeof(*m));
}

void mlp_forward(const struct mlp *m, const float *p, int l, const float *in,
		 float *out, int n)
{
	int ni = mlp_in(m, l), no = mlp_out(m, l);
	const float *w = p + m->begin[l];
	const float *b = w + (size_t)ni * no;
	int relu = l + 1 < m->nlayers;
	int r, o, i;

	for (r = 0; r < n; r++) {
		const float *x = in + (size_t)r * ni;
		float *y = out + (size_t)r * no;

		for (o = 0; o < no; o++) {
			const float *wr = w + (size_t)o * ni;
			float s = b[o];

			for (i = 0; i < ni; i++)
				s += wr[i] * x[i];
			y[o] = relu && s < 0.0f ? 0.0f : s;
		}
	}
}

void mlp_backward(const struct mlp *m, const float *p, int l, const float *in,
		  const float *dz, float *grad, float *din, int n)
{
	int ni = mlp_in(m, l), no = mlp_out(m, l);
	const float *w = p + m->begin[l];
	float *gw = grad + m->begin[l];
	float *gb = gw + (size_t)ni * no;
	int r, o, i;

	for (r = 0; r < n; r++) {
		const float *x = in + (size_t)r * ni;
		const float *d = dz + (size_t)r * no;
		float *dx = din ? din + (size_t)r * ni : NULL;

		if (dx)
			memset(dx, 0, (size_t)ni * sizeof(float));
		for (o = 0; o < no; o++) {
			const float *wr = w + (size_t)o * ni;
			float *gr = gw + (size_t)o * ni;
			float g = d[o];

			/*
			 * dz is exactly zero wherever the ReLU was off
			 * (about half the hidden units): nothing to add.
			 */
			if (g == 0.0f)
				continue;
			gb[o] += g;
			for (i = 0; i < ni; i++)
				gr[i] += g * x[i];
			if (dx)
				for (i = 0; i < ni; i++)
					dx[i] += g * wr[i];
		}
		if (dx)
			for (i = 0; i < ni; i++)
				if (x[i] <= 0.0f)
					dx[i] = 0.0f;
	}
}

double mlp_xent(const float *logits, const uint8_t *labels, int n, int k,
		float scale, float *dz, int *correct)
{
	double loss = 0.0;
	int r, c, right = 0;

	for (r = 0; r < n; r++) {
		const float *z = logits + (size_t)r * k;
		float mx = z[0];
		double sum = 0.0;
		int arg = 0;

		for (c = 1; c < k; c++)
			if (z[c] > mx) {
				mx = z[c];
				arg = c;
			}
		for (c = 0; c < k; c++)
			sum += exp((double)(z[c] - mx));
		loss += log(sum) - (double)(z[labels[r]] - mx);
		right += arg == labels[r];
		if (dz)
			for (c = 0; c < k; c++) {
				double pc = exp((double)(z[c] - mx)) / sum;

				dz[(size_t)r * k + c] =
					(float)(pc - (c == labels[r])) * scale;
			}
	}
	if (correct)
		*correct = right;
	return loss;
}

void mlp_sgd(float *w, float *v, const float *g, size_t n, float lr, float mu)
{
	size_t i;

	if (mu > 0.0f) {
		for (i = 0; i < n; i++) {
			v[i] = mu * v[i] + g[i];
			w[i] -= lr * v[i];
		}
		return;
	}
	for (i = 0; i < n; i++)
		w[i] -= lr * g[i];
}

uint64_t mlp_hash(const void *data, size_t len, uint64_t h)
{
	const uint8_t *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void put_u32(uint8_t *b, size_t *pos, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		b[(*pos)++] = (uint8_t)(v >> (8 * i));
}

void put_u64(uint8_t *b, size_t *pos, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b[(*pos)++] = (uint8_t)(v >> (8 * i));
}

void put_f64(uint8_t *b, size_t *pos, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	put_u64(b, pos, u);
}

uint32_t get_u32(const uint8_t *b, size_t *pos)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v |= (uint32_t)b[(*pos)++] << (8 * i);
	return v;
}

uint64_t get_u64(const uint8_t *b, size_t *pos)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)b[(*pos)++] << (8 * i);
	return v;
}

double get_f64(const uint8_t *b, size_t *pos)
{
	uint64_t u = get_u64(b, pos);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/*
 * mkdir -p of path's directory. libtrainer creates SM_MODEL_DIR only for
 * a program run by hand without any SM_* variable; with just SM_HPS set,
 * ./model may not exist yet.
 */
static int make_parents(const char *path, char *err, size_t errlen)
{
	char dir[4096];
	size_t i, n = strlen(path);

	if (n >= sizeof(dir)) {
		snprintf(err, errlen, "path too long: %s", path);
		return -1;
	}
	memcpy(dir, path, n + 1);
	for (i = 1; i < n; i++) {
		if (dir[i] != '/')
			continue;
		dir[i] = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			snprintf(err, errlen, "mkdir %s: %s", dir,
				 strerror(errno));
			return -1;
		}
		dir[i] = '/';
	}
	return 0;
}

int mlp_save(const struct mlp *m, const float *p, const char *path, char *err,
	     size_t errlen)
{
	char tmp[4096];
	uint8_t head[8 + 4 + 4 * (MLP_MAX_LAYERS + 1)];
	size_t pos = 0, i;
	FILE *f;
	int l, ok;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "path too long: %s", path);
		return -1;
	}
	if (make_parents(path, err, errlen))
		return -1;
	memcpy(head, "TCMLP001", 8);
	pos = 8;
	put_u32(head, &pos, (uint32_t)m->nlayers);
	for (l = 0; l <= m->nlayers; l++)
		put_u32(head, &pos, (uint32_t)m->sizes[l]);
	f = fopen(tmp, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	ok = fwrite(head, 1, pos, f) == pos;
	for (i = 0; ok && i < m->nparams; i++) {
		uint8_t le[4];
		uint32_t u;
		size_t k = 0;

		memcpy(&u, &p[i], sizeof(u));
		put_u32(le, &k, u);
		ok = fwrite(le, 1, 4, f) == 4;
	}
	ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0) {
		snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/* Opens <dir>/<name>.gz, else <dir>/<name> (gzread reads plain files). */
static gzFile open_idx(const char *dir, const char *name, char *path,
		       size_t pathlen)
{
	gzFile g;

	snprintf(path, pathlen, "%s/%s.gz", dir, name);
	if (access(path, R_OK) != 0)
		snprintf(path, pathlen, "%s/%s", dir, name);
	g = gzopen(path, "rb");
	if (g)
		(void)gzbuffer(g, 1 << 17);
	return g;
}

static int read_exact(gzFile g, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
		int got = gzread(g, p, chunk);

		if (got <= 0)
			return -1;
		p += got;
		len -= (size_t)got;
	}
	return 0;
}

static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

/*
 * The IDX headers of the image file (ipath) and the label file (lpath):
 * n images of rows x cols within the limits, and n labels.
 */
static int read_idx_headers(gzFile gi, const char *ipath, gzFile gl,
			    const char *lpath, uint32_t *n, uint32_t *rows,
			    uint32_t *cols, char *err, size_t errlen)
{
	uint8_t head[16];
	uint32_t nl;

	if (read_exact(gi, head, 16) || be32(head) != 0x00000803) {
		snprintf(err, errlen, "%s: not an IDX image file", ipath);
		return -1;
	}
	*n = be32(head + 4);
	*rows = be32(head + 8);
	*cols = be32(head + 12);
	if (*n < 1 || *n > IDX_ROWS_MAX || *rows < 1 ||
	    *rows > IMAGE_SIDE_MAX || *cols < 1 || *cols > IMAGE_SIDE_MAX) {
		snprintf(err, errlen, "%s: %u images of %ux%u is out of range",
			 ipath, *n, *rows, *cols);
		return -1;
	}
	if (read_exact(gl, head, 8) || be32(head) != 0x00000801) {
		snprintf(err, errlen, "%s: not an IDX label file", lpath);
		return -1;
	}
	nl = be32(head + 4);
	if (nl != *n) {
		snprintf(err, errlen, "%s has %u labels for %u images", lpath,
			 nl, *n);
		return -1;
	}
	return 0;
}

/* n labels from the label file (lpath) into y, each a digit 0..9. */
static int read_labels(gzFile gl, const char *lpath, uint8_t *y, uint32_t n,
		       char *err, size_t errlen)
{
	size_t i;

	if (read_exact(gl, y, n)) {
		snprintf(err, errlen, "%s: truncated", lpath);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (y[i] > 9) {
			snprintf(err, errlen, "%s: label %u out of range",
				 lpath, y[i]);
			return -1;
		}
	return 0;
}

int dataset_load(struct dataset *d, const char *dir, const char *prefix,
		 int max_n, char *err, size_t errlen)
{
	char ipath[4096], lpath[4096], name[64];
	uint8_t *pix = NULL;
	gzFile gi = NULL, gl = NULL;
	uint32_t n, rows, cols;
	size_t i, total;
	int ret = -1;

	memset(d, 0, sizeof(*d));
	snprintf(name, sizeof(name), "%s-images-idx3-ubyte", prefix);
	gi = open_idx(dir, name, ipath, sizeof(ipath));
	if (!gi) {
		snprintf(err, errlen, "%s: %s", ipath, strerror(errno));
		goto out;
	}
	snprintf(name, sizeof(name), "%s-labels-idx1-ubyte", prefix);
	gl = open_idx(dir, name, lpath, sizeof(lpath));
	if (!gl) {
		snprintf(err, errlen, "%s: %s", lpath, strerror(errno));
		goto out;
	}
	if (read_idx_headers(gi, ipath, gl, lpath, &n, &rows, &cols, err,
			     errlen))
		goto out;
	if (max_n > 0 && (uint32_t)max_n < n)
		n = (uint32_t)max_n;
	d->n = (int)n;
	d->dim = (int)(rows * cols);
	total = (size_t)n * (size_t)d->dim;
	pix = malloc(total);
	d->x = malloc(total * sizeof(float));
	d->y = malloc(n);
	if (!pix || !d->x || !d->y) {
		snprintf(err, errlen, "out of memory for %u images", n);
		goto out;
	}
	if (read_exact(gi, pix, total)) {
		snprintf(err, errlen, "%s: truncated", ipath);
		goto out;
	}
	if (read_labels(gl, lpath, d->y, n, err, errlen))
		goto out;
	for (i = 0; i < total; i++)
		d->x[i] = (float)pix[i] / 255.0f;
	ret = 0;
out:
	free(pix);
	if (gi)
		gzclose(gi);
	if (gl)
		gzclose(gl);
	if (ret)
		dataset_release(d);
	return ret;
}

void dataset_release(struct dataset *d)
{
	free(d->x);
	free(d->y);
	memset(d, 0, sizeof(*d));
}

/*
 * One integer hyperparameter: a missing key keeps the default, a bad
 * value or one outside lo..hi is an error naming the key.
 */
static int hp_int(const struct trainer *t, const char *key, int64_t def,
		  int64_t lo, int64_t hi, int64_t *v, char *err, size_t errlen)
{
	int rc;

	*v = def;
	rc = trainer_hp_int(t, key, v);
	if (rc && rc != TRAINER_ENOTFOUND) {
		snprintf(err, errlen, "%s", trainer_errmsg(t));
		return -1;
	}
	if (*v < lo || *v > hi) {
		snprintf(err, errlen,
			 "hyperparameter '%s' = %lld: want %lld..%lld", key,
			 (long long)*v, (long long)lo, (long long)hi);
		return -1;
	}
	return 0;
}

static int hp_double(const struct trainer *t, const char *key, double def,
		     double lo, double hi, double *v, char *err, size_t errlen)
{
	int rc;

	*v = def;
	rc = trainer_hp_double(t, key, v);
	if (rc && rc != TRAINER_ENOTFOUND) {
		snprintf(err, errlen, "%s", trainer_errmsg(t));
		return -1;
	}
	if (!(*v >= lo && *v <= hi)) {
		snprintf(err, errlen, "hyperparameter '%s' = %g: want %g..%g",
			 key, *v, lo, hi);
		return -1;
	}
	return 0;
}

/* "128" or "128,64": the hidden layer widths. */
static int parse_hidden(const char *s, struct hparams *hp, char *err,
			size_t errlen)
{
	const char *p = s;

	hp->nhidden = 0;
	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v < 1 || v > MLP_MAX_WIDTH ||
		    hp->nhidden == MLP_MAX_LAYERS - 1 ||
		    (*end && *end != ',')) {
			snprintf(err, errlen,
				 "hyperparameter 'hidden' = '%s': want up to "
				 "%d widths 1..%d separated by commas",
				 s, MLP_MAX_LAYERS - 1, MLP_MAX_WIDTH);
			return -1;
		}
		hp->hidden[hp->nhidden++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int hparams_load(const struct trainer *t, struct hparams *hp, char *err,
		 size_t errlen)
{
	const char *hidden = "128";
	int64_t h;
	int rc;

	memset(hp, 0, sizeof(*hp));
	if (hp_int(t, "epochs", 3, 1, 100000, &hp->epochs, err, errlen) ||
	    hp_int(t, "batch-size", 64, 1, 65536, &hp->batch_size, err,
		   errlen) ||
	    hp_double(t, "learning-rate", 0.1, 0.0, 100.0, &hp->learning_rate,
		      err, errlen) ||
	    hp_double(t, "momentum", 0.0, 0.0, 0.999, &hp->momentum, err,
		      errlen) ||
	    hp_int(t, "seed", 1, 0, INT64_MAX, &hp->seed, err, errlen) ||
	    hp_int(t, "train-samples", 0, 0, IDX_ROWS_MAX, &hp->train_samples,
		   err, errlen) ||
	    hp_int(t, "val-samples", 0, 0, IDX_ROWS_MAX, &hp->val_samples, err,
		   errlen) ||
	    hp_int(t, "checkpoint-steps", 0, 0, INT64_MAX,
		   &hp->checkpoint_steps, err, errlen) ||
	    hp_int(t, "fail-at-step", 0, 0, INT64_MAX, &hp->fail_at_step, err,
		   errlen) ||
	    hp_int(t, "micro-batches", 4, 1, 1024, &hp->micro_batches, err,
		   errlen))
		return -1;
	rc = trainer_hp_bool(t, "debug-hash", &hp->debug_hash);
	if (rc && rc != TRAINER_ENOTFOUND) {
		snprintf(err, errlen, "%s", trainer_errmsg(t));
		return -1;
	}
	hp->device = "cpu";
	rc = trainer_hp_string(t, "device", &hp->device);
	if ((rc && rc != TRAINER_ENOTFOUND) ||
	    (strcmp(hp->device, "cpu") && strcmp(hp->device, "gpu"))) {
		snprintf(err, errlen,
			 "hyperparameter 'device': want \"cpu\" or \"gpu\"");
		return -1;
	}
	/* SM_HPS may carry hidden as the number 128 or the string "128,64". */
	rc = trainer_hp_string(t, "hidden", &hidden);
	if (rc == TRAINER_EINVAL) {
		h = 0;
		if (trainer_hp_int(t, "hidden", &h) || h < 1 ||
		    h > MLP_MAX_WIDTH) {
			snprintf(err, errlen,
				 "hyperparameter 'hidden': want widths like "
				 "\"128\" or \"128,64\"");
			return -1;
		}
		hp->nhidden = 1;
		hp->hidden[0] = (int)h;
		return 0;
	}
	return parse_hidden(hidden, hp, err, errlen);
}

int hparams_layers(const struct hparams *hp, int *sizes)
{
	int i;

	sizes[0] = 28 * 28;
	for (i = 0; i < hp->nhidden; i++)
		sizes[i + 1] = hp->hidden[i];
	sizes[hp->nhidden + 1] = 10;
	return hp->nhidden + 1;
}

uint64_t hparams_hash(const struct hparams *hp, int ntrain)
{
	uint8_t b[8 * (MLP_MAX_LAYERS + 8)];
	size_t pos = 0;
	int i;

	put_u64(b, &pos, (uint64_t)hp->nhidden);
	for (i = 0; i < hp->nhidden; i++)
		put_u64(b, &pos, (uint64_t)hp->hidden[i]);
	put_u64(b, &pos, (uint64_t)hp->seed);
	put_f64(b, &pos, hp->learning_rate);
	put_f64(b, &pos, hp->momentum);
	put_u64(b, &pos, (uint64_t)hp->batch_size);
	put_u64(b, &pos, (uint64_t)ntrain);
	return mlp_hash(b, pos, MLP_HASH_INIT);
}

void data_dirs(const struct trainer *t, const char *arg_data,
	       const char **train_dir, const char **val_dir)
{
	const char *d = trainer_channel_dir(t, "train");
	const char *v;

	if (!d)
		d = arg_data ? arg_data : DEFAULT_DATA_DIR;
	v = trainer_channel_dir(t, "validation");
	if (!v)
		v = trainer_channel_dir(t, "test");
	*train_dir = d;
	*val_dir = v ? v : d;
}

int parse_args(int argc, char **argv, const char **arg_data, char *err,
	       size_t errlen)
{
	int i = 1;

	*arg_data = NULL;
	if (i < argc && !strcmp(argv[i], "train"))
		i++;
	/* The rest come in pairs: "--key value". */
	for (; i < argc; i += 2) {
		if (strncmp(argv[i], "--", 2) || !argv[i][2] || i + 1 >= argc) {
			snprintf(err, errlen,
				 "unexpected argument '%s' (want [train] "
				 "[--data DIR] [--key value ...])",
				 argv[i]);
			return -1;
		}
		if (!strcmp(argv[i], "--data"))
			*arg_data = argv[i + 1];
	}
	return 0;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int hps_wants_gpu(void)
{
	const char *env = getenv("SM_HPS");
	json_t *root, *v;
	int gpu;

	if (!env)
		return 0;
	root = json_loads(env, 0, NULL);
	v = json_object_get(root, "device");
	gpu = json_is_string(v) && !strcmp(json_string_value(v), "gpu");
	json_decref(root);
	return gpu;
}
