#ifndef CTRL_HOSTS_H
#define CTRL_HOSTS_H

/*
 * The hosts the controller knows: their agents' registration, heartbeat and
 * the version of their desired state, plus the long-polls waiting on that
 * version (suspended libmicrohttpd connections: waiting costs no thread).
 * Everything here is guarded by ctx->hosts_lock.
 */
#include <stdint.h>
#include <sys/types.h>

#include "api/telemetry.h"
#include "controller/wake.h"
#include "common/buf.h"

struct ctrl_ctx;
struct MHD_Connection;

struct ctrl_host {
	char *name;
	char *token;
	char *address; /* as the agent reported it */
	char *boot_id;
	/* The newest log batch taken from it (agent_api.c): its agent's
	 * boot_id and seq; a batch sent again is not stored twice. */
	char *log_boot_id;
	int64_t log_seq;
	/* The last status body, every report of it stored (agent_api.c). */
	char *last_status;
	size_t last_status_len;
	int cpus;
	int gpus;
	int registered;	      /* an agent has registered since we started */
	int64_t last_seen_ms; /* monotonic, 0 = never */
	int lost;	      /* missed its heartbeat deadline */
	/* Registered and not lost: on ctx's liveness list, oldest
	 * last_seen_ms first (ctrl_host_seen() moves it to the end). */
	struct ctrl_host *live_prev;
	struct ctrl_host *live_next;
	int on_live;
	/* Drained (planned maintenance, kept in the store): no new work;
	 * a job on it moves to another host (controller/jobrun.c). */
	int drained;
	char *drain_reason;
	/* Holds an assignment, as of the reconciler's last read of them
	 * (controller/jobrun.c); only the reconciler uses it. */
	int busy;
	/* Held by an Available warm pool (busy too), as of the same read. */
	int warm;
	int64_t version; /* of the desired state */
	/* Its container images as the agent last listed them (a JSON
	 * array; NULL: never), when (wall ms), and the prune requests:
	 * the last asked for (sent with the work) and the last done. */
	char *images_json;
	int64_t images_ms;
	int64_t prune_want;
	int64_t prune_done;
	struct ctrl_waiter *waiters;
	/* Telemetry (controller/obs/telemetry.c): the newest sample (valid
	 * when have_tm) and the time of the last one taken. */
	struct tm_host_sample tm_latest;
	int have_tm;
	int64_t tm_last_ts;
	/* Embedded local cluster only: the agent process we started. */
	int local;
	pid_t pid;
	char *work_dir;
	int64_t restart_at_ms; /* monotonic; 0 = no restart pending */
	int64_t spawned_ms;    /* monotonic: when we started it */
	int restarts;
	/* Inventory hosts (controller/provision.c). */
	int inventory;
	int external;	     /* its agent is started by someone else */
	int removed;	     /* no longer in the inventory: no new jobs */
	char *instance_type; /* NULL for local hosts: they serve any type */
	char *rack;	     /* the inventory's topology domain; NULL: none */
	char *inv_address;
	int ssh_port;
	char *ssh_user;
	char *ssh_key;
	char *known_hosts;
	int accept_new_host_key;
	char *agent_path;
	int prov_busy;	  /* a provisioning worker runs */
	char *prov_error; /* why the last provisioning failed */
	int64_t prov_backoff_ms;
	int64_t next_provision_ms; /* monotonic */
};

/* Adds a host (name and token copied). Returns it; never NULL. */
struct ctrl_host *ctrl_hosts_add(struct ctrl_ctx *ctx, const char *name,
				 const char *token);

/* The host named name, or NULL. Caller holds hosts_lock. */
struct ctrl_host *ctrl_hosts_find(struct ctrl_ctx *ctx, const char *name);

/*
 * Checks "Authorization: Bearer TOKEN" against the host's token (constant
 * time). Returns the host, or NULL. Caller holds hosts_lock.
 */
struct ctrl_host *ctrl_hosts_auth(struct ctrl_ctx *ctx, const char *name,
				  const char *authorization);

/*
 * The desired state of host changed: bump its version and resume its
 * waiters. Takes hosts_lock.
 */
void ctrl_hosts_bump(struct ctrl_ctx *ctx, const char *name);

/* Bumps every host. Takes hosts_lock. */
void ctrl_hosts_bump_all(struct ctrl_ctx *ctx);

/*
 * An agent's request arrived from host h (registered, lost and
 * last_seen_ms already set by the caller): keeps the liveness list in
 * last_seen_ms order. Caller holds hosts_lock.
 */
void ctrl_host_seen(struct ctrl_ctx *ctx, struct ctrl_host *h);

/*
 * Resumes waiters whose deadline passed and marks hosts whose heartbeat is
 * older than the deadline lost. Looks only at the waiters and hosts whose
 * time is up (a heap and a list in deadline order), never at every host.
 * Returns the number of hosts that became lost. Takes hosts_lock.
 */
int ctrl_hosts_tick(struct ctrl_ctx *ctx, int64_t now_mono_ms);

/* Resumes every waiter (shutdown). Takes hosts_lock. */
void ctrl_hosts_resume_all(struct ctrl_ctx *ctx);

struct ctrl_response;

/* Fills resp with GET /v1/hosts. */
struct ctrl_caller;
/* GET /v1/hosts; a host busy with a job who may not see names no job. */
void ctrl_hosts_list(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		     struct ctrl_response *resp);

/* Marks the hosts the store says are drained (start, inventory reload). */
void ctrl_hosts_load_drains(struct ctrl_ctx *ctx);

/*
 * POST /v1/hosts/{name}/drain (body: empty or {"reason": "..."}) and
 * /undrain: fills resp. name is the rest of the path after /v1/hosts/.
 */
/*
 * GET /v1/hosts/{name}/images: what the host's agent last reported of its
 * container images. Fills resp.
 */
void ctrl_hosts_images_route(struct ctrl_ctx *ctx, const char *path,
			     struct ctrl_response *resp);

/* The agent's images (an api_status's images_json, taken). */
void ctrl_hosts_set_images(struct ctrl_ctx *ctx, const char *name,
			   char *images_json, int64_t pruned);

/* The prune request to send with name's work (0: none). */
int64_t ctrl_hosts_prune_want(struct ctrl_ctx *ctx, const char *name);

/*
 * POST /v1/hosts/{name}/drain, /undrain and /images/prune (admin): fills
 * resp.
 */
void ctrl_hosts_drain_route(struct ctrl_ctx *ctx, const char *path,
			    const char *body, size_t len,
			    struct ctrl_response *resp);

/* Frees every host. */
void ctrl_hosts_release(struct ctrl_ctx *ctx);

#endif
