/*
 * The GPU probe of test_gpu_containers.sh, run as `train` in a container:
 * loads the driver's libcuda.so.1 (which the host's CDI spec mounts into
 * the container), names every device it sees, allocates and frees memory
 * on the first, and writes what it found to /opt/ml/model/gpu.txt. Exits
 * 1 when the driver cannot be loaded or sees no device.
 *
 * Built with no CUDA headers: the few driver API entry points it calls are
 * declared here as the driver exports them (cuda.h, CUDA 12/13).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define SYM(h, name, type) ((type)dlsym((h), (name)))

int main(void)
{
	CUresult (*cu_init)(unsigned);
	CUresult (*dev_count)(int *);
	CUresult (*dev_get)(CUdevice *, int);
	CUresult (*dev_name)(char *, int, CUdevice);
	CUresult (*total_mem)(size_t *, CUdevice);
	CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	FILE *out = fopen("/opt/ml/model/gpu.txt", "w");
	int n = 0, i, rc;

	if (!h) {
		printf("gpucheck: cannot load libcuda.so.1: %s\n", dlerror());
		return 1;
	}
	cu_init = SYM(h, "cuInit", CUresult(*)(unsigned));
	dev_count = SYM(h, "cuDeviceGetCount", CUresult(*)(int *));
	dev_get = SYM(h, "cuDeviceGet", CUresult(*)(CUdevice *, int));
	dev_name = SYM(h, "cuDeviceGetName", CUresult(*)(char *, int, CUdevice));
	total_mem = SYM(h, "cuDeviceTotalMem_v2", CUresult(*)(size_t *, CUdevice));
	ctx_create = SYM(h, "cuCtxCreate_v2", CUresult(*)(CUcontext *, unsigned, CUdevice));
	mem_alloc = SYM(h, "cuMemAlloc_v2", CUresult(*)(CUdeviceptr *, size_t));
	mem_free = SYM(h, "cuMemFree_v2", CUresult(*)(CUdeviceptr));
	if (!cu_init || !dev_count || !dev_get || !dev_name || !total_mem ||
	    !ctx_create || !mem_alloc || !mem_free) {
		printf("gpucheck: libcuda.so.1 lacks a driver API entry point\n");
		return 1;
	}
	rc = cu_init(0);
	if (rc || dev_count(&n) || n < 1) {
		printf("gpucheck: cuInit %d, %d devices\n", rc, n);
		return 1;
	}
	for (i = 0; i < n; i++) {
		CUdevice d;
		char name[256] = "";
		size_t mem = 0;

		(void)dev_get(&d, i);
		(void)dev_name(name, sizeof(name), d);
		(void)total_mem(&mem, d);
		printf("gpu %d: %s, %zu MiB\n", i, name, mem >> 20);
		if (out)
			fprintf(out, "gpu %d: %s, %zu MiB\n", i, name, mem >> 20);
	}
	{
		CUdevice d;
		CUcontext c;
		CUdeviceptr p = 0;

		(void)dev_get(&d, 0);
		rc = ctx_create(&c, 0, d);
		if (!rc)
			rc = mem_alloc(&p, 256u << 20);
		if (!rc)
			rc = mem_free(p);
		printf("gpucheck: 256 MiB allocated and freed on gpu 0: %s\n",
		       rc ? "failed" : "ok");
		if (out)
			fprintf(out, "alloc %s\n", rc ? "failed" : "ok");
	}
	if (out)
		fclose(out);
	return 0;
}
