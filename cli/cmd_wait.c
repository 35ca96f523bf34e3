#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/job_record.h"
#include "api/requests.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * wait NAME: follows the job until it reaches a terminal status, like `aws
 * sagemaker wait training-job-completed-or-stopped` but with an exit code
 * per outcome and a line on stderr per status change. It long-polls the
 * REST face (GET /v1/training-jobs/NAME?wait=S&etag=E answers as soon as
 * the job changes), so it returns within milliseconds of the job's end; a
 * controller that answers an unchanged job at once has no long-poll, and
 * then it polls every --interval.
 */

#define WAIT_DEFAULT_INTERVAL_MS 2000
/*
 * A controller restart should not end a long wait, so transport errors are
 * retried; this many in a row means the controller is gone.
 */
#define WAIT_MAX_TRANSPORT_ERRORS 5
/* Seconds one long-poll may wait on the controller (it caps them at 60). */
#define WAIT_POLL_S 30

enum wait_opt { OPT_TIMEOUT = 1, OPT_INTERVAL, OPT_TUNING_JOB };

static const struct option wait_opts[] = {
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "tuning-job", required_argument, NULL, OPT_TUNING_JOB },
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct wait_args {
	const char *name;
	const char *tuning;  /* --tuning-job: a tuning job's name instead */
	int64_t timeout_ms;  /* 0 = no limit */
	int64_t interval_ms; /* > 0 */
};

static int parse_wait_args(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			   int argc, char **argv, struct wait_args *a)
{
	int opt, rc;

	a->interval_ms = WAIT_DEFAULT_INTERVAL_MS;
	while ((opt = getopt_long(argc, argv, ":h", wait_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_TIMEOUT:
			if (cli_parse_seconds(optarg, &a->timeout_ms))
				return cli_usage_error(
					cmd,
					"invalid --timeout '%s': expected "
					"seconds",
					optarg);
			break;
		case OPT_INTERVAL:
			if (cli_parse_seconds(optarg, &a->interval_ms) ||
			    a->interval_ms < 10)
				return cli_usage_error(
					cmd,
					"invalid --interval '%s': expected "
					"seconds >= 0.01",
					optarg);
			break;
		case OPT_TUNING_JOB:
			if (!*optarg)
				return cli_usage_error(cmd,
						       "empty tuning job name");
			a->tuning = optarg;
			break;
		default:
			rc = cli_common_option(ctx, cmd, opt, argv);
			if (rc)
				return rc;
		}
	}
	if (a->tuning) {
		if (optind < argc)
			return cli_usage_error(cmd, "unexpected argument '%s'",
					       argv[optind]);
		return 0;
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "missing job name");
	if (optind + 1 < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind + 1]);
	a->name = argv[optind];
	return 0;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts))
		;
}

static int str_eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* Prints "trainctl: job 'x' InProgress/Training: message" to stderr. */
static void print_change(const struct api_job_record *r)
{
	const char *msg = NULL;

	if (r->n_transitions)
		msg = r->transitions[r->n_transitions - 1].message;
	fprintf(stderr, "trainctl: job '%s' %s/%s%s%s\n",
		r->name ? r->name : "?", r->status ? r->status : "-",
		r->secondary_status ? r->secondary_status : "-",
		msg && *msg ? ": " : "", msg && *msg ? msg : "");
}

/* Maps a terminal TrainingJobStatus to its exit code; -1 when not final. */
static int terminal_exit(const char *status)
{
	if (!status)
		return -1;
	if (!strcmp(status, "Completed"))
		return CLI_EXIT_OK;
	if (!strcmp(status, "Failed"))
		return CLI_EXIT_FAILED;
	if (!strcmp(status, "Stopped"))
		return CLI_EXIT_STOPPED;
	return -1;
}

/*
 * One poll. Returns -1 to keep waiting, or the exit code to end with.
 * *last_status / *last_secondary hold the previous poll's values (owned).
 */
struct poll_state {
	const char *name;
	char etag[17];	   /* of the last answer; "" before the first */
	int long_poll;	   /* the controller waits for changes */
	int64_t waited_ms; /* how long the last request took */
	int unchanged;	   /* the last answer equals the one before */
};

/* One Describe: a long-poll once a first answer is known. */
static int describe(struct cli_ctx *ctx, const struct buf *body,
		    struct poll_state *ps, int64_t wait_s,
		    struct cli_reply *reply, struct buf *err)
{
	struct buf path = BUF_INIT;
	int64_t t0 = time_mono_ms();
	char etag[17];
	int ret;

	if (!ps->long_poll || !ps->etag[0] || wait_s <= 0) {
		ret = cli_http_call(ctx, "DescribeTrainingJob", body, reply,
				    err);
	} else {
		/* Parameters sorted: libcurl signs the query as sent, and
		 * SigV4 canonicalizes it sorted. */
		(void)buf_addf(&path, "/v1/training-jobs/%s?etag=%s&wait=%lld",
			       ps->name, ps->etag, (long long)wait_s);
		ret = cli_http_get(ctx, path.data, reply, err);
	}
	ps->waited_ms = time_mono_ms() - t0;
	buf_release(&path);
	if (ret || reply->status != 200)
		return ret;
	api_body_etag(reply->body.data, reply->body.len, etag);
	ps->unchanged = !strcmp(etag, ps->etag);
	/* The same answer long before the wait ran out: no long-poll. */
	if (ps->unchanged && ps->long_poll && wait_s > 0 &&
	    ps->waited_ms < wait_s * 500)
		ps->long_poll = 0;
	memcpy(ps->etag, etag, sizeof(etag));
	return 0;
}

static int poll_once(struct cli_ctx *ctx, const struct buf *body,
		     struct poll_state *ps, int64_t wait_s, char **last_status,
		     char **last_secondary, int *transport_errors)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct api_job_record rec;
	struct buf err = BUF_INIT;
	int rc = -1;

	if (describe(ctx, body, ps, wait_s, &reply, &err)) {
		if (++*transport_errors >= WAIT_MAX_TRANSPORT_ERRORS) {
			cli_error("%s", err.data);
			rc = CLI_EXIT_TRANSPORT;
		}
		goto out;
	}
	*transport_errors = 0;
	if (reply.status < 200 || reply.status > 299) {
		if (*reply.err_message)
			cli_error("%s: %s", reply.err_type, reply.err_message);
		else
			cli_error("%s", reply.err_type);
		rc = CLI_EXIT_API;
		goto out;
	}
	if (api_job_record_from_json(reply.body.data, reply.body.len, &rec,
				     &err)) {
		cli_error("malformed response: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	if (!str_eq(rec.status, *last_status) ||
	    !str_eq(rec.secondary_status, *last_secondary)) {
		print_change(&rec);
		free(*last_status);
		free(*last_secondary);
		*last_status = xstrdup(rec.status ? rec.status : "");
		*last_secondary = xstrdup(
			rec.secondary_status ? rec.secondary_status : "");
	}
	rc = terminal_exit(rec.status);
	if (rc == CLI_EXIT_FAILED && rec.failure_reason)
		cli_error("job '%s' failed: %s", rec.name ? rec.name : "?",
			  rec.failure_reason);
	if (rc >= 0 && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
	api_job_record_release(&rec);
out:
	buf_release(&err);
	cli_reply_release(&reply);
	return rc;
}

int cli_wait_job(struct cli_ctx *ctx, const char *name, int64_t timeout_ms,
		 int64_t interval_ms)
{
	struct poll_state ps = { 0 };
	struct buf body = BUF_INIT;
	char *last_status = NULL, *last_secondary = NULL;
	int64_t deadline;
	int transport_errors = 0;
	int rc;

	if (api_name_request_build(name, &body)) {
		buf_release(&body);
		cli_error("invalid job name '%s'", name);
		return CLI_EXIT_USAGE;
	}
	if (interval_ms <= 0)
		interval_ms = WAIT_DEFAULT_INTERVAL_MS;
	deadline = timeout_ms ? time_mono_ms() + timeout_ms : 0;
	ps.name = name;
	ps.long_poll = 1;
	for (;;) {
		int64_t now = time_mono_ms(), pause = interval_ms;
		int64_t wait_s = WAIT_POLL_S;

		if (deadline && (deadline - now) / 1000 < wait_s)
			wait_s = (deadline - now) / 1000;
		rc = poll_once(ctx, &body, &ps, wait_s, &last_status,
			       &last_secondary, &transport_errors);
		if (rc >= 0)
			break;
		now = time_mono_ms();
		if (deadline && now >= deadline) {
			cli_error("timed out waiting for job '%s' (status %s)",
				  name, last_status ? last_status : "unknown");
			rc = CLI_EXIT_TIMEOUT;
			break;
		}
		if (deadline && deadline - now < pause)
			pause = deadline - now;
		/* A long-poll came back because something changed, or its
		 * time ran out: ask again at once. */
		if (!ps.long_poll || transport_errors || wait_s <= 0)
			sleep_ms(pause);
	}
	free(last_status);
	free(last_secondary);
	buf_release(&body);
	return rc;
}

int cli_cmd_wait(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct wait_args a = { 0 };
	struct buf body = BUF_INIT;
	int rc;

	rc = parse_wait_args(ctx, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (a.tuning)
		return cli_wait_tuning_job(ctx, a.tuning, a.timeout_ms,
					   a.interval_ms);
	if (api_name_request_build(a.name, &body)) {
		buf_release(&body);
		return cli_usage_error(cmd, "invalid job name '%s'", a.name);
	}
	buf_release(&body);
	return cli_wait_job(ctx, a.name, a.timeout_ms, a.interval_ms);
}
