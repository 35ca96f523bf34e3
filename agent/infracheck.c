#define LOG_TAG "agent"

#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "agent/infracheck.h"
#include "agent/telemetry.h"
#include "common/buf.h"
#include "common/banned.h"

/* Free space of path in MiB, -1 when it cannot be read. */
static int64_t free_mb(const char *path)
{
	struct statvfs st;

	if (statvfs(path, &st))
		return -1;
	return (int64_t)((unsigned long long)st.f_bavail * st.f_frsize >> 20);
}

static int judge_dirs(const struct agent_infra_facts *f,
		      const struct api_infra_check *c, struct buf *why)
{
	size_t i;

	for (i = 0; i < AGENT_INFRA_DIRS; i++) {
		int64_t need = f->dir_is_shm[i] ? c->min_shm_mb :
						  c->min_disk_mb;

		if (!f->dir_name[i])
			continue;
		if (f->free_mb[i] < 0) {
			(void)buf_addf(why, "%s: its free space cannot be read",
				       f->dir_name[i]);
			return 1;
		}
		if (f->free_mb[i] < need) {
			(void)buf_addf(why,
				       "%s has %lld MiB free, needs %lld MiB",
				       f->dir_name[i], (long long)f->free_mb[i],
				       (long long)need);
			return 1;
		}
	}
	return 0;
}

static int judge_gpus(const struct agent_infra_facts *f, struct buf *why)
{
	if (f->gpus_seen < 0) {
		if (f->gpus_expected <= 0)
			return 0;
		(void)buf_addf(why, "NVML sees no GPU, %d expected",
			       f->gpus_expected);
		return 1;
	}
	if (f->gpus_seen != f->gpus_expected) {
		(void)buf_addf(why, "NVML sees %d GPU%s, %d expected",
			       f->gpus_seen, f->gpus_seen == 1 ? "" : "s",
			       f->gpus_expected);
		return 1;
	}
	if (f->ecc_errors) {
		(void)buf_addf(why, "a GPU has %llu uncorrected ECC error%s",
			       f->ecc_errors, f->ecc_errors == 1 ? "" : "s");
		return 1;
	}
	if (f->pending_retire) {
		(void)buf_adds(why, "a GPU has memory pages pending "
				    "retirement (it needs a reset)");
		return 1;
	}
	return 0;
}

int agent_infra_judge(const struct agent_infra_facts *f,
		      const struct api_infra_check *c, struct buf *why)
{
	int64_t skew = f->skew_ms < 0 ? -f->skew_ms : f->skew_ms;

	if (judge_dirs(f, c, why))
		return 1;
	if (skew > c->max_skew_ms) {
		(void)buf_addf(why,
			       "the clock is %lld ms %s the controller's, "
			       "at most %lld ms allowed",
			       (long long)skew,
			       f->skew_ms < 0 ? "behind" : "ahead of",
			       (long long)c->max_skew_ms);
		return 1;
	}
	return judge_gpus(f, why);
}

void agent_infra_measure(struct agent_infra_facts *f,
			 const struct api_infra_check *c, const char *work_dir,
			 const char *ckpt_dir, int64_t received_ms,
			 int gpus_expected)
{
	static const char shm[] = "/dev/shm";
	struct buf err = BUF_INIT;
	struct agent_nvml *n;

	memset(f, 0, sizeof(*f));
	f->dir_name[0] = "the work folder";
	f->free_mb[0] = free_mb(work_dir);
	if (ckpt_dir) {
		f->dir_name[1] = "the checkpoint folder";
		f->free_mb[1] = free_mb(ckpt_dir);
	}
	f->dir_name[2] = shm;
	f->free_mb[2] = free_mb(shm);
	f->dir_is_shm[2] = 1;
	f->skew_ms = received_ms - c->controller_ms;
	f->gpus_expected = gpus_expected;
	f->gpus_seen = -1;
	n = agent_nvml_open(&err);
	if (n) {
		agent_nvml_health(n, &f->gpus_seen, &f->ecc_errors,
				  &f->pending_retire);
		agent_nvml_close(n);
	}
	buf_release(&err);
}

int agent_infra_disk_judge(unsigned long long avail_bytes, int rdonly,
			   struct buf *why)
{
	if (rdonly) {
		(void)buf_adds(why, "the disk of the work folder is read-only");
		return 1;
	}
	if (avail_bytes >= AGENT_DISK_FULL_BYTES)
		return 0;
	(void)buf_addf(why, "the disk of the work folder is full: %llu KiB "
			    "free",
		       avail_bytes >> 10);
	return 1;
}

int agent_infra_disk_fault(const char *dir, struct buf *why)
{
	struct statvfs st;

	if (!dir || statvfs(dir, &st))
		return 0;
	return agent_infra_disk_judge((unsigned long long)st.f_bavail *
					      st.f_frsize,
				      (st.f_flag & ST_RDONLY) != 0, why);
}
