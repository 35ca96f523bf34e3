#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/client.h"
#include "api/tuning_reply.h"
#include "api/tuning_req.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The hyperparameter tuning job commands: create-tuning-job,
 * describe-tuning-job, list-tuning-jobs, stop-tuning-job,
 * delete-tuning-job, list-tuning-job-training-jobs and `wait --tuning-job`.
 * Each sends SageMaker's JSON 1.1 requests of the same names, so the same
 * commands work against the service.
 */

#define TUNING_WAIT_DEFAULT_INTERVAL_MS 2000
/* As cmd_wait.c: a controller restart should not end a long wait. */
#define TUNING_WAIT_MAX_TRANSPORT_ERRORS 5
/* Upper bound on pages followed, in case a server loops. */
#define TUNING_MAX_PAGES 100000

/* --- helpers ------------------------------------------------------- */

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

/* Sends {"HyperParameterTuningJobName": name} as op. */
static const struct cli_named tuning_job = {
	.what = "tuning job",
	.build = api_tuning_name_request_build,
};

/* "0.1234" of a final objective metric, "-" when it has no value. */
static void objective_text(const struct api_tuning_child *c, char *out,
			   size_t size)
{
	if (!c || !c->has_value) {
		snprintf(out, size, "-");
		return;
	}
	snprintf(out, size, "%.6g", c->value);
}

/* "x=0.3, kind=good" of TunedHyperParameters, names sorted as given. */
static void tuned_text(const struct api_tuning_child *c, struct buf *out)
{
	size_t i;

	for (i = 0; i < c->n_tuned; i++)
		if (buf_addf(out, "%s%s=%s", out->len ? ", " : "",
			     c->tuned[i].name, or_dash(c->tuned[i].value)))
			BUG("unbounded buffer refused a string");
	if (!out->len && buf_adds(out, "-"))
		BUG("unbounded buffer refused a string");
}

/* --- create-tuning-job -------------------------------------------------- */

enum tuning_create_opt {
	OPT_STRATEGY = 1,
	OPT_OBJECTIVE,
	OPT_MAX_JOBS,
	OPT_MAX_PARALLEL,
	OPT_EARLY_STOPPING,
	OPT_PARAM,
	OPT_RANDOM_SEED,
	OPT_INPUT_JSON,
	OPT_WAIT
};

static const struct option tuning_create_opts[] = {
	{ "strategy", required_argument, NULL, OPT_STRATEGY },
	{ "objective", required_argument, NULL, OPT_OBJECTIVE },
	{ "max-jobs", required_argument, NULL, OPT_MAX_JOBS },
	{ "max-parallel", required_argument, NULL, OPT_MAX_PARALLEL },
	{ "early-stopping", required_argument, NULL, OPT_EARLY_STOPPING },
	{ "param", required_argument, NULL, OPT_PARAM },
	{ "random-seed", required_argument, NULL, OPT_RANDOM_SEED },
	{ "cli-input-json", required_argument, NULL, OPT_INPUT_JSON },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "static", required_argument, NULL, CLI_OPT_HYPERPARAMETER },
	{ "metric-definition", required_argument, NULL, CLI_OPT_METRIC },
	CLI_JOBDEF_OPTIONS,
	CLI_COMMON_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct tuning_create_args {
	struct api_tuning_flags flags;
	struct cli_jobdef_args def;
	struct cli_strv params;
	const char *input_json;
	int wait;
};

static int parse_create(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			int argc, char **argv, struct api_tuning_flags *f,
			struct cli_jobdef_args *def, struct cli_strv *params,
			const char **input_json, int *wait)
{
	int64_t v;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, ":h", tuning_create_opts,
				  NULL)) != -1) {
		switch (opt) {
		case OPT_STRATEGY:
			f->strategy = optarg;
			break;
		case OPT_OBJECTIVE:
			f->objective = optarg;
			break;
		case OPT_MAX_JOBS:
			if (cli_parse_int(optarg, 1, 100000, &v))
				return cli_usage_error(
					cmd,
					"invalid --max-jobs '%s': expected a "
					"positive integer",
					optarg);
			f->max_jobs = (int)v;
			break;
		case OPT_MAX_PARALLEL:
			if (cli_parse_int(optarg, 1, 100000, &v))
				return cli_usage_error(
					cmd,
					"invalid --max-parallel '%s': "
					"expected a positive integer",
					optarg);
			f->max_parallel = (int)v;
			break;
		case OPT_EARLY_STOPPING:
			f->early_stopping = optarg;
			break;
		case OPT_PARAM:
			cli_strv_push(params, optarg);
			break;
		case OPT_RANDOM_SEED:
			if (cli_parse_int(optarg, 0, INT32_MAX, &v))
				return cli_usage_error(
					cmd,
					"invalid --random-seed '%s': "
					"expected an integer >= 0",
					optarg);
			f->has_seed = 1;
			f->seed = v;
			break;
		case OPT_INPUT_JSON:
			*input_json = optarg;
			break;
		case OPT_WAIT:
			*wait = 1;
			break;
		default:
			rc = cli_jobdef_option(cmd, opt, def);
			if (rc == 1)
				rc = cli_common_option(ctx, cmd, opt, argv);
			if (rc)
				return rc;
		}
	}
	if (optind < argc)
		f->name = argv[optind++];
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	if (f->name && !*f->name)
		return cli_usage_error(cmd, "empty tuning job name");
	cli_jobdef_finish(def);
	f->def = &def->flags;
	f->def_given = cli_jobdef_given(def);
	f->params = params->v;
	f->n_params = params->n;
	return 0;
}

int cli_cmd_tuning_create(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct tuning_create_args a = { 0 };
	struct buf input = BUF_INIT_MAX(CLI_MAX_INPUT);
	struct buf body = BUF_INIT;
	struct buf err = BUF_INIT;
	struct cli_reply reply = CLI_REPLY_INIT;
	char *arn = NULL, *name = NULL;
	int rc;

	rc = parse_create(ctx, cmd, argc, argv, &a.flags, &a.def, &a.params,
			  &a.input_json, &a.wait);
	if (rc) {
		rc = rc < 0 ? CLI_EXIT_OK : rc;
		goto out;
	}
	if (a.input_json && cli_read_input(a.input_json, &input, &err)) {
		rc = cli_usage_error(cmd, "--cli-input-json: %s", err.data);
		goto out;
	}
	if (api_tuning_request_build(&a.flags, a.input_json ? input.data : NULL,
				     input.len, &body, &err)) {
		rc = cli_usage_error(cmd, "%s", err.data);
		goto out;
	}
	rc = cli_call(ctx, "CreateHyperParameterTuningJob", &body, &reply);
	if (rc)
		goto out;
	if (api_tuning_create_response_parse(reply.body.data, reply.body.len,
					     &arn, &err)) {
		cli_error("malformed response: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	if (ctx->output != CLI_OUTPUT_JSON)
		printf("%s\n", arn);
	else if (!a.wait)
		cli_print_json(&reply);
	if (a.wait) {
		name = api_tuning_request_name(body.data, body.len);
		(void)fflush(stdout);
		rc = cli_wait_tuning_job(ctx, name, 0, 0);
	}
out:
	free(name);
	free(arn);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
	buf_release(&input);
	cli_strv_release(&a.params);
	cli_jobdef_release(&a.def);
	return rc;
}

/* --- describe, stop, delete ----------------------------------------------- */

/* "2 completed, 1 in progress, ..." of TrainingJobStatusCounters. */
static void counters_text(const struct api_tuning_counters *c, struct buf *out)
{
	if (buf_addf(out,
		     "%d completed, %d in progress, %d stopped, "
		     "%d retryable errors, %d non-retryable errors",
		     c->completed, c->in_progress, c->stopped,
		     c->retryable_error, c->non_retryable_error))
		BUG("unbounded buffer refused a string");
}

static void print_tuning(const struct api_tuning_desc *d)
{
	struct buf line = BUF_INIT;
	char v[64];

	cli_print_field("Name:", d->name);
	cli_print_field("ARN:", d->arn);
	cli_print_field("Status:", d->status);
	cli_print_field("Strategy:", d->strategy);
	if (d->has_objective) {
		(void)buf_addf(&line, "%s %s", or_dash(d->objective_type),
			       or_dash(d->objective_metric));
		cli_print_field("Objective:", line.data);
	}
	buf_reset(&line);
	(void)buf_addf(&line, "max %d, %d in parallel", d->max_jobs,
		       d->max_parallel);
	cli_print_field("Limits:", line.data);
	buf_reset(&line);
	counters_text(&d->jobs, &line);
	cli_print_field("Training jobs:", line.data);
	buf_reset(&line);
	(void)buf_addf(&line, "%d succeeded, %d pending, %d failed",
		       d->objectives_succeeded, d->objectives_pending,
		       d->objectives_failed);
	cli_print_field("Objectives:", line.data);
	if (d->best) {
		objective_text(d->best, v, sizeof(v));
		buf_reset(&line);
		(void)buf_addf(&line, "%s (%s %s)", or_dash(d->best->name),
			       or_dash(d->best->metric_name), v);
		cli_print_field("Best job:", line.data);
		buf_reset(&line);
		tuned_text(d->best, &line);
		cli_print_field("Best values:", line.data);
	}
	cli_print_field("Failure reason:", d->failure_reason);
	cli_print_time_field("Created:", d->creation_ms);
	cli_print_time_field("Ended:", d->end_ms);
	cli_print_time_field("Last modified:", d->last_modified_ms);
	buf_release(&line);
}

static int show_tuning(const struct cli_reply *reply, struct buf *err)
{
	struct api_tuning_desc d;

	if (api_tuning_desc_parse(reply->body.data, reply->body.len, &d, err))
		return -1;
	print_tuning(&d);
	api_tuning_desc_release(&d);
	return 0;
}

int cli_cmd_tuning_describe(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &tuning_job,
			     "DescribeHyperParameterTuningJob", show_tuning,
			     argc, argv);
}

int cli_cmd_tuning_stop(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &tuning_job, "StopHyperParameterTuningJob",
			     NULL, argc, argv);
}

int cli_cmd_tuning_delete(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &tuning_job, "DeleteHyperParameterTuningJob",
			     NULL, argc, argv);
}

/* --- the two lists ----------------------------------------------------------
 */

/* Both lists' flags; children: list-tuning-job-training-jobs. */
struct list_args {
	const char *tuning; /* children: the tuning job */
	const char *status, *name_contains, *sort_by, *sort_order, *token;
	int max_results, all, children;
};

static int one_of(const char *v, const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++)
		if (!strcmp(v, names[i]))
			return 1;
	return 0;
}

static int parse_list(struct cli_ctx *ctx, const struct cli_cmd *cmd, int argc,
		      char **argv, struct list_args *a)
{
	static const char *const tuning_statuses[] = {
		"Completed", "InProgress", "Failed",	   "Stopped",
		"Stopping",  "Deleting",   "DeleteFailed", NULL
	};
	static const char *const job_statuses[] = { "InProgress", "Completed",
						    "Failed",	  "Stopping",
						    "Stopped",	  NULL };
	static const char *const tuning_sorts[] = { "Name", "Status",
						    "CreationTime", NULL };
	static const char *const job_sorts[] = { "Name", "CreationTime",
						 "Status",
						 "FinalObjectiveMetricValue",
						 NULL };
	static const char *const orders[] = { "Ascending", "Descending", NULL };
	struct cli_list_flags f = { 0 };
	int rc = cli_parse_list_flags(ctx, cmd, argc, argv, &f);

	if (rc)
		return rc;
	if (f.status &&
	    !one_of(f.status, a->children ? job_statuses : tuning_statuses))
		return cli_usage_error(cmd, "invalid --status '%s'", f.status);
	if (f.name_contains && a->children)
		return cli_usage_error(cmd, "unknown option '--name-contains'");
	if (f.sort_by &&
	    !one_of(f.sort_by, a->children ? job_sorts : tuning_sorts))
		return cli_usage_error(cmd, "invalid --sort-by '%s'",
				       f.sort_by);
	if (f.sort_order && !one_of(f.sort_order, orders))
		return cli_usage_error(cmd,
				       "invalid --sort-order '%s': expected "
				       "Ascending or Descending",
				       f.sort_order);
	a->status = f.status;
	a->name_contains = f.name_contains;
	a->sort_by = f.sort_by;
	a->sort_order = f.sort_order;
	a->max_results = f.max_results;
	a->token = f.next_token;
	a->all = f.all;
	if (a->children) {
		if (optind >= argc)
			return cli_usage_error(cmd, "missing tuning job name");
		a->tuning = argv[optind++];
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	return 0;
}

/* The request of one page. */
static void list_body(const struct list_args *a, const char *token,
		      struct buf *out)
{
	struct api_tuning_list_query q = {
		.tuning = a->tuning,
		.status_equals = a->status,
		.name_contains = a->name_contains,
		.sort_by = a->sort_by,
		.sort_order = a->sort_order,
		.max_results = a->max_results,
	};

	api_tuning_list_request_build(&q, token, out);
}

/*
 * Calls op page by page (every page with --all, else one) and gathers the
 * member arrays into doc, as {"<member>": [...], "NextToken"}. Returns an
 * exit code; *token_out is the NextToken left (owned) when pages remain.
 */
static int list_pages(struct cli_ctx *ctx, const struct list_args *a,
		      const char *op, const char *member, struct buf *doc,
		      char **token_out)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf body = BUF_INIT, items = BUF_INIT, err = BUF_INIT;
	char *token = a->token ? xstrdup(a->token) : NULL;
	int pages = 0, rc = 0;

	for (;;) {
		char *next = NULL;

		list_body(a, token, &body);
		rc = cli_call(ctx, op, &body, &reply);
		if (rc)
			break;
		if (api_tuning_page_read(reply.body.data, reply.body.len,
					 member, &items, &next, &err)) {
			cli_error("malformed response: %s", err.data);
			rc = CLI_EXIT_TRANSPORT;
			break;
		}
		free(token);
		token = next;
		if (!a->all || !token || ++pages >= TUNING_MAX_PAGES)
			break;
	}
	if (!rc && api_tuning_list_doc_build(member, items.data, token, doc))
		BUG("cannot join the pages read");
	cli_reply_release(&reply);
	buf_release(&body);
	buf_release(&items);
	buf_release(&err);
	if (rc) {
		free(token);
		return rc;
	}
	*token_out = token;
	return 0;
}

/* --output json of a gathered list: {"<member>": [...], "NextToken"}. */
static void print_doc_json(const struct buf *doc)
{
	struct cli_reply out = CLI_REPLY_INIT;

	if (buf_add(&out.body, doc->data, doc->len))
		BUG("cannot copy a gathered list");
	cli_print_json(&out);
	cli_reply_release(&out);
}

static size_t wider(const char *s, size_t w)
{
	size_t n = strlen(or_dash(s));

	return n > w ? n : w;
}

/* The best objective of a tuning job, from its Describe ("-" if none). */
static void best_of(struct cli_ctx *ctx, const char *name, char *out,
		    size_t size)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf body = BUF_INIT, err = BUF_INIT;
	struct api_tuning_desc d;

	snprintf(out, size, "-");
	if (api_tuning_name_request_build(name, &body))
		return;
	if (!cli_http_call(ctx, "DescribeHyperParameterTuningJob", &body,
			   &reply, &err) &&
	    reply.status == 200 &&
	    !api_tuning_desc_parse(reply.body.data, reply.body.len, &d, &err)) {
		objective_text(d.best, out, size);
		api_tuning_desc_release(&d);
	}
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
}

/*
 * The tuning jobs' table. The summaries lack the best objective, so each
 * row costs a Describe: one page is at most 100 rows.
 */
static void print_tuning_table(struct cli_ctx *ctx,
			       const struct api_tuning_summary *items, size_t n)
{
	size_t wn = 4, ws = 6, wt = 8, i;
	char(*best)[32] = xcalloc(n ? n : 1, sizeof(*best));
	char(*jobs)[32] = xcalloc(n ? n : 1, sizeof(*jobs));
	char t[40];

	for (i = 0; i < n; i++) {
		const struct api_tuning_summary *s = &items[i];
		const struct api_tuning_counters *c = &s->jobs;
		int total = s->max_jobs;

		if (!total)
			total = c->completed + c->in_progress + c->stopped +
				c->retryable_error + c->non_retryable_error;
		snprintf(jobs[i], sizeof(jobs[i]), "%d/%d", c->completed,
			 total);
		best_of(ctx, or_dash(s->name), best[i], sizeof(best[i]));
		wn = wider(s->name, wn);
		ws = wider(s->status, ws);
		wt = wider(s->strategy, wt);
	}
	printf("%-*s  %-*s  %-*s  %-9s  %-12s  %s\n", (int)wn, "NAME", (int)ws,
	       "STATUS", (int)wt, "STRATEGY", "COMPLETED", "BEST", "CREATED");
	for (i = 0; i < n; i++) {
		const struct api_tuning_summary *s = &items[i];

		printf("%-*s  %-*s  %-*s  %-9s  %-12s  %s\n", (int)wn,
		       or_dash(s->name), (int)ws, or_dash(s->status), (int)wt,
		       or_dash(s->strategy), jobs[i], best[i],
		       cli_time(s->creation_ms, t, sizeof(t)));
	}
	free(best);
	free(jobs);
}

int cli_cmd_tuning_list(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct list_args a = { 0 };
	struct buf doc = BUF_INIT, err = BUF_INIT;
	struct api_tuning_summary *items = NULL;
	size_t n = 0;
	char *token = NULL;
	int rc;

	rc = parse_list(ctx, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = list_pages(ctx, &a, "ListHyperParameterTuningJobs",
			"HyperParameterTuningJobSummaries", &doc, &token);
	if (rc)
		goto out;
	if (ctx->output == CLI_OUTPUT_JSON) {
		print_doc_json(&doc);
	} else {
		if (api_tuning_summaries_parse(doc.data, doc.len, &items, &n,
					       &err))
			BUG("cannot read the pages joined");
		print_tuning_table(ctx, items, n);
		if (token)
			fprintf(stderr,
				"trainctl: more tuning jobs: --next-token %s "
				"or --all\n",
				token);
	}
out:
	api_tuning_summaries_free(items, n);
	buf_release(&doc);
	buf_release(&err);
	free(token);
	return rc;
}

static void print_children_table(const struct api_tuning_child *items, size_t n)
{
	size_t wn = 4, ws = 6, wo = 9, i;
	char v[64];

	for (i = 0; i < n; i++) {
		wn = wider(items[i].name, wn);
		ws = wider(items[i].status, ws);
	}
	printf("%-*s  %-*s  %-12s  %-*s  %s\n", (int)wn, "NAME", (int)ws,
	       "STATUS", "OBJECTIVE", (int)wo, "OBJ-STATUS", "HYPERPARAMETERS");
	for (i = 0; i < n; i++) {
		const struct api_tuning_child *s = &items[i];
		struct buf hp = BUF_INIT;

		objective_text(s, v, sizeof(v));
		tuned_text(s, &hp);
		printf("%-*s  %-*s  %-12s  %-*s  %s\n", (int)wn,
		       or_dash(s->name), (int)ws, or_dash(s->status), v,
		       (int)wo + 1, or_dash(s->objective_status), hp.data);
		buf_release(&hp);
	}
}

int cli_cmd_tuning_children(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct list_args a = { 0 };
	struct buf doc = BUF_INIT, err = BUF_INIT;
	struct api_tuning_child *items = NULL;
	size_t n = 0;
	char *token = NULL;
	int rc;

	a.children = 1;
	rc = parse_list(ctx, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = list_pages(ctx, &a, "ListTrainingJobsForHyperParameterTuningJob",
			"TrainingJobSummaries", &doc, &token);
	if (rc)
		goto out;
	if (ctx->output == CLI_OUTPUT_JSON) {
		print_doc_json(&doc);
	} else {
		if (api_tuning_children_parse(doc.data, doc.len, &items, &n,
					      &err))
			BUG("cannot read the pages joined");
		print_children_table(items, n);
		if (token)
			fprintf(stderr,
				"trainctl: more training jobs: --next-token "
				"%s or --all\n",
				token);
	}
out:
	api_tuning_children_free(items, n);
	buf_release(&doc);
	buf_release(&err);
	free(token);
	return rc;
}

/* --- wait --tuning-job ------------------------------------------------------
 */

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

/* One Describe: -1 to keep waiting, else the exit code to end with. */
static int tuning_poll(struct cli_ctx *ctx, const struct buf *body,
		       struct buf *last, int *transport_errors)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, line = BUF_INIT;
	struct api_tuning_desc d = { 0 };
	const char *status;
	int rc = -1;

	if (cli_http_call(ctx, "DescribeHyperParameterTuningJob", body, &reply,
			  &err)) {
		if (++*transport_errors >= TUNING_WAIT_MAX_TRANSPORT_ERRORS) {
			cli_error("%s", err.data);
			rc = CLI_EXIT_TRANSPORT;
		}
		goto out;
	}
	*transport_errors = 0;
	if (reply.status < 200 || reply.status > 299) {
		if (reply.err_message && *reply.err_message)
			cli_error("%s: %s", reply.err_type, reply.err_message);
		else
			cli_error("%s", reply.err_type);
		rc = CLI_EXIT_API;
		goto out;
	}
	if (api_tuning_desc_parse(reply.body.data, reply.body.len, &d, &err)) {
		cli_error("malformed response: %s", err.data);
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	status = or_dash(d.status);
	(void)buf_addf(&line, "trainctl: tuning job '%s' %s: ", or_dash(d.name),
		       status);
	counters_text(&d.jobs, &line);
	if (strcmp(line.data, last->data)) {
		fprintf(stderr, "%s\n", line.data);
		buf_reset(last);
		(void)buf_adds(last, line.data);
	}
	if (!strcmp(status, "Completed"))
		rc = CLI_EXIT_OK;
	else if (!strcmp(status, "Failed"))
		rc = CLI_EXIT_FAILED;
	else if (!strcmp(status, "Stopped"))
		rc = CLI_EXIT_STOPPED;
	if (rc == CLI_EXIT_FAILED && d.failure_reason)
		cli_error("tuning job '%s' failed: %s", or_dash(d.name),
			  d.failure_reason);
	if (rc >= 0 && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
out:
	api_tuning_desc_release(&d);
	buf_release(&line);
	buf_release(&err);
	cli_reply_release(&reply);
	return rc;
}

int cli_wait_tuning_job(struct cli_ctx *ctx, const char *name,
			int64_t timeout_ms, int64_t interval_ms)
{
	struct buf body = BUF_INIT, last = BUF_INIT;
	int64_t deadline, now;
	int transport_errors = 0, rc;

	if (!name || api_tuning_name_request_build(name, &body)) {
		cli_error("invalid tuning job name '%s'", or_dash(name));
		buf_release(&body);
		return CLI_EXIT_USAGE;
	}
	if (interval_ms <= 0)
		interval_ms = TUNING_WAIT_DEFAULT_INTERVAL_MS;
	deadline = timeout_ms ? time_mono_ms() + timeout_ms : 0;
	for (;;) {
		int64_t pause = interval_ms;

		rc = tuning_poll(ctx, &body, &last, &transport_errors);
		if (rc >= 0)
			break;
		now = time_mono_ms();
		if (deadline && now >= deadline) {
			cli_error("timed out waiting for tuning job '%s'",
				  name);
			rc = CLI_EXIT_TIMEOUT;
			break;
		}
		if (deadline && deadline - now < pause)
			pause = deadline - now;
		sleep_ms(pause);
	}
	buf_release(&last);
	buf_release(&body);
	return rc;
}
