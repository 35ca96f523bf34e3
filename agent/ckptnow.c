/*
 * The checkpoint-now request. Every rank gets
 *
 *   TRAINCTL_CHECKPOINT_NOW=<job folder>/.trainagent/scratch/checkpoint-now
 *
 * (the scratch folder belongs to the job's user). A program that takes
 * requests creates "<that path>.listening" once it runs. At a planned stop
 * (StopTrainingJob, preemption, a drain or a move: any stop with a grace
 * period) of a job with a checkpoint folder, when a rank listens, the agent
 * creates the request file, and the program checkpoints at its next step
 * and removes the file once the checkpoint is complete. SIGTERM follows
 * the removal, or half the grace period, whichever comes first; SIGKILL
 * still comes at the end of the grace period counted from the request, so
 * a stop takes no longer than before. A program that does not listen gets
 * SIGTERM at once, as before.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agent/ckptnow.h"
#include "common/buf.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/banned.h"

#define REL ".trainagent/scratch/checkpoint-now"

static void path_of(const char *dir, const char *suffix, struct buf *b)
{
	(void)buf_addf(b, "%s/%s%s", dir, REL, suffix);
}

void agent_ckptnow_env(const char *base, struct strvec *env)
{
	strvec_pushf(env, "%s=%s/%s", AGENT_CKPTNOW_ENV, base, REL);
}

void agent_ckptnow_reset(const char *dir)
{
	struct buf b = BUF_INIT;

	path_of(dir, "", &b);
	if (unlink(b.data) && errno != ENOENT)
		log_warn("cannot remove %s: %s", b.data, strerror(errno));
	buf_reset(&b);
	path_of(dir, ".listening", &b);
	if (unlink(b.data) && errno != ENOENT)
		log_warn("cannot remove %s: %s", b.data, strerror(errno));
	buf_release(&b);
}

static int exists(const char *dir, const char *suffix)
{
	struct buf b = BUF_INIT;
	int r;

	path_of(dir, suffix, &b);
	r = !access(b.data, F_OK);
	buf_release(&b);
	return r;
}

int agent_ckptnow_listening(const char *dir)
{
	return exists(dir, ".listening");
}

int agent_ckptnow_pending(const char *dir)
{
	return exists(dir, "");
}

int agent_ckptnow_request(const char *dir, const char *why)
{
	struct buf path = BUF_INIT, err = BUF_INIT, text = BUF_INIT;
	int ret;

	path_of(dir, "", &path);
	(void)buf_addf(&text, "%s\n", why);
	/* Whole or not at all: a program that sees it can read it. */
	ret = fs_write_atomic(path.data, text.data, text.len, 0666, 0, &err);
	if (ret)
		log_warn("checkpoint-now request: %s", err.data);
	buf_release(&path);
	buf_release(&err);
	buf_release(&text);
	return ret ? -1 : 0;
}
