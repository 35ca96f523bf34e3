/*
 * The host's container images, for `trainctl images` (docs/containers.md):
 * a worker lists them (podman images) when the agent starts and after a
 * pull, and first prunes those no container uses when the controller asks
 * (work's prune_images). The list travels once with the next status.
 */
#define LOG_TAG "agent"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/agent.h"
#include "agent/images.h"
#include "agent/lines.h"
#include "agent/podman.h"
#include "agent/task.h"
#include "common/err.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define LIST_MAX (AGENT_LINE_MAX - 1024)
#define PODMAN_TIMEOUT_MS (10 * 60 * 1000)

/* Whether this host ever stored an image (no podman run otherwise). */
static int have_store(const char *work_dir)
{
	struct buf b = BUF_INIT;
	struct stat st;
	int r;

	(void)buf_addf(&b, "%s/containers/storage", work_dir);
	r = !stat(b.data, &st) && S_ISDIR(st.st_mode);
	buf_release(&b);
	return r;
}

static int podman(const char *work_dir, const char *const *args,
		  struct spawn_result *res)
{
	int ret = agent_podman_run(work_dir, args, PODMAN_TIMEOUT_MS, 4u << 20,
				   res);

	return !ret && !spawn_ok(res) ? ERR_IO : ret;
}

/* podman's JSON cut down to what trainctl shows, one line at most. */
static char *summarize(const char *json)
{
	json_t *in = json_loads(json, 0, NULL), *out = json_array(), *e;
	char *text;
	size_t i, len = 2;

	json_array_foreach(in, i, e)
	{
		json_t *o = json_object(), *names = json_object_get(e, "Names");
		json_t *id = json_object_get(e, "Id");
		json_t *size = json_object_get(e, "Size");
		json_t *created = json_object_get(e, "CreatedAt");
		json_t *digest = json_object_get(e, "Digest");
		char *one;

		json_object_set_new(o, "id",
				    json_string(json_is_string(id) ?
							json_string_value(id) :
							""));
		json_object_set(o, "names",
				json_is_array(names) ? names : json_array());
		json_object_set_new(
			o, "size",
			json_integer(json_is_integer(size) ?
					     json_integer_value(size) :
					     0));
		if (json_is_string(digest))
			json_object_set(o, "digest", digest);
		if (json_is_string(created))
			json_object_set(o, "created", created);
		one = json_dumps(o, JSON_COMPACT);
		len += one ? strlen(one) + 1 : 0;
		free(one);
		if (len > LIST_MAX) {
			json_decref(o);
			break;
		}
		json_array_append_new(out, o);
	}
	text = json_dumps(out, JSON_COMPACT);
	json_decref(in);
	json_decref(out);
	return text;
}

/* The worker: prune (when asked), list, report "images <json>". */
static int images_main(void *arg, int fd)
{
	const struct agent_ctx *ctx = arg;
	static const char *const prune[] = { "image", "prune", "--all",
					     "--force", NULL };
	static const char *const list[] = { "images", "--format", "json",
					    NULL };
	struct spawn_result res = SPAWN_RESULT_INIT;
	struct buf line = BUF_INIT;
	char *text;
	int ret = 0;

	if (ctx->images.running) {
		ret = podman(ctx->cfg.work_dir, prune, &res);
		if (ret) {
			spawn_last_line(&res, &line);
			agent_task_say(fd, "error prune: %s", line.data);
			goto out;
		}
		spawn_result_release(&res);
		res = (struct spawn_result)SPAWN_RESULT_INIT;
	}
	ret = podman(ctx->cfg.work_dir, list, &res);
	if (ret) {
		spawn_last_line(&res, &line);
		agent_task_say(fd, "error images: %s", line.data);
		goto out;
	}
	text = summarize(res.out.data ? res.out.data : "[]");
	agent_task_say(fd, "images %s", text ? text : "[]");
	free(text);
out:
	spawn_result_release(&res);
	buf_release(&line);
	return ret ? 1 : 0;
}

void agent_images_init(struct agent_ctx *ctx)
{
	memset(&ctx->images, 0, sizeof(ctx->images));
	agent_task_init(&ctx->images.task);
	ctx->images.refresh = 1;
}

static void finished(struct agent_ctx *ctx)
{
	struct agent_images *im = &ctx->images;

	if (WIFEXITED(im->task.status) && !WEXITSTATUS(im->task.status) &&
	    im->next) {
		free(im->list);
		im->list = im->next;
		im->next = NULL;
		if (im->running > im->done)
			im->done = im->running;
		im->unsent = 1;
		ctx->sess.status_dirty = 1;
		if (im->running)
			log_info("container images pruned (%lld)",
				 (long long)im->running);
	}
	FREE_AND_NULL(im->next);
	im->running = 0;
	agent_task_release(&im->task);
	agent_task_init(&im->task);
}

static void on_line(void *arg, const char *line, size_t len)
{
	struct agent_ctx *ctx = arg;

	if (len > 7 && !strncmp(line, "images ", 7)) {
		free(ctx->images.next);
		ctx->images.next = xstrndup(line + 7, len - 7);
	} else if (len > 6 && !strncmp(line, "error ", 6)) {
		log_warn("container images: %.*s", (int)(len - 6), line + 6);
	}
}

void agent_images_on_task(struct agent_ctx *ctx)
{
	struct agent_task *t = &ctx->images.task;

	if (t->fd >= 0 && agent_lines_read(&t->lines, t->fd, on_line, ctx)) {
		close(t->fd);
		t->fd = -1;
	}
	if (t->fd < 0 && t->pid > 0 && agent_task_reap(t))
		finished(ctx);
}

int agent_images_reap(struct agent_ctx *ctx, pid_t pid)
{
	if (ctx->images.task.pid != pid || ctx->images.task.reaped)
		return 0;
	(void)agent_task_reap(&ctx->images.task);
	agent_images_on_task(ctx);
	return 1;
}

void agent_images_tick(struct agent_ctx *ctx)
{
	struct agent_images *im = &ctx->images;
	struct buf err = BUF_INIT;

	if (agent_task_busy(&im->task) || ctx->shutting_down ||
	    (!im->refresh && im->want <= im->done))
		return;
	if (!have_store(ctx->cfg.work_dir)) {
		/* Nothing was ever pulled here: nothing to list or prune. */
		if (!im->list || im->want > im->done) {
			free(im->list);
			im->list = xstrdup("[]");
			if (im->want > im->done)
				im->done = im->want;
			im->unsent = 1;
			ctx->sess.status_dirty = 1;
		}
		im->refresh = 0;
		return;
	}
	im->running = im->want > im->done ? im->want : 0;
	im->refresh = 0;
	if (agent_task_start(&im->task, images_main, ctx, NULL, &err)) {
		log_warn("container images: %s", err.data);
		im->running = 0;
	}
	buf_release(&err);
}

void agent_images_release(struct agent_ctx *ctx)
{
	struct agent_images *im = &ctx->images;

	if (agent_task_busy(&im->task)) {
		agent_task_kill(&im->task);
		while (!agent_task_reap(&im->task))
			(void)usleep(1000);
	}
	agent_task_release(&im->task);
	free(im->list);
	free(im->next);
	memset(im, 0, sizeof(*im));
}
