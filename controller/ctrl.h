#ifndef CTRL_CTRL_H
#define CTRL_CTRL_H

/*
 * The controller's context, shared by its threads.
 *
 * Threads: main (signals, SIGHUP reloads the inventory), libmicrohttpd's
 * pool (--threads per core; requests, and long-polls parked on waiter
 * lists without a thread), the reconciler (controller/reconciler.c: one
 * pass per change, named jobs only unless a full pass is due, at least
 * every CTRL_FULL_PASS_MS), provisioning workers (one per host being
 * provisioned), and the store's checkpoint thread (db/).
 *
 * Timers: the reconciler sleeps on `wake` (CLOCK_MONOTONIC) for at most
 * 200 ms, and each pass first runs ctrl_hosts_tick(): heartbeat deadlines
 * from the head of a list of hosts in last-seen order and long-poll
 * deadlines from the top of a heap, so a tick costs what expired, not
 * what exists. Full passes catch time-based states (MaxRuntimeInSeconds,
 * --restart-wait).
 *
 * Locks, and what each guards:
 *   lock        the reconciler's wake-up (controller/wake.c): dirty,
 *               full_pass, dirty_jobs, n_dirty, stopping (written under
 *               it; read freely).
 *   hosts_lock  hosts and everything in struct ctrl_host, the waiter
 *               lists and the timer heap, the liveness list, job_version,
 *               log_version, prov_running, the rendezvous store.
 *   jobs_lock   the runtime caches of active jobs (jobs, controller/jobrt.c);
 *               never held while the store is read or a request parsed.
 *   dcache->lock[i]  the Describe cache's slots, in stripes.
 * Order: jobs_lock before hosts_lock when both are held (placement,
 * restarts); lock and the dcache stripes are leaves: nothing else is
 * taken while holding them. The store (db/) has its own locks and is
 * never called with hosts_lock held; hosts_freed and no_host_free are
 * atomics.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "api/sigv4.h"
#include "controller/registry.h"
#include "storage/s3d/s3d.h"
#include "controller/wake.h"
#include "common/buf.h"

struct db;
struct db_tm;
struct MHD_Daemon;

/* Effective configuration (controller/config.c). */
struct ctrl_config {
	char *listen; /* "HOST:PORT" */
	char *state_dir;
	char *credentials_file; /* NULL: requests are not authenticated */
	char *region;
	char *account_id;
	int threads;   /* HTTP worker threads */
	long body_max; /* bytes */
	int verbose;
	int check_only;
	/* --routes: list the route table and exit. */
	int print_routes;
	int local_hosts;    /* embedded local cluster size */
	char *agent_binary; /* trainagent for the local cluster */
	long heartbeat_ms;
	long host_deadline_ms;
	long grace_ms;	 /* SIGTERM -> SIGKILL on Stop/MaxRuntime */
	int max_retries; /* restarts for jobs without RetryStrategy */
	long hang_timeout_ms; /* a rank silent this long is hung; 0: off */
	/* --infra-check: checks before every job's attempts, not only
	 * those asking (docs/distributed.md); their thresholds */
	int infra_check;
	long infra_min_disk_mb;
	long infra_min_shm_mb;
	long infra_max_skew_ms;
	/* The network part (controller/netcheck.h): on by default; a host
	 * fails when its round trip is over rtt_factor times the
	 * attempt's median and rtt_floor_us above it, or its bandwidth
	 * under the median divided by bw_factor. */
	int infra_net;
	long infra_net_rtt_factor;
	long infra_net_rtt_floor_us;
	long infra_net_bw_factor;
	/* --retry-policy: 0 "all" (every failure but a ClientError), 1
	 * "sagemaker" (InternalServerError only, as SageMaker does) */
	int retry_sagemaker;
	long restart_wait_ms; /* a restart waits this long for hosts */
	long elastic_wait_ms; /* an elastic job's, before it shrinks */
	/* A host laid the failures of this many different jobs within
	 * quarantine_window_ms is drained (controller/quarantine.c); 0:
	 * never. */
	int quarantine_failures;
	long quarantine_window_ms;
	/*
	 * How agents reach this controller (--advertise-url's first URL),
	 * and every URL --advertise-url names, sorted, comma-separated: the
	 * members of a replicated controller, which provisioning gives
	 * every agent in one order whichever member leads.
	 */
	char *advertise_url;
	char *agent_controllers;
	char *s3_endpoint;    /* NULL: s3:// is the embedded store */
	char *s3_domain;      /* virtual-hosted S3 under it, or NULL */
	char *inventory;      /* --inventory FILE, NULL: none */
	/* --allow-file-root: folders (resolved, no trailing '/') that
	 * file:// URIs of requests may name; none and credentials set: no
	 * file:// at all; none and no credentials: anywhere (loopback only) */
	char **file_roots;
	size_t n_file_roots;
	size_t file_roots_alloc; /* allocated count of file_roots */
	/* --tls-cert/--tls-key: serve HTTPS; --tls-ca: what agents and
	 * ranks verify the certificate with (default: the certificate) */
	char *tls_cert;
	char *tls_key;
	char *tls_ca;
	/* Container images (controller/registry.h): --registry-auth,
	 * --insecure-registry (repeatable), --image-map. */
	char *registry_auth;
	char **insecure;
	size_t n_insecure;
	size_t insecure_alloc; /* allocated count of insecure */
	char *image_map;
	/* --framework-versions strict: a script-mode job whose image asks
	 * for versions its host does not run fails (0: warn). */
	int framework_strict;
	/* Stragglers (controller/stragwatch.h): --straggler-action (enum
	 * ctrl_strag_action), --straggler-window, --straggler-ratio. */
	int strag_action;
	long strag_window_ms;
	double strag_ratio;
	/* --telemetry-ms: the agents' sampling interval, -1: their own. */
	long tm_interval_ms;
	/* Telemetry retention: host samples (hours), job rows (days). */
	long tm_retention_h;
	long tm_job_retention_d;
	/* --s3-max-uploads, --s3-upload-max-age (storage/s3d/s3d.h) */
	long s3_max_uploads;
	long s3_upload_max_age_ms;
	/* The rendezvous store's budgets (controller/rendezvous.h). */
	long rdzv_attempt_bytes;
	long rdzv_attempt_keys;
	long rdzv_total_bytes;
	/* --agent-listen: a second listener serving agents and ranks only
	 * (NULL: none, they use --listen). */
	char *agent_listen;
	/* Connections one client address may hold at once, 0: no limit; on
	 * --listen and on --agent-listen. */
	long per_client_conns;
	long agent_per_client_conns;
	/* Seconds a connection may take to send its request's headers. */
	long header_timeout_s;
	/* The replicated controller (docs/ha.md): --member ID and --peers
	 * "ID=RAFTADDR=APIURL,..." (NULL: one controller, no raft); raft's
	 * election timeout, heartbeat and entries between snapshots. */
	int member;
	char *peers;
	long ha_election_ms;
	long ha_heartbeat_ms;
	long ha_snapshot_entries;
	int ha_join;	/* --join: a new member, added by the leader */
	int ha_recover; /* --ha-recover: force a cluster of this member */
};

struct ctrl_host;
struct ctrl_waiter;
struct ctrl_jobrt;
struct ctrl_rdzv;
struct ctrl_tuning_curves;
struct ctrl_stragwatch;

/*
 * The tuning step's state (controller/tuning/step.c), the reconciler
 * thread's only; freed by ctrl_tuning_release().
 */
struct ctrl_tuning {
	int64_t next_tick_ms; /* the step runs again by then at the latest */
	/* Set when the step should run at the next pass rather than by
	 * next_tick_ms: a job changed (ctrl_jobs_changed, wake.c) or a
	 * tuning job was created or stopped. Only says "look again". */
	_Atomic int dirty;
	/* The objective curves of ended training jobs, by tuning job. */
	struct ctrl_tuning_curves *curves;
	int crash_rows; /* rows recorded, for TRAINCTLD_CRASH_POINT */
};

/* Everything the controller owns; passed first to every function. */
/*
 * Answers of DescribeTrainingJob kept until the next commit of the store
 * (controller/ops.c): one slot per name hash, locked in stripes.
 */
#define CTRL_DCACHE_SLOTS 16384
#define CTRL_DCACHE_STRIPES 16
struct ctrl_dcache_slot {
	char *name;
	char *owner;
	uint64_t seq;
	char *body;
	size_t len;
};
struct ctrl_dcache {
	struct ctrl_dcache_slot slots[CTRL_DCACHE_SLOTS];
	_Atomic size_t bytes; /* all bodies together */
	pthread_mutex_t lock[CTRL_DCACHE_STRIPES];
};

struct ctrl_ctx {
	struct ctrl_config cfg;
	struct db *db;
	/* Telemetry samples (controller/obs/telemetry.c), and when they were
	 * last pruned (wall ms). */
	struct db_tm *tm_db;
	_Atomic int64_t tm_pruned_ms;
	/* Stragglers of running jobs (controller/stragwatch.h). */
	struct ctrl_stragwatch *strag;
	struct MHD_Daemon *httpd;
	struct MHD_Daemon *agent_httpd; /* --agent-listen, or NULL */
	struct api_credentials creds;
	int auth_enabled;
	char *blob_root;       /* <state-dir>/s3, the embedded store */
	char *s3_uploads;      /* <state-dir>/s3-uploads */
	struct s3d_env s3;     /* the store's S3 face (storage/s3d/s3d.h) */
	struct ctrl_iopool *iopool; /* steps that wait on the disk */
	int logsearch_running;	    /* log searches on it (atomic) */
	struct ctrl_registry registry; /* container images (registry.h) */
	char agent_sha256[65]; /* of cfg.agent_binary, for provisioning */
	/* TLS: the PEM texts (NULL without --tls-cert), and where the CA
	 * agents are given lies (<state-dir>/tls-ca.pem) */
	char *tls_cert_pem;
	char *tls_key_pem;
	char *tls_ca_pem;
	char *tls_ca_path;
	int prov_running; /* provisioning workers (hosts_lock) */
	pthread_cond_t prov_done;

	/* The reconciler: one thread, woken when a fact changes. */
	pthread_t reconciler;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int dirty;
	int stopping;
	/* What the next pass looks at (under lock): every job (full), or
	 * only the jobs named, plus the queue when hosts were freed
	 * (hosts_freed, atomic; set by the pass that freed them). */
	int full_pass;
	char **dirty_jobs;
	size_t n_dirty;
	size_t dirty_alloc; /* allocated count of dirty_jobs */
	int hosts_freed;
	/* Set by each pass when no host at all is free (atomic): a create
	 * then enters the queue at once (see ctrl_op_create). */
	int no_host_free;

	/* Hosts and their waiters (controller/hosts.h). */
	pthread_mutex_t hosts_lock;
	struct ctrl_host **hosts;	  /* in inventory order */
	struct ctrl_host **hosts_by_name; /* the same, sorted by name */
	size_t n_hosts;
	struct ctrl_waiter *log_waiters; /* logs -f, resumed on new lines */
	struct ctrl_rdzv *rdzv;		 /* controller/rendezvous.h */
	int64_t log_version;
	/* Describe long-polls, resumed when any job changes; job_version
	 * counts the changes (both under hosts_lock). */
	struct ctrl_waiter *job_waiters;
	int64_t job_version;
	/* Every waiter above, by deadline (a min-heap), and the registered
	 * hosts that are not lost, oldest heartbeat first (hosts_lock). */
	struct ctrl_waiter **timers;
	size_t n_timers;
	size_t timers_alloc;
	struct ctrl_host *live_head;
	struct ctrl_host *live_tail;

	struct ctrl_dcache *dcache;

	/* Per-job runtime caches (controller/jobrt.c), under jobs_lock: a
	 * hash table by name (jobs_cap buckets, a power of two, chained),
	 * and how many drops and replacements it has seen (a loader that
	 * raced one loads again). */
	pthread_mutex_t jobs_lock;
	struct ctrl_jobrt **jobs;
	size_t jobs_cap;
	size_t n_jobs;
	uint64_t jobs_gen;

	struct ctrl_tuning tuning; /* controller/tuning.h */

	/* The scheduler (controller/sched/pass.h), reconciler's thread:
	 * fair-share usage between passes; a pass is wanted (a queued job
	 * was stepped, or one was put off). */
	struct ctrl_sched_mem *sched;
	int sched_wanted;
	/* The quarantine's next look at the hosts failures were laid at
	 * (controller/quarantine.c; monotonic ms), reconciler's thread. */
	int64_t quarantine_next_ms;
};

/*
 * ctx.c: a context with its configuration at its defaults, its locks and
 * conditions made and its caches empty; release frees what the context
 * holds (hosts, runtime caches, rendezvous, credentials, TLS texts, the
 * configuration) and destroys the locks. The store (ctx->db) is the
 * caller's to open and close.
 */
void ctrl_ctx_init(struct ctrl_ctx *ctx);
void ctrl_ctx_release(struct ctrl_ctx *ctx);

/* config.c */
void ctrl_config_init(struct ctrl_config *cfg);
int ctrl_config_parse_args(struct ctrl_config *cfg, int argc, char **argv,
			   struct buf *err);
void ctrl_config_fill_defaults(struct ctrl_config *cfg);
int ctrl_config_check(const struct ctrl_config *cfg, struct buf *err);
void ctrl_config_print(const struct ctrl_config *cfg);
void ctrl_config_release(struct ctrl_config *cfg);
void ctrl_usage(void);
/* Whether a --listen HOST:PORT names a loopback address. */
int ctrl_listen_is_loopback(const char *listen);

/* http.c */
int ctrl_http_start(struct ctrl_ctx *ctx, struct buf *err);
void ctrl_http_stop(struct ctrl_ctx *ctx);

/* reconciler.c */
int ctrl_reconciler_start(struct ctrl_ctx *ctx);
void ctrl_reconciler_stop(struct ctrl_ctx *ctx);
/* The ARN of a training job (owned by the caller; reply.c). */
char *ctrl_job_arn(const struct ctrl_ctx *ctx, const char *name);

#endif
