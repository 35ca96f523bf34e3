#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "api/client.h"
#include "common/buf.h"

#define CLI_VERSION "0.1.0"

/* Exit codes; git's tests expect 129 for usage errors. */
enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_API = 1,	/* the server answered with an error */
	CLI_EXIT_TRANSPORT = 2, /* no answer: connect, timeout, bad reply */
	CLI_EXIT_FAILED = 3,	/* wait: the job ended Failed */
	CLI_EXIT_STOPPED = 4,	/* wait: the job ended Stopped */
	CLI_EXIT_TIMEOUT = 5,	/* wait: --timeout passed */
	CLI_EXIT_USAGE = 129
};

enum cli_output { CLI_OUTPUT_TABLE = 0, CLI_OUTPUT_JSON };

#define CLI_DEFAULT_ENDPOINT "http://127.0.0.1:8080"
#define CLI_DEFAULT_REGION "us-east-1"
/* Cap on a response body, after curl's dynbuf "toobig". */
#define CLI_MAX_RESPONSE (16u * 1024 * 1024)
/* Cap on a --cli-input-json document. */
#define CLI_MAX_INPUT (4u * 1024 * 1024)

struct cli_http;

/*
 * Everything a command needs, built once by main() and passed to every
 * command. The strings are borrowed from argv or the environment.
 */
struct cli_ctx {
	/*
	 * --endpoint as given: one URL, or the members of a replicated
	 * controller separated by commas (cli_endpoint()).
	 */
	const char *endpoint;
	char **members;	    /* endpoint split, once, by http.c */
	size_t n_members;   /* entries of members */
	size_t cur_member;  /* the one requests go to now */
	const char *region;
	const char *ca_bundle; /* PEM CAs for https (NULL: the system's) */
	enum cli_output output;
	struct cli_http *http; /* created on the first call, see http.c */
};

/* One subcommand; argv[0] is the command name. Returns an exit code. */
struct cli_cmd {
	const char *name;
	int (*fn)(struct cli_ctx *ctx, int argc, char **argv);
	const char *usage; /* "describe-training-job NAME" */
	const char *help;  /* one line for `trainctl help` */
};

/* --- main.c -------------------------------------------------------- */

/*
 * getopt_long values of the options every command takes; each command's
 * option table ends with CLI_COMMON_OPTIONS and a zero entry.
 */
enum cli_common_opt {
	CLI_OPT_ENDPOINT = 1000,
	CLI_OPT_OUTPUT,
	CLI_OPT_REGION,
	CLI_OPT_CA_BUNDLE,
	CLI_OPT_HELP = 'h'
};

#define CLI_COMMON_OPTIONS                                                   \
	{ "endpoint", required_argument, NULL, CLI_OPT_ENDPOINT },           \
		{ "output", required_argument, NULL, CLI_OPT_OUTPUT },       \
		{ "region", required_argument, NULL, CLI_OPT_REGION },       \
		{ "ca-bundle", required_argument, NULL, CLI_OPT_CA_BUNDLE }, \
	{                                                                    \
		"help", no_argument, NULL, CLI_OPT_HELP                      \
	}

/*
 * Handles one getopt_long() result that is not the command's own: the
 * common options, unknown options and missing values (the option strings
 * start with ':' so that getopt reports those instead of printing). Returns
 * 0 when the option was consumed, -1 after printing --help (the caller then
 * exits with CLI_EXIT_OK), or CLI_EXIT_USAGE after printing the error and
 * cmd's usage (cmd NULL: the global usage).
 */
int cli_common_option(struct cli_ctx *ctx, const struct cli_cmd *cmd, int opt,
		      char **argv);

/*
 * Starts option parsing of a command's argv afresh (getopt keeps state
 * between calls).
 */
void cli_getopt_reset(void);

/*
 * Prints "trainctl: error: <msg>" and the usage of cmd (NULL: the global
 * usage) to stderr. Returns CLI_EXIT_USAGE.
 */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Looks a command up by name; NULL when unknown. */
const struct cli_cmd *cli_cmd_find(const char *name);

/* --- args.c: argument helpers and the error line ---------------- */

/* Prints "trainctl: error: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable vector of borrowed strings, for repeatable flags. */
struct cli_strv {
	const char **v;
	size_t n;
	size_t alloc;
};

#define CLI_STRV_INIT      \
	{                  \
		NULL, 0, 0 \
	}

/* Appends s (borrowed, not copied). */
void cli_strv_push(struct cli_strv *sv, const char *s);

/* Frees the array (not the strings) and empties sv. */
void cli_strv_release(struct cli_strv *sv);

/*
 * Parses a decimal integer in [min, max] from s (the whole string).
 * Returns 0, or ERR_INVALID leaving *out untouched.
 */
int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

/*
 * Parses a non-negative number of seconds ("30", "0.5") into milliseconds.
 * Returns 0 or ERR_INVALID.
 */
int cli_parse_seconds(const char *s, int64_t *ms_out);

/*
 * Reads the --cli-input-json argument into out (capped at CLI_MAX_INPUT):
 * "file://PATH" or a plain PATH is read from disk, "-" from stdin, and text
 * starting with '{' is taken as the document itself (as the aws CLI does).
 * Returns 0, or ERR_IO / ERR_TOOBIG with err naming the file.
 */
int cli_read_input(const char *arg, struct buf *out, struct buf *err);

/*
 * Formats epoch milliseconds for tables: "2025-01-31T12:00:00.123Z", or "-"
 * when ms is 0. Returns out.
 */
const char *cli_time(int64_t ms, char *out, size_t size);

/*
 * Parses "COMMAND NAME [common options]", what naming the argument in
 * errors ("job", "tuning job"). Returns 0 with *name_out set, -1 after
 * --help, or CLI_EXIT_USAGE.
 */
int cli_parse_name(struct cli_ctx *ctx, const struct cli_cmd *cmd, int argc,
		   char **argv, const char *what, const char **name_out);

struct cli_reply;

/*
 * A kind of object the API names in a request body ({"TrainingJobName":
 * NAME}, {"HyperParameterTuningJobName": NAME}); named.c.
 */
struct cli_named {
	const char *what; /* "job", "tuning job": the argument in messages */
	/* Writes the request body naming name; nonzero: an invalid name. */
	int (*build)(const char *name, struct buf *body);
	int usage_on_bad_name; /* an invalid name prints the global usage */
};

/*
 * Calls op with the body naming name. Returns cli_call()'s code, or
 * CLI_EXIT_USAGE (message printed) when the name is invalid.
 */
int cli_named_call(struct cli_ctx *ctx, const struct cli_named *kind,
		   const char *op, const char *name, struct cli_reply *reply);

/* Prints a reply in text form; nonzero (err says why) when malformed. */
typedef int cli_named_show_fn(const struct cli_reply *reply, struct buf *err);

/*
 * The whole of "COMMAND NAME [common options]" calling op: the JSON reply
 * with --output json, else show()'s text (nothing when show is NULL).
 */
int cli_named_cmd(struct cli_ctx *ctx, const struct cli_named *kind,
		  const char *op, cli_named_show_fn *show, int argc,
		  char **argv);

/*
 * A "Label            value" line of a describe command; nothing for an
 * empty value or a time of 0.
 */
void cli_print_field(const char *label, const char *value);
void cli_print_time_field(const char *label, int64_t ms);

/* Prints the TrainctlGoodput member of a Describe body, if it has one. */
void cli_goodput_print(const char *json, size_t len);

/*
 * The flags of the list commands (--status, --name-contains, --sort-by,
 * --sort-order, --max-results 1..100, --next-token, --all), parsed from
 * argv with the common options. Returns 0 with optind at the first
 * argument, -1 after --help, or CLI_EXIT_USAGE.
 */
struct cli_list_flags {
	const char *status;
	const char *name_contains;
	const char *sort_by;
	const char *sort_order;
	const char *next_token;
	int max_results; /* 0: the server's default */
	int all;	 /* every page */
};

int cli_parse_list_flags(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			 int argc, char **argv, struct cli_list_flags *f);

/* --- http.c: one SageMaker call -------------------------------------- */

/* What the server answered. */
struct cli_reply {
	long status;	   /* HTTP status */
	struct buf body;   /* response body, capped at CLI_MAX_RESPONSE */
	char *err_type;	   /* non-2xx: __type, "Unknown" when unparsable */
	char *err_message; /* non-2xx: message, may be "" */
};

#define CLI_REPLY_INIT                                        \
	{                                                     \
		0, BUF_INIT_MAX(CLI_MAX_RESPONSE), NULL, NULL \
	}

void cli_reply_release(struct cli_reply *reply);

/*
 * POSTs body to the endpoint as SageMaker.<op>, signed with SigV4 when
 * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set, retrying briefly on
 * throttling and 5xx like botocore. Returns 0 when the server answered
 * (whatever the status; reply is filled and the caller releases it), or
 * ERR_IO / ERR_TOOBIG when it did not, with err saying why.
 */
int cli_http_call(struct cli_ctx *ctx, const char *op, const struct buf *body,
		  struct cli_reply *reply, struct buf *err);

/*
 * GETs path (with its query, already encoded) from the endpoint's REST
 * face, signed like cli_http_call(). Returns as cli_http_call() does.
 */
int cli_http_get(struct cli_ctx *ctx, const char *path, struct cli_reply *reply,
		 struct buf *err);

/*
 * POSTs body (JSON) to path on the endpoint's REST face, signed like
 * cli_http_call(). Returns as cli_http_call() does.
 */
int cli_http_post(struct cli_ctx *ctx, const char *path, const struct buf *body,
		  struct cli_reply *reply, struct buf *err);

/* DELETEs path on the endpoint's REST face, as cli_http_get(). */
int cli_http_delete(struct cli_ctx *ctx, const char *path,
		    struct cli_reply *reply, struct buf *err);

/*
 * The exit status of a REST request that returned rc: 0 for a 2xx
 * answer, else the error is printed and CLI_EXIT_TRANSPORT or
 * CLI_EXIT_API returned.
 */
int cli_reply_status(int rc, const struct cli_reply *reply,
		     const struct buf *err);

/* Frees the connection kept in ctx. */
void cli_http_close(struct cli_ctx *ctx);

/*
 * The controller URL requests go to now. With several members in
 * --endpoint, that is the one that answered last: a request that cannot
 * connect to a member, or that a member answers 503 (no leader), goes on
 * to the next, since neither can have been carried out.
 */
const char *cli_endpoint(struct cli_ctx *ctx);

/*
 * cli_endpoint() for a client that talks to the member itself (the
 * embedded store's blob face): with several members, the first that
 * answers /healthz.
 */
const char *cli_endpoint_live(struct cli_ctx *ctx);

/* Whether list (--endpoint) names no empty member: 0, or -1 with err. */
int cli_endpoint_check(const char *list, struct buf *err);

/*
 * cli_http_call() for commands that simply fail on any error: prints the
 * error and returns CLI_EXIT_TRANSPORT or CLI_EXIT_API, or CLI_EXIT_OK with
 * reply filled on a 2xx answer. The caller releases reply in every case.
 */
int cli_call(struct cli_ctx *ctx, const char *op, const struct buf *body,
	     struct cli_reply *reply);

/*
 * Prints reply->body for --output json (pretty-printed when it is JSON).
 */
void cli_print_json(const struct cli_reply *reply);

/*
 * GET path and print the answer: as JSON for --output json, else as the
 * table table() makes of it (what names the answer in an error). Returns
 * the exit status.
 */
int cli_get_table(struct cli_ctx *ctx, const char *path,
		  int (*table)(const char *json, size_t len, struct buf *out,
			       struct buf *err),
		  const char *what);

/* --- jobdef.c: a training job's definition from flags ----------------- */

/*
 * getopt_long values of the definition flags. Each command's table names
 * the flags it takes with these values, so that one parser serves
 * create-training-job and create-tuning-job (which calls --hyperparameter
 * --static and --metric --metric-definition).
 */
enum cli_jobdef_opt {
	CLI_OPT_IMAGE = 2000,
	CLI_OPT_INSTANCE_TYPE,
	CLI_OPT_INSTANCE_COUNT,
	CLI_OPT_ROLE_ARN,
	CLI_OPT_OUTPUT_PATH,
	CLI_OPT_INPUT_MODE,
	CLI_OPT_ENVIRONMENT,
	CLI_OPT_CHANNEL,
	CLI_OPT_MAX_RUNTIME,
	CLI_OPT_VOLUME_SIZE,
	CLI_OPT_HYPERPARAMETER,
	CLI_OPT_METRIC,
	CLI_OPT_ENTRYPOINT,
	CLI_OPT_ARGUMENT
};

/* The definition flags both create commands take under the same names. */
#define CLI_JOBDEF_OPTIONS                                                     \
	{ "image", required_argument, NULL, CLI_OPT_IMAGE },                   \
		{ "instance-type", required_argument, NULL,                    \
		  CLI_OPT_INSTANCE_TYPE },                                     \
		{ "instance-count", required_argument, NULL,                   \
		  CLI_OPT_INSTANCE_COUNT },                                    \
		{ "role-arn", required_argument, NULL, CLI_OPT_ROLE_ARN },     \
		{ "output-path", required_argument, NULL,                      \
		  CLI_OPT_OUTPUT_PATH },                                       \
		{ "input-mode", required_argument, NULL, CLI_OPT_INPUT_MODE }, \
		{ "environment", required_argument, NULL,                      \
		  CLI_OPT_ENVIRONMENT },                                       \
		{ "channel", required_argument, NULL, CLI_OPT_CHANNEL },       \
		{ "max-runtime", required_argument, NULL,                      \
		  CLI_OPT_MAX_RUNTIME },                                       \
	{                                                                      \
		"volume-size", required_argument, NULL, CLI_OPT_VOLUME_SIZE    \
	}

/* The definition flags as given; the strings are borrowed from argv. */
struct cli_jobdef_args {
	struct api_client_create flags;
	struct cli_strv hp, env, channels, metrics, entrypoint, arguments;
};

/*
 * Takes one getopt_long() result (optarg) when it is a definition flag.
 * Returns 0 when taken, 1 when opt is not one, or CLI_EXIT_USAGE after
 * printing the error and cmd's usage.
 */
int cli_jobdef_option(const struct cli_cmd *cmd, int opt,
		      struct cli_jobdef_args *a);

/* Points a->flags at the repeatable flags; call after the last option. */
void cli_jobdef_finish(struct cli_jobdef_args *a);

/* Whether any definition flag was given. */
int cli_jobdef_given(const struct cli_jobdef_args *a);

/* Frees the vectors (not the borrowed strings). */
void cli_jobdef_release(struct cli_jobdef_args *a);

/* --- commands ---------------------------------------------------------- */

int cli_cmd_create(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_describe(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_list(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_stop(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_requeue(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_delete(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_wait(struct cli_ctx *ctx, int argc, char **argv);

/*
 * Follows job name until it ends (cmd_wait.c; create-training-job --wait
 * too): a line on stderr per status change, the final Describe on stdout
 * for --output json. timeout_ms 0: no limit; interval_ms <= 0: the
 * default, for a controller without long-polls. Returns the exit code:
 * CLI_EXIT_OK, _FAILED, _STOPPED, _TIMEOUT, _API or _TRANSPORT.
 */
int cli_wait_job(struct cli_ctx *ctx, const char *name, int64_t timeout_ms,
		 int64_t interval_ms);

/* cmd_tuning.c: the hyperparameter tuning job commands */
int cli_cmd_tuning_create(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tuning_describe(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tuning_list(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tuning_stop(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tuning_delete(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_tuning_children(struct cli_ctx *ctx, int argc, char **argv);

/*
 * Follows tuning job name until it ends (Completed, Stopped or Failed),
 * polling DescribeHyperParameterTuningJob every interval_ms (<= 0: 2 s): a
 * line on stderr whenever its status or training job counters change, the
 * final Describe on stdout for --output json. timeout_ms 0: no limit.
 * Returns the exit code as cli_wait_job() does.
 */
int cli_wait_tuning_job(struct cli_ctx *ctx, const char *name,
			int64_t timeout_ms, int64_t interval_ms);

/* cmd_upload.c: upload-source DIR --to URI */
int cli_cmd_upload_source(struct cli_ctx *ctx, int argc, char **argv);

/* cmd_cp.c: cp SRC DST [--recursive], ls URI, rm URI */
int cli_cmd_cp(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_ls(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_rm(struct cli_ctx *ctx, int argc, char **argv);

struct stor;

/*
 * Opens storage as trainctl sees it: S3 endpoint and keys from the
 * environment (TRAINCTL_S3_ENDPOINT / AWS_ENDPOINT_URL_S3, AWS_*), else
 * the embedded store through the controller's blob endpoint at
 * ctx->endpoint (TRAINCTL_BLOB_TOKEN), or its folder directly when
 * TRAINCTL_STATE_DIR is set. Returns 0 or an exit code after printing
 * the error.
 */
int cli_storage_open(struct cli_ctx *ctx, struct stor **out);

/* Maps a storage error code to trainctl's exit code. */
int cli_storage_exit(int ret);
int cli_cmd_logs(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_list_hosts(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_queue(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_members(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_list_images(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_prune_images(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_drain_host(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_undrain_host(struct cli_ctx *ctx, int argc, char **argv);
/* cmd_cluster.c: cluster up|down|status|env|exec (runs cluster.sh) */
int cli_cmd_cluster(struct cli_ctx *ctx, int argc, char **argv);

#endif
