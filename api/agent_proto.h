#ifndef API_AGENT_PROTO_H
#define API_AGENT_PROTO_H

/*
 * The agent protocol's messages (docs/agent-protocol.md) as plain C structs,
 * with JSON parsing and building for both sides. Every string is owned by
 * its struct and freed by the matching _release().
 */
#include <stddef.h>
#include <stdint.h>

#include "api/distribution.h"
#include "api/framework.h"
#include "api/job_spec.h"
#include "common/buf.h"

enum api_action {
	API_ACTION_RUN = 0,
	API_ACTION_STOP, /* SIGTERM, grace, SIGKILL, then upload */
	API_ACTION_ABORT /* kill now, upload nothing */
};

enum api_launch_mode {
	API_LAUNCH_EXEC = 0,
	API_LAUNCH_SCRIPT,
	API_LAUNCH_CONTAINER
};

/*
 * A job's uid tells it apart from an earlier job of the same name (one
 * that was deleted): API_PROTO_UID_MAX lower-case hex digits at most,
 * chosen when the job is created. Assignments, reports and log lines
 * carry it; NULL (absent on the wire) from an older peer.
 */
#define API_PROTO_UID_MAX 32

/* How an agent's error for failed infrastructure checks starts (the
 * controller replaces such a host: docs/distributed.md). */
#define API_INFRA_CHECK_FAILED "Infrastructure check failed: "
/* ... and for a failure to prepare that is the host's (a full or
 * read-only disk): retried elsewhere, held against the host. */
#define API_HOST_FAULT "Host fault: "

struct api_assignment {
	char *job;
	char *job_uid; /* may be NULL */
	int attempt;
	enum api_action action;
	char *job_arn;
	char *algo;	/* "algo-2" */
	int host_index; /* 0-based position in hosts */
	char **hosts;	/* NULL-terminated, n_hosts entries */
	size_t n_hosts;
	char **addresses; /* addresses[i] is hosts[i]'s address */
	char *instance_type;
	/*
	 * The three config files, as compact JSON texts written verbatim;
	 * JSON objects on the wire (hyperparameters: of strings). Key order
	 * and numbers are kept as they are.
	 */
	char *hyperparameters_json;
	char *input_data_config_json;
	char *resource_config_json;
	/*
	 * DebugHookConfig and ProfilerConfig as the program reads them in
	 * input/config/debughookconfig.json and profilerconfig.json, defaults
	 * filled in; NULL (absent on the wire) when the job has none.
	 */
	char *debug_hook_config_json;
	char *profiler_config_json;
	/*
	 * Where the Debugger hook's tensors (DebugHookConfig.LocalPath) and
	 * the profiler's files go: <S3OutputPath>/<job>/debug-output and
	 * /profiler-output; NULL when the job has no such config.
	 */
	char *debug_s3_uri;
	char *debug_local_path;
	char *profiler_s3_uri;
	char *profiler_local_path;
	/*
	 * Wire members: name, uri, data_type, distribution; content_type,
	 * input_mode, compression, record_wrapper may be null or absent.
	 */
	struct api_channel *channels;
	size_t n_channels;
	struct api_kv *environment;
	size_t n_environment;
	enum api_launch_mode launch_mode;
	char **argv;		/* exec: NULL-terminated; container: the
				 * arguments ("train" unless ContainerArguments) */
	char *runtime;		/* script: interpreter for .py */
	char *program;		/* script: sagemaker_program */
	char *submit_directory; /* script: tar.gz URI, may be NULL */
	/* script: the framework and Python versions the image asks for
	 * (api/framework.h; all NULL: none) */
	struct api_framework framework;
	/*
	 * container: the image, pinned by digest (repo@sha256:...);
	 * ContainerEntrypoint (NULL: the image's own); the pull's
	 * credentials, a containers auth.json text naming the image's
	 * registry only (NULL: none; a secret: never logged); whether the
	 * registry's TLS certificate is verified.
	 */
	char *image;
	char **entrypoint;
	char *registry_auth;
	int tls_verify;
	char *output_path;
	char *run_as; /* Unix user of the ranks, NULL: the agent's own */
	char *checkpoint_s3_uri;     /* may be NULL */
	char *checkpoint_local_path; /* may be NULL */
	/* TensorBoardOutputConfig: LocalPath's files are mirrored to
	 * S3OutputPath while the ranks run; both NULL when not set. */
	char *tensorboard_s3_uri;
	char *tensorboard_local_path;
	char *blob_url;	  /* storage: controller blob endpoint */
	char *local_root; /* storage: embedded store dir, may be NULL */
	/*
	 * Rendezvous of the attempt: algo-1's address, the first of the
	 * attempt's ports (MASTER_PORT; parameter servers use port_base + 2i
	 * and + 2i + 1 on host i), and the attempt's key-value store (url
	 * and token; NULL from an older controller).
	 */
	char *master_addr;
	int master_port;
	char *rdzv_url;
	char *rdzv_token;
	/*
	 * What the job's hosts show each other to reach the copies of its
	 * checkpoints in their memory (agent/peerckpt.h): the same for every
	 * attempt of the job, a secret (never logged); "peer_token" in
	 * "rendezvous", NULL (absent) from an older controller.
	 */
	char *peer_token;
	int processes_per_host;
	/* "distribution": mode and what the mode needs. */
	enum api_dist_mode dist_mode;
	int mpi_processes; /* 0: processes_per_host on every host */
	char *mpi_options; /* may be NULL */
	int ps_servers;	   /* 0: every host */
	int64_t grace_ms;
	/*
	 * Hang detection's timeout (docs/distributed.md, "Hangs"): a rank
	 * silent this long is hung; 0 (absent on the wire): no detection.
	 */
	int64_t hang_ms;
	/* hang_ms is the job's own (StalledTrainingRule's threshold):
	 * used as it is, never learned from the ranks' progress. */
	int hang_fixed;
	/*
	 * EnableNetworkIsolation: the ranks reach only the job's hosts
	 * (docs/security.md); absent on the wire: false.
	 */
	int network_isolation;
	/*
	 * Infrastructure checks before the program starts (InfraCheckConfig
	 * or the controller's --infra-check; docs/distributed.md): "
	 * infra_check" on the wire, absent: none. Free space the work and
	 * checkpoint folders and /dev/shm must have, the largest offset of
	 * the host's clock from the controller's, and the controller's
	 * clock when it answered (the agent compares its own with it).
	 */
	struct api_infra_check {
		int enabled;
		int64_t min_disk_mb;
		int64_t min_shm_mb;
		int64_t max_skew_ms;
		int64_t controller_ms;
		/* Some host of the attempt has not passed them yet: the
		 * program waits (absent on the wire: false). */
		int hold;
		/* Measure the network against the attempt's other hosts
		 * too (agent/netcheck.h; absent on the wire: false). */
		int network;
	} infra;
	/*
	 * "locations": what the job's owner may name (docs/security.md);
	 * the agent checks every URI it stages against them, a manifest's
	 * objects included. has_locations 0 (absent on the wire: an older
	 * controller): every location. Else loc_s3_any (null on the wire)
	 * or only "bucket/key" starting with one of loc_s3_prefixes;
	 * loc_file_any (null) or only paths under one of loc_file_roots.
	 */
	int has_locations;
	int loc_s3_any;
	char **loc_s3_prefixes; /* NULL-terminated */
	size_t n_loc_s3_prefixes;
	int loc_file_any;
	char **loc_file_roots; /* NULL-terminated, absolute folders */
	size_t n_loc_file_roots;
};

/* The desired state of one host. */
struct api_work {
	int64_t version;
	struct api_assignment *items;
	size_t n;
	/* The host's container images: prune those no container uses, up
	 * to this request (docs/containers.md); 0: none asked. */
	int64_t prune_images;
};

enum api_phase {
	API_PHASE_PREPARING = 0,
	API_PHASE_DOWNLOADING,
	API_PHASE_RUNNING,
	API_PHASE_EXITED,
	API_PHASE_UPLOADING,
	API_PHASE_DONE,
	API_PHASE_ERROR
};

struct api_proc_report {
	int rank;
	int64_t pid;
	int64_t started_ms;
	int exited;    /* 0 while running */
	int exit_code; /* valid when exited and signal == 0 */
	int signal;    /* terminating signal, 0 = none */
	int64_t exited_ms;
	/* A failed process's last lines of output, "a | b | c"; may be
	 * NULL; owned by the report. */
	char *tail;
};

struct api_report {
	char *job;
	char *job_uid; /* may be NULL */
	int attempt;
	char *algo;
	enum api_phase phase;
	int64_t started_ms; /* 0: not started (null on the wire) */
	struct api_proc_report *procs;
	size_t n_procs;
	char *failure; /* output/failure text, may be NULL */
	char *error;   /* agent-side error, may be NULL */
	/* failure is a hang the agent's watch found (absent on the wire:
	 * false). */
	int hung;
	/* The infrastructure checks passed in check_ms - 1 ms; 0 (absent
	 * on the wire): none ran or they have not passed. */
	int64_t check_ms;
	/* Script mode: the Python and framework versions the ranks run,
	 * and how they meet the image's ("Python 3.11.2, PyTorch 1.13.1
	 * ..."); NULL: not known (yet). */
	char *runtime;
	/*
	 * The network part of the checks ("net" on the wire, absent: none
	 * ran, peers 0): how many of the attempt's other hosts were tried
	 * and answered, and the best of them: the median round trip in
	 * microseconds and the bandwidth in Mbit/s (-1: none answered).
	 */
	struct api_net_figures {
		int peers;
		int reached;
		int64_t rtt_us;
		int64_t mbps;
	} net;
};

struct api_status {
	char *boot_id;
	struct api_report *items;
	size_t n;
	/*
	 * The host's container images, sent when they changed: images_json
	 * is a JSON array of {"id", "names": [...], "size", "created"} (NULL:
	 * not in this status), images_pruned the last prune request done.
	 */
	char *images_json;
	int64_t images_pruned;
	/* Telemetry samples, oldest first (api/telemetry.h); NULL and 0:
	 * none in this status. */
	struct tm_host_sample *samples;
	size_t n_samples;
	/* Why the samples were refused (then none are kept), NULL: they
	 * were not. Bad telemetry never fails the status: the heartbeat
	 * and the reports it carries matter more. */
	char *telemetry_error;
};

struct api_register {
	char *host;
	char *version;
	char *boot_id;
	int cpus;
	int gpus;
	char *address;
};

struct api_log_line {
	char *job;
	char *job_uid; /* may be NULL */
	int attempt;
	char *algo;
	int rank;
	int is_stderr;
	int64_t ts_ms;
	char *text;
};

/*
 * A batch of log lines. boot_id and seq name it (docs/agent-protocol.md):
 * the agent process's boot id and a number that grows by one per new
 * batch; a batch sent again (its POST timed out or failed) carries the
 * same pair and the same lines, so the controller stores it once. Both
 * absent (NULL, 0) from older agents.
 */
struct api_log_batch {
	struct api_log_line *lines;
	size_t n;
	char *boot_id;
	int64_t seq;
};

/*
 * What the parsers accept. A bigger document, list or string is refused
 * with ERR_INVALID and a message naming the member and the limit.
 */
#define API_PROTO_MAX_BODY (64 << 20)  /* bytes in one message */
#define API_PROTO_MAX_STRING (1 << 20) /* bytes in any one string */
#define API_PROTO_MAX_HOSTS 256	       /* hosts of an assignment */
#define API_PROTO_BOOT_ID_MAX 64       /* bytes of a log batch's boot_id */
#define API_PROTO_MAX_ASSIGNMENTS 1024 /* per work or status message */
#define API_PROTO_MAX_LIST 4096	       /* argv, channels, environment */
#define API_PROTO_MAX_PROCS 4096       /* processes of one report */
#define API_PROTO_MAX_LOG_LINES 10000  /* lines of one log batch */
#define API_PROTO_MAX_IMAGES 4096      /* images of one host */

/*
 * Text on the wire must be UTF-8 without NUL. The parsers refuse a message
 * holding anything else (jansson checks every byte of the body), and the
 * builders return ERR_INVALID for such a string rather than send what the
 * other side would refuse. Whoever forwards raw bytes (a child's log
 * output) passes them through api_utf8_sanitize() first.
 */

/*
 * Appends s[0..len) to out with every NUL byte and every invalid UTF-8
 * sequence (each maximal invalid subpart, as Python's errors="replace"
 * counts them) replaced by U+FFFD. Returns 0 or ERR_TOOBIG.
 */
int api_utf8_sanitize(const char *s, size_t len, struct buf *out);

const char *api_phase_name(enum api_phase p);
int api_phase_parse(const char *s, enum api_phase *out);
const char *api_action_name(enum api_action a);
int api_action_parse(const char *s, enum api_action *out);

/*
 * Each _parse returns 0, or ERR_INVALID with err naming the bad member
 * ("assignments[0].launch.argv[2] must be a string"); on failure the output
 * is left empty (zeroed) and there is nothing to release. Unknown members
 * are ignored, so a newer peer may add some.
 *
 * Each _build appends compact JSON to out and returns 0, ERR_INVALID (a
 * string that is not UTF-8, a config text that is not a JSON object),
 * ERR_TOOBIG (out's max) or ERR_NOMEM; out may then hold part of a message.
 * Builders do not validate: what a parser would refuse (a NULL required
 * string, a host_index out of range) is built as it is.
 */
int api_work_parse(const char *json, size_t len, struct api_work *w,
		   struct buf *err);
int api_work_build(const struct api_work *w, struct buf *out);
void api_assignment_release(struct api_assignment *a);
void api_work_release(struct api_work *w);

int api_status_parse(const char *json, size_t len, struct api_status *s,
		     struct buf *err);
int api_status_build(const struct api_status *s, struct buf *out);
void api_report_release(struct api_report *r);
void api_status_release(struct api_status *s);

int api_register_parse(const char *json, size_t len, struct api_register *r,
		       struct buf *err);
int api_register_build(const struct api_register *r, struct buf *out);
void api_register_release(struct api_register *r);

int api_log_batch_parse(const char *json, size_t len, struct api_log_batch *b,
			struct buf *err);
int api_log_batch_build(const struct api_log_batch *b, struct buf *out);
void api_log_batch_release(struct api_log_batch *b);

/* The register answer: {"heartbeat_ms", "deadline_ms"}. */
int api_register_reply_build(int64_t heartbeat_ms, int64_t deadline_ms,
			     struct buf *out);
/*
 * The same with "telemetry_ms", the sampling interval the controller asks
 * for (0: none), when telemetry_ms >= 0.
 */
int api_register_reply_build_tm(int64_t heartbeat_ms, int64_t deadline_ms,
				int64_t telemetry_ms, struct buf *out);
/*
 * The register answer's optional "telemetry_ms" (0..3600000) into *ms, -1
 * when absent or null (an older controller). Returns 0 or ERR_INVALID.
 */
int api_register_reply_telemetry(const char *json, size_t len, int64_t *ms,
				 struct buf *err);
int api_register_reply_parse(const char *json, size_t len,
			     int64_t *heartbeat_ms, int64_t *deadline_ms,
			     struct buf *err);

#endif
