#ifndef AGENT_PODMAN_H
#define AGENT_PODMAN_H

/* Ranks as containers with podman (agent/podman.c). */
#include <stddef.h>
#include <stdint.h>

#include "agent/proc.h"
#include "api/agent_proto.h"
#include "common/buf.h"

struct agent_config;
struct agent_assign;

/* podman and its global options: this host's store under work_dir. */
void agent_podman_base(const char *work_dir, struct strvec *argv);

struct spawn_result;

/* podman with this host's store (agent_podman_base) and args, run to its
 * end (common/spawn.h). */
int agent_podman_run(const char *work_dir, const char *const *args,
		     int64_t timeout_ms, size_t max_out,
		     struct spawn_result *res);

/* The container name of a rank: tc-<job>-<uid>-<attempt>-<algo>-<rank>. */
char *agent_podman_name(const struct agent_assign *a, int rank);

/*
 * 1 when this host's store (under work_dir) lists image, 0 when not, -1
 * when it has no list to read. A file read: no podman runs.
 */
int agent_podman_has_image(const char *work_dir, const char *image);

/*
 * Pulls s->image unless this host has it (*pulled says whether it did),
 * with s->registry_auth in a 0600 file under dir/.trainagent for the
 * pull's length. Blocks: the staging worker calls it. Returns 0, or
 * ERR_IO with err quoting podman's answer.
 */
int agent_podman_pull(const char *work_dir, const char *dir,
		      const struct api_assignment *s, int *pulled,
		      struct buf *err);

/* `podman run ...` of rank with env (the variables are passed by name). */
void agent_podman_run_argv(const struct agent_config *cfg,
			   const struct agent_assign *a, int rank,
			   const struct strvec *env, const char *ca_file,
			   struct strvec *argv);

/* `podman rm --force` of rank's container, for its keeper. */
void agent_podman_cleanup_argv(const struct agent_config *cfg,
			       const struct agent_assign *a, int rank,
			       struct strvec *argv);

#endif
