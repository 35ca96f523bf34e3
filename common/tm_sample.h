#ifndef COMMON_TM_SAMPLE_H
#define COMMON_TM_SAMPLE_H

/*
 * Telemetry samples as plain data: what agent/ gathers on a host, api/
 * puts on the wire (api/telemetry.h), the controller serves and db/
 * stores (db/telemetry.h).
 */
#include <stddef.h>
#include <stdint.h>

/* One GPU as NVML reports it. */
struct tm_gpu_sample {
	int index;
	double util_percent; /* 0..100: time a kernel ran */
	int64_t mem_used;    /* bytes */
	int64_t mem_total;   /* bytes */
};

/*
 * One assignment's process trees (the ranks of a job on this host and
 * their descendants) over the last interval.
 */
struct tm_rank_sample {
	char *job;
	char *job_uid; /* may be NULL */
	int attempt;
	char *algo;
	double cpu_percent; /* of one core: 250 = two and a half cores */
	int64_t rss_bytes;
	int procs; /* processes counted */
	/*
	 * The scheduler's view of the same threads (/proc/<pid>/task/<tid>/
	 * schedstat), cumulative since they started: nanoseconds on a CPU
	 * and waiting on a run queue for one (a CPU quota, a noisy
	 * neighbour). -1: unknown (an older agent). A thread that ended
	 * takes its figures along, so both may go down.
	 */
	int64_t run_ns;
	int64_t wait_ns;
	/* The index among the assignment's ranks of the one whose threads
	 * ran and waited the most; -1: unknown. */
	int top_rank;
};

/* One sample of a host. Counters are cumulative since the host booted. */
struct tm_host_sample {
	int64_t ts_ms;	    /* wall clock, epoch ms */
	double cpu_percent; /* of all cores over the last interval, 0..100 */
	int cpus;	    /* online CPUs */
	int64_t mem_used;   /* bytes: MemTotal - MemAvailable */
	int64_t mem_total;  /* bytes */
	int64_t mem_limit;  /* the agent's cgroup v2 memory.max; -1: none */
	int64_t disk_read;  /* bytes read from block devices */
	int64_t disk_write; /* bytes written to block devices */
	int64_t net_rx;	    /* bytes received, loopback excluded */
	int64_t net_tx;	    /* bytes sent, loopback excluded */
	int64_t fs_used;    /* bytes used on the work directory's disk */
	int64_t fs_total;   /* bytes of that disk */
	struct tm_gpu_sample *gpus;
	size_t n_gpus;
	struct tm_rank_sample *ranks;
	size_t n_ranks;
};

/* Frees what s owns and zeroes it. */
void tm_host_sample_release(struct tm_host_sample *s);

/* A deep copy of src into dst. */
void tm_host_sample_copy(struct tm_host_sample *dst,
			 const struct tm_host_sample *src);

/*
 * Derived figures, as SageMaker publishes its host metrics: memory used
 * of the smaller of the limit and the total (0..100), disk space used
 * (0..100), the sum of every GPU's utilisation and of every GPU's memory
 * use (each 0..100 times the GPUs), and the sum of every core's use
 * (0..100 times the CPUs).
 */
double tm_host_sample_mem_percent(const struct tm_host_sample *s);
double tm_host_sample_disk_percent(const struct tm_host_sample *s);
double tm_host_sample_gpu_percent(const struct tm_host_sample *s);
double tm_host_sample_gpu_mem_percent(const struct tm_host_sample *s);
double tm_host_sample_cores_percent(const struct tm_host_sample *s);

#endif
