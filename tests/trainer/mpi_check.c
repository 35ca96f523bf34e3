/*
 * libtrainer across ranks, run by tests/trainer/test_mpi.sh under mpirun
 * with three ranks. Every rank runs every check; rank 0 prints one TAP
 * line per check ("ok N - ..."), a check passing only when it passed on
 * every rank, then the plan. argv[1] is the number of the first check
 * (the script's own checks come before). TRAINCTL_CHECKPOINT_DIR names an
 * empty directory that all ranks share.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer.h"

static struct trainer *t;
static int num = 1, failed;

static void check(int ok, const char *what)
{
	int64_t v = ok ? 1 : 0;

	/* The verdict is the MIN over ranks, through the library itself. */
	if (trainer_allreduce(t, &v, 1, TRAINER_INT64, TRAINER_MIN))
		v = 0;
	if (!v)
		failed = 1;
	if (trainer_rank(t) == 0) {
		printf("%sok %d - %s\n", v ? "" : "not ", num, what);
		fflush(stdout);
	}
	num++;
}

static int save(int64_t step)
{
	char text[64];
	struct trainer_file f = { "weights.bin", text, 0 };

	f.len = (size_t)snprintf(text, sizeof(text), "rank %d step %" PRId64,
				 trainer_rank(t), step);
	return trainer_checkpoint_save(t, step, &f, 1);
}

static void test_allreduce(void)
{
	int r = trainer_rank(t), n = trainer_world_size(t), i, ok;
	float f[4], fa[3];
	double d[4];
	int64_t v[4];
	enum trainer_op ops[3] = { TRAINER_SUM, TRAINER_MAX, TRAINER_MIN };
	const char *names[3] = { "sum", "max", "min" };
	char what[64];
	int k;

	for (k = 0; k < 3; k++) {
		double want;

		for (i = 0; i < 4; i++) {
			f[i] = (float)(r + i) * 0.5f;
			d[i] = (double)(r * 10 + i) / 4.0;
			v[i] = (int64_t)(r - 1) * (INT64_C(1) << 40) + i;
		}
		ok = !trainer_allreduce(t, f, 4, TRAINER_FLOAT, ops[k]);
		for (i = 0; ok && i < 4; i++) {
			want = k == 0 ? 0.5 * (n * i + n * (n - 1) / 2.0) :
			       k == 1 ? 0.5 * (n - 1 + i) :
					0.5 * i;
			ok = f[i] == (float)want;
		}
		(void)snprintf(what, sizeof(what), "allreduce %s float",
			       names[k]);
		check(ok, what);

		ok = !trainer_allreduce(t, d, 4, TRAINER_DOUBLE, ops[k]);
		for (i = 0; ok && i < 4; i++) {
			want = k == 0 ? (10.0 * n * (n - 1) / 2 + n * i) / 4 :
			       k == 1 ? (10.0 * (n - 1) + i) / 4 :
					i / 4.0;
			ok = d[i] == want;
		}
		(void)snprintf(what, sizeof(what), "allreduce %s double",
			       names[k]);
		check(ok, what);

		ok = !trainer_allreduce(t, v, 4, TRAINER_INT64, ops[k]);
		for (i = 0; ok && i < 4; i++) {
			int64_t big = INT64_C(1) << 40, w;

			w = k == 0 ? big * (n * (n - 1) / 2 - n) + n * i :
			    k == 1 ? big * (n - 2) + i :
				     -big + i;
			ok = v[i] == w;
		}
		(void)snprintf(what, sizeof(what), "allreduce %s int64",
			       names[k]);
		check(ok, what);
	}

	for (i = 0; i < 3; i++)
		fa[i] = (float)(2 * r + i);
	ok = !trainer_allreduce_avg(t, fa, 3);
	for (i = 0; ok && i < 3; i++)
		ok = fa[i] == (float)(n - 1 + i);
	check(ok, "allreduce avg float");
}

static void test_broadcast(void)
{
	int r = trainer_rank(t), ok;
	float f[2] = { (float)r, 1.5f * r };
	double d = r * 3.25;
	int64_t v[3] = { r, -r, INT64_C(1) << (40 + r) };

	ok = !trainer_broadcast(t, f, 2, TRAINER_FLOAT, 1) && f[0] == 1.0f &&
	     f[1] == 1.5f;
	check(ok, "broadcast float from rank 1");
	ok = !trainer_broadcast(t, &d, 1, TRAINER_DOUBLE, 2) && d == 6.5;
	check(ok, "broadcast double from rank 2");
	ok = !trainer_broadcast(t, v, 3, TRAINER_INT64, 0) && v[0] == 0 &&
	     v[1] == 0 && v[2] == INT64_C(1) << 40;
	check(ok, "broadcast int64 from rank 0");
}

static void test_send_recv(void)
{
	int r = trainer_rank(t), n = trainer_world_size(t);
	int next = (r + 1) % n, prev = (r + n - 1) % n, ok = 1, i;
	int64_t out[2] = { r, 100 + r }, in[2] = { -1, -1 };
	size_t big = 1 << 20;
	float *buf;

	/* A ring: rank 0 sends first, the others receive first. */
	if (r == 0) {
		ok = !trainer_send(t, out, 2, TRAINER_INT64, next, 7) &&
		     !trainer_recv(t, in, 2, TRAINER_INT64, prev, 7);
	} else {
		ok = !trainer_recv(t, in, 2, TRAINER_INT64, prev, 7) &&
		     !trainer_send(t, out, 2, TRAINER_INT64, next, 7);
	}
	ok = ok && in[0] == prev && in[1] == 100 + prev;
	check(ok, "send/recv int64 around a ring");

	/* 4 MiB: past any eager limit, so a real rendezvous. */
	buf = calloc(big, sizeof(*buf));
	ok = buf != NULL;
	if (ok && r == 0) {
		for (i = 0; i < (int)big; i++)
			buf[i] = (float)i;
		ok = !trainer_send(t, buf, big, TRAINER_FLOAT, 2, 3);
	} else if (ok && r == 2) {
		ok = !trainer_recv(t, buf, big, TRAINER_FLOAT, 0, 3);
		for (i = 0; ok && i < (int)big; i++)
			ok = buf[i] == (float)i;
	}
	free(buf);
	check(ok, "send/recv 4 MiB float from rank 0 to rank 2");
	ok = trainer_send(t, out, 2, TRAINER_INT64, r, 1) == TRAINER_EINVAL &&
	     trainer_send(t, out, 2, TRAINER_INT64, n, 1) == TRAINER_EINVAL &&
	     trainer_recv(t, in, 2, TRAINER_INT64, next, -1) == TRAINER_EINVAL;
	check(ok, "send/recv reject bad peers and tags");
}

static void test_checkpoints(void)
{
	int r = trainer_rank(t), ok;
	int64_t step = -7;

	trainer_checkpoint_keep(t, 0);
	ok = trainer_checkpoint_latest_all(t, &step) == TRAINER_ENOTFOUND &&
	     step == -7;
	check(ok, "checkpoint_latest_all: none anywhere");

	ok = r != 0 || !save(5);
	ok = ok && trainer_barrier(t) == 0;
	ok = ok && trainer_checkpoint_latest_all(t, &step) == TRAINER_ENOTFOUND;
	check(ok, "checkpoint_latest_all: only rank 0 has one");

	ok = !save(10) && !save(20);
	if (r == 2)
		ok = ok && !save(30);
	ok = ok && !trainer_checkpoint_latest_all(t, &step) && step == 20;
	check(ok, "checkpoint_latest_all: MIN of the ranks' latest");

	/* Rank 1 has 25 but not 20: the newest step all have is 10. */
	if (r == 1) {
		char path[4096];
		char cmd[4200];

		(void)snprintf(path, sizeof(path), "%s/step-0000000020.rank-1",
			       trainer_checkpoint_dir(t));
		(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
		ok = system(cmd) == 0 && !save(25);
	}
	ok = ok && !trainer_checkpoint_latest_all(t, &step) && step == 10;
	check(ok, "checkpoint_latest_all: a step every rank has");
	ok = !trainer_checkpoint_latest(t, &step) && step == (r == 0 ? 20 :
							      r == 1 ? 25 :
								       30);
	check(ok, "checkpoint_latest per rank");
}

int main(int argc, char **argv)
{
	char err[256];
	int64_t sum;
	int ok;

	if (argc > 1)
		num = atoi(argv[1]);
	if (trainer_init(&argc, &argv, TRAINER_DEVICE_CPU, &t, err,
			 sizeof(err))) {
		printf("not ok %d - trainer_init: %s\n", num, err);
		return 1;
	}
	sum = trainer_rank(t);
	ok = trainer_world_size(t) == 3 && trainer_local_size(t) == 3 &&
	     trainer_local_rank(t) == trainer_rank(t) &&
	     !trainer_allreduce(t, &sum, 1, TRAINER_INT64, TRAINER_SUM) &&
	     sum == 3;
	check(ok, "world of 3 ranks from mpirun");
	test_allreduce();
	test_broadcast();
	test_send_recv();
	check(trainer_barrier(t) == 0, "barrier");
	test_checkpoints();
	if (trainer_rank(t) == 0)
		printf("1..%d\n", num - 1);
	trainer_free(t);
	return failed;
}
