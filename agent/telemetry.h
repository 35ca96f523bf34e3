#ifndef AGENT_TELEMETRY_H
#define AGENT_TELEMETRY_H

/*
 * Host and rank telemetry (docs/agent-protocol.md, "Telemetry"): every
 * interval the agent reads /proc, the cgroup v2 files and, when the host
 * has libnvidia-ml.so.1, NVML, and queues a sample that the next status
 * heartbeat carries. The parsers take the files' text, so tests feed them
 * sample files.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/telemetry.h"

/* Default sampling interval; --telemetry-ms changes it, 0 turns it off. */
#define AGENT_TELEMETRY_MS 5000

/* /proc/stat's first line, in clock ticks. */
struct agent_cpu_times {
	uint64_t total;
	uint64_t idle; /* idle + iowait */
};

/*
 * /proc/stat: the aggregate "cpu" line into *t and the number of "cpuN"
 * lines into *cpus. Returns 0 or ERR_INVALID (no cpu line).
 */
int agent_tm_parse_stat(const char *text, struct agent_cpu_times *t, int *cpus);

/* /proc/meminfo: MemTotal and MemAvailable in bytes. 0 or ERR_INVALID. */
int agent_tm_parse_meminfo(const char *text, int64_t *total,
			   int64_t *available);

/*
 * /proc/diskstats: bytes read and written (sectors of 512 bytes) summed
 * over the devices is_disk accepts (whole disks, not their partitions).
 * 0 or ERR_INVALID.
 */
int agent_tm_parse_diskstats(const char *text,
			     int (*is_disk)(const char *name, void *arg),
			     void *arg, int64_t *read, int64_t *write);

/* /proc/net/dev: bytes received and sent, loopback excluded. */
int agent_tm_parse_net_dev(const char *text, int64_t *rx, int64_t *tx);

/* The members of /proc/<pid>/stat that telemetry uses. */
struct agent_pid_stat {
	pid_t pid;
	pid_t pgrp;
	pid_t session;
	uint64_t ticks; /* utime + stime + cutime + cstime */
	int64_t rss_pages;
};

/* /proc/<pid>/stat (the command may hold spaces and ')'). 0/ERR_INVALID. */
int agent_tm_parse_pid_stat(const char *text, struct agent_pid_stat *st);

/*
 * /proc/<pid>/task/<tid>/schedstat: nanoseconds the thread ran on a CPU
 * and waited on a run queue for one. 0 or ERR_INVALID.
 */
int agent_tm_parse_schedstat(const char *text, int64_t *run_ns,
			     int64_t *wait_ns);

/* A cgroup v2 memory.max: bytes, or -1 for "max". 0 or ERR_INVALID. */
int agent_tm_parse_cgroup_max(const char *text, int64_t *out);

/*
 * /proc/self/cgroup: the cgroup v2 path ("0::/a/b" -> "/a/b") into out.
 * 0, or ERR_NOTFOUND (cgroup v1 only).
 */
int agent_tm_parse_cgroup_path(const char *text, struct buf *out);

/* --- nvml.c: GPUs through libnvidia-ml.so.1, loaded at run time --------- */

struct agent_nvml;

/*
 * Loads NVML and initialises it. Returns NULL when the host has no NVML
 * library or no GPU (why, for the log, in err).
 */
struct agent_nvml *agent_nvml_open(struct buf *err);
/*
 * Fills gpus[0..max) with every GPU's utilisation and memory; returns how
 * many (a GPU NVML cannot read is left out).
 */
size_t agent_nvml_sample(struct agent_nvml *n, struct tm_gpu_sample *gpus,
			 size_t max);
/*
 * For the infrastructure checks (infracheck.c): how many GPUs NVML sees,
 * their uncorrected ECC errors since the driver loaded, and whether any
 * has memory pages pending retirement.
 */
void agent_nvml_health(struct agent_nvml *n, int *count,
		       unsigned long long *ecc, int *pending);
void agent_nvml_close(struct agent_nvml *n);

/* --- the sampler ------------------------------------------------------- */

/* A process tree's ticks at the last sample, per assignment. */
struct agent_tm_prev {
	uint64_t ticks;
	int64_t mono_ms; /* 0: none yet */
};

struct agent_telemetry {
	int64_t interval_ms; /* 0: off */
	int64_t next_at;     /* monotonic */
	char *proc;	     /* "/proc" */
	char *sys;	     /* "/sys" */
	char *fs_path;	     /* the disk whose space is reported */
	char *memory_max;    /* the agent's cgroup memory.max, or NULL */
	long clk_tck;
	long page_size;
	struct agent_cpu_times prev;
	int have_prev;
	struct agent_nvml *nvml;
	int nvml_tried;
	/* Samples not yet delivered, oldest first; the first inflight of
	 * them ride on the status POST in flight. */
	struct tm_host_sample queue[API_TELEMETRY_MAX_SAMPLES];
	size_t n;
	size_t inflight;
};

struct agent_ctx;

void agent_telemetry_init(struct agent_ctx *ctx);
/* Takes a sample when one is due (every turn). */
void agent_telemetry_tick(struct agent_ctx *ctx, int64_t now);
/* The controller asked for another interval (0: off). */
void agent_telemetry_set_interval(struct agent_ctx *ctx, int64_t ms);
/* When the next sample is due (INT64_MAX: off). */
int64_t agent_telemetry_next(struct agent_ctx *ctx);
/*
 * Takes one sample now into s (the caller releases it). Returns 0 or
 * ERR_IO when /proc could not be read.
 */
int agent_telemetry_sample(struct agent_ctx *ctx, int64_t now,
			   struct tm_host_sample *s);
/* The queued samples for a status body (borrowed), marked in flight. */
void agent_telemetry_take(struct agent_ctx *ctx,
			  struct tm_host_sample **samples, size_t *n);
/* The status in flight was taken (drop its samples) or not (keep them). */
void agent_telemetry_done(struct agent_ctx *ctx, int ok);
void agent_telemetry_release(struct agent_ctx *ctx);

#endif
