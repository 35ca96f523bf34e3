/*
 * The lifecycle of a struct trainer: trainer_init() reads the environment,
 * then brings up MPI and, for TRAINER_DEVICE_GPU, NCCL; trainer_free()
 * takes them down in the opposite order.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/internal.h"
#include "common/banned.h"

static void copy_errmsg(char *errmsg, size_t errlen, const char *msg)
{
	if (!errmsg || errlen == 0)
		return;
	(void)snprintf(errmsg, errlen, "%s", msg);
}

int trainer_init(int *argc, char ***argv, enum trainer_device device,
		 struct trainer **out, char *errmsg, size_t errlen)
{
	struct trainer *t;
	int ret;

	if (out)
		*out = NULL;
	if (!out) {
		copy_errmsg(errmsg, errlen, "trainer_init: out is NULL");
		return TRAINER_EINVAL;
	}
	if (device != TRAINER_DEVICE_CPU && device != TRAINER_DEVICE_GPU) {
		copy_errmsg(errmsg, errlen, "trainer_init: unknown device");
		return TRAINER_EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		copy_errmsg(errmsg, errlen, "out of memory");
		return TRAINER_ENOMEM;
	}
	t->err = calloc(1, TRAINER__ERRLEN);
	if (!t->err) {
		free(t);
		copy_errmsg(errmsg, errlen, "out of memory");
		return TRAINER_ENOMEM;
	}
	t->device = device;
	t->keep = TRAINER__KEEP_DEFAULT;

	ret = trainer__env_load(t);
	if (ret)
		goto fail;
	ret = trainer__kv_global_init(t);
	if (ret)
		goto fail;
	ret = trainer__mpi_init(t, argc, argv);
	if (ret)
		goto fail;
	if (device == TRAINER_DEVICE_GPU) {
		ret = trainer__nccl_init(t);
		if (ret)
			goto fail;
	}
	t->err[0] = '\0';
	*out = t;
	return 0;

fail:
	copy_errmsg(errmsg, errlen, t->err);
	trainer_free(t);
	return ret;
}

void trainer_free(struct trainer *t)
{
	if (!t)
		return;
	trainer__nccl_free(t);
	trainer__mpi_finalize(t);
	trainer__kv_global_cleanup(t);
	trainer__env_release(t);
	free(t->err);
	free(t);
}

const char *trainer_errmsg(const struct trainer *t)
{
	if (!t || !t->err)
		return "";
	return t->err;
}

int trainer_rank(const struct trainer *t)
{
	return t ? t->rank : 0;
}

int trainer_world_size(const struct trainer *t)
{
	return t ? t->world : 1;
}

int trainer_local_rank(const struct trainer *t)
{
	return t ? t->local_rank : 0;
}

int trainer_local_size(const struct trainer *t)
{
	return t ? t->local_size : 1;
}

int trainer_attempt(const struct trainer *t)
{
	return t ? t->attempt : 1;
}
