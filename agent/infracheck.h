#ifndef AGENT_INFRACHECK_H
#define AGENT_INFRACHECK_H

#include <stdint.h>

#include "api/agent_proto.h"
#include "common/buf.h"

/*
 * Infrastructure checks before an assignment's program starts
 * (InfraCheckConfig.EnableInfraCheck or the controller's --infra-check;
 * docs/distributed.md, "Infrastructure checks"): the free space of the
 * job's work and checkpoint folders and of /dev/shm, the host's clock
 * against the controller's, and the GPUs through NVML when there are any.
 */

#define AGENT_INFRA_DIRS 3

/* What was measured on the host; agent_infra_measure() fills it. */
struct agent_infra_facts {
	const char *dir_name[AGENT_INFRA_DIRS]; /* NULL: not measured */
	int64_t free_mb[AGENT_INFRA_DIRS];	/* -1: statvfs failed */
	int dir_is_shm[AGENT_INFRA_DIRS];	/* compared with min_shm_mb */
	int64_t skew_ms;			/* host clock - controller's */
	int gpus_expected;			/* as registered */
	int gpus_seen;				/* -1: NVML not there */
	unsigned long long ecc_errors;		/* uncorrected, volatile */
	int pending_retire;			/* a page awaits retirement */
};

/*
 * The verdict on facts under the thresholds of c: 0 when every check
 * passes, else 1 with why saying the first failure ("/dev/shm has 3 MiB
 * free, needs 64 MiB"). Pure.
 */
int agent_infra_judge(const struct agent_infra_facts *f,
		      const struct api_infra_check *c, struct buf *why);

/*
 * Measures the host: the folders work_dir and ckpt_dir (NULL: none) and
 * /dev/shm, the clock offset received_ms - c->controller_ms (received_ms:
 * the agent's clock when the work answer arrived), and the GPUs when
 * libnvidia-ml.so.1 is there (gpus_expected of them).
 */
void agent_infra_measure(struct agent_infra_facts *f,
			 const struct api_infra_check *c, const char *work_dir,
			 const char *ckpt_dir, int64_t received_ms,
			 int gpus_expected);

/*
 * Whether a failure to prepare on this host is the host's: the
 * filesystem of dir is read-only or has less than AGENT_DISK_FULL_BYTES
 * free (avail_bytes, rdonly: what statvfs says). Then why says so ("the
 * disk of the work folder is full: 12 KiB free"). Pure.
 */
#define AGENT_DISK_FULL_BYTES (1ULL << 20)

int agent_infra_disk_judge(unsigned long long avail_bytes, int rdonly,
			   struct buf *why);

/* agent_infra_disk_judge() on what statvfs says of dir (0: unreadable). */
int agent_infra_disk_fault(const char *dir, struct buf *why);

#endif
