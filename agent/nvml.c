/*
 * GPU utilisation and memory through NVML, loaded with dlopen() at run
 * time: the agent never links libnvidia-ml, so one binary serves hosts
 * with and without NVIDIA's driver. Only the few entry points below are
 * used; their types are NVML's stable C ABI (nvml.h of the CUDA toolkit:
 * nvmlReturn_t is an int, 0 is NVML_SUCCESS, a device is an opaque
 * pointer), declared here so that building needs no CUDA headers.
 */
#define LOG_TAG "agent"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "agent/telemetry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

typedef int nvml_ret;
typedef void *nvml_device;

struct nvml_utilization {
	unsigned int gpu;    /* percent of time a kernel ran */
	unsigned int memory; /* percent of time memory was read or written */
};

struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct agent_nvml {
	void *lib;
	nvml_ret (*shutdown)(void);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*handle)(unsigned int, nvml_device *);
	nvml_ret (*util)(nvml_device, struct nvml_utilization *);
	nvml_ret (*memory)(nvml_device, struct nvml_memory *);
	const char *(*error_string)(nvml_ret);
	/* Optional (NULL: that check is left out). */
	nvml_ret (*ecc)(nvml_device, int, int, unsigned long long *);
	nvml_ret (*pending)(nvml_device, int *);
};

/* dlsym() returns an object pointer; POSIX guarantees the conversion. */
static int sym(void *lib, const char *name, void *fn_out)
{
	void *p = dlsym(lib, name);

	memcpy(fn_out, &p, sizeof(p));
	return p ? 0 : -1;
}

struct agent_nvml *agent_nvml_open(struct buf *err)
{
	struct agent_nvml *n;
	nvml_ret (*init)(void) = NULL;
	unsigned int count = 0;
	nvml_ret r;
	void *lib;

	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		(void)buf_adds(err, "libnvidia-ml.so.1 not found");
		return NULL;
	}
	n = xcalloc(1, sizeof(*n));
	n->lib = lib;
	if (sym(lib, "nvmlInit_v2", &init) ||
	    sym(lib, "nvmlShutdown", &n->shutdown) ||
	    sym(lib, "nvmlDeviceGetCount_v2", &n->count) ||
	    sym(lib, "nvmlDeviceGetHandleByIndex_v2", &n->handle) ||
	    sym(lib, "nvmlDeviceGetUtilizationRates", &n->util) ||
	    sym(lib, "nvmlDeviceGetMemoryInfo", &n->memory)) {
		(void)buf_adds(err, "libnvidia-ml.so.1 lacks an entry point");
		goto fail;
	}
	(void)sym(lib, "nvmlErrorString", &n->error_string);
	(void)sym(lib, "nvmlDeviceGetTotalEccErrors", &n->ecc);
	(void)sym(lib, "nvmlDeviceGetRetiredPagesPendingStatus", &n->pending);
	r = init();
	if (r) {
		(void)buf_addf(err, "nvmlInit: %s",
			       n->error_string ? n->error_string(r) : "failed");
		goto fail;
	}
	r = n->count(&count);
	if (r || !count) {
		(void)buf_adds(err, r ? "nvmlDeviceGetCount failed" :
					"NVML sees no GPU");
		n->shutdown();
		goto fail;
	}
	return n;
fail:
	dlclose(lib);
	free(n);
	return NULL;
}

size_t agent_nvml_sample(struct agent_nvml *n, struct tm_gpu_sample *gpus,
			 size_t max)
{
	struct nvml_utilization u;
	struct nvml_memory m;
	unsigned int count = 0, i;
	nvml_device d;
	size_t k = 0;

	if (n->count(&count))
		return 0;
	for (i = 0; i < count && i < max; i++) {
		if (n->handle(i, &d) || n->util(d, &u) || n->memory(d, &m))
			continue;
		gpus[k].index = (int)i;
		gpus[k].util_percent = u.gpu > 100 ? 100.0 : (double)u.gpu;
		gpus[k].mem_used = (int64_t)m.used;
		gpus[k].mem_total = (int64_t)m.total;
		k++;
	}
	return k;
}

/* NVML's nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlEnableState_t. */
#define NVML_UNCORRECTED 1
#define NVML_VOLATILE 0
#define NVML_ENABLED 1

void agent_nvml_health(struct agent_nvml *n, int *count,
		       unsigned long long *ecc, int *pending)
{
	unsigned long long e;
	unsigned int c = 0, i;
	nvml_device d;
	int p;

	*ecc = 0;
	*pending = 0;
	*count = n->count(&c) ? 0 : (int)c;
	for (i = 0; i < c; i++) {
		if (n->handle(i, &d))
			continue;
		/* A GPU without ECC answers "not supported": nothing. */
		e = 0;
		if (n->ecc && !n->ecc(d, NVML_UNCORRECTED, NVML_VOLATILE, &e))
			*ecc += e;
		p = 0;
		if (n->pending && !n->pending(d, &p) && p == NVML_ENABLED)
			*pending = 1;
	}
}

void agent_nvml_close(struct agent_nvml *n)
{
	if (!n)
		return;
	n->shutdown();
	dlclose(n->lib);
	free(n);
}
