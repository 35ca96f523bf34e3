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

#include "ps.h"

/* ---- main ----------------------------------------------------------- */

static int hp_seconds(struct common *c, const char *key, int def, int *out)
{
	int64_t v = def;
	int rc = trainer_hp_int(c->t, key, &v);

	if ((rc && rc != TRAINER_ENOTFOUND) || v < 1 || v > 86400)
		return ps_fail(c, "hyperparameter '%s': want seconds 1..86400",
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
		return ps_fail(c, "TRAINCTL_CHECKPOINT_DIR is too long");
	if (setenv("TRAINCTL_CHECKPOINT_DIR", dir, 1))
		return ps_fail(c, "setenv: %s", strerror(errno));
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
	if (ps_parse_tf_config(&c) ||
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
		ret = ps_fail(&c,
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
		ret = c.cl.is_server ? ps_server_run(&c) :
				       ps_worker_run(&c, arg_data);
	if (ret)
		fprintf(stderr, "param_server: %s %d: error: %s\n",
			c.cl.is_server ? "ps" : "worker", c.cl.index, c.err);
	fflush(stdout);
	mlp_release(&c.net);
	trainer_free(c.t);
	return ret ? 1 : 0;
}
