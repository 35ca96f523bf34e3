/*
 * The Python files built into trainagent, written into a job's folder.
 *
 * They are written once per job folder, at the first launch of a Python
 * rank there: each file whole (fs_write_atomic()), then an empty
 * ".complete" marker, so that a crash half way makes the next launch write
 * them all again and a rank never imports half a module. Later attempts
 * and replaced ranks find the marker and cost a stat().
 */
#define LOG_TAG "agent"

#include <string.h>
#include <sys/stat.h>

#include "agent/runtime.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/banned.h"

static int write_one(const char *root, const struct agent_runtime_file *f,
		     struct buf *err)
{
	struct buf path = BUF_INIT;
	char *slash;
	int ret;

	(void)buf_addf(&path, "%s/%s", root, f->path);
	slash = strrchr(path.data, '/');
	*slash = '\0';
	ret = fs_mkdir_p(path.data, 0755, err);
	*slash = '/';
	if (!ret)
		ret = fs_write_atomic(path.data, f->data, f->len, 0644, 0, err);
	buf_release(&path);
	return ret;
}

int agent_runtime_write(const char *dir, struct buf *err)
{
	struct buf root = BUF_INIT, marker = BUF_INIT;
	struct stat st;
	size_t i;
	int ret = 0;

	if (!agent_runtime_n_files)
		return 0;
	(void)buf_addf(&root, "%s/%s", dir, AGENT_RUNTIME_REL);
	(void)buf_addf(&marker, "%s/.complete", root.data);
	if (!stat(marker.data, &st))
		goto out;
	for (i = 0; i < agent_runtime_n_files && !ret; i++)
		ret = write_one(root.data, &agent_runtime_files[i], err);
	if (!ret)
		ret = fs_write_atomic(marker.data, "", 0, 0644, 0, err);
out:
	buf_release(&root);
	buf_release(&marker);
	return ret ? ret : 1;
}
