#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/client.h"
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

/* --- JSON helpers ---------------------------------------------------- */

static const char *str_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

/* A JSON 1.1 timestamp (epoch seconds) as epoch milliseconds; 0 if none. */
static int64_t ms_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		return 0;
	return (int64_t)llround(json_number_value(v) * 1000.0);
}

static int int_of(json_t *o, const char *key)
{
	return (int)json_integer_value(json_object_get(o, key));
}

/* Loads a reply's JSON object; NULL after printing the error. */
static json_t *reply_json(const struct cli_reply *reply)
{
	json_error_t je;
	json_t *root = json_loadb(reply->body.data, reply->body.len, 0, &je);

	if (!json_is_object(root)) {
		json_decref(root);
		cli_error("malformed response: %s", je.text);
		return NULL;
	}
	return root;
}

/* Appends the compact JSON of v to out. */
static void dump_to(json_t *v, struct buf *out)
{
	char *s = json_dumps(v, JSON_COMPACT);

	if (!s || buf_adds(out, s))
		BUG("cannot serialise a parsed document");
	free(s);
}

/* Sends {"HyperParameterTuningJobName": name} as op. */
static int tuning_name_call(struct cli_ctx *ctx, const char *op,
			    const char *name, struct cli_reply *reply)
{
	json_t *req = json_pack("{s:s}", "HyperParameterTuningJobName", name);
	struct buf body = BUF_INIT;
	int rc;

	if (!req) {
		cli_error("invalid tuning job name '%s'", name);
		return CLI_EXIT_USAGE;
	}
	dump_to(req, &body);
	json_decref(req);
	rc = cli_call(ctx, op, &body, reply);
	buf_release(&body);
	return rc;
}

/* "loss 0.1234" of a FinalHyperParameterTuningJobObjectiveMetric. */
static void objective_text(json_t *m, char *out, size_t size)
{
	json_t *v = json_object_get(m, "Value");

	if (!json_is_number(v)) {
		snprintf(out, size, "-");
		return;
	}
	snprintf(out, size, "%.6g", json_number_value(v));
}

/* "x=0.3, kind=good" of TunedHyperParameters, names sorted as given. */
static void tuned_text(json_t *hp, struct buf *out)
{
	const char *k;
	json_t *v;

	json_object_foreach(hp, k, v)
	{
		if (buf_addf(out, "%s%s=%s", out->len ? ", " : "", k,
			     or_dash(json_string_value(v))))
			BUG("unbounded buffer refused a string");
	}
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
	json_t *resp = NULL, *req = NULL;
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
	resp = reply_json(&reply);
	if (!resp || !str_of(resp, "HyperParameterTuningJobArn")) {
		if (resp)
			cli_error("malformed response: no "
				  "HyperParameterTuningJobArn");
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	if (ctx->output != CLI_OUTPUT_JSON)
		printf("%s\n", str_of(resp, "HyperParameterTuningJobArn"));
	else if (!a.wait)
		cli_print_json(&reply);
	if (a.wait) {
		req = json_loadb(body.data, body.len, 0, NULL);
		(void)fflush(stdout);
		rc = cli_wait_tuning_job(
			ctx, str_of(req, "HyperParameterTuningJobName"), 0, 0);
	}
out:
	json_decref(req);
	json_decref(resp);
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
static void counters_text(json_t *c, struct buf *out)
{
	static const char *const keys[] = { "Completed", "InProgress",
					    "Stopped", "RetryableError",
					    "NonRetryableError" };
	static const char *const labels[] = { "completed", "in progress",
					      "stopped", "retryable errors",
					      "non-retryable errors" };
	size_t i;

	for (i = 0; i < 5; i++)
		if (buf_addf(out, "%s%d %s", i ? ", " : "", int_of(c, keys[i]),
			     labels[i]))
			BUG("unbounded buffer refused a string");
}

static void print_tuning(json_t *d)
{
	json_t *cfg = json_object_get(d, "HyperParameterTuningJobConfig");
	json_t *obj = json_object_get(cfg, "HyperParameterTuningJobObjective");
	json_t *lim = json_object_get(cfg, "ResourceLimits");
	json_t *oc = json_object_get(d, "ObjectiveStatusCounters");
	json_t *best = json_object_get(d, "BestTrainingJob");
	struct buf line = BUF_INIT;
	char v[64];

	cli_print_field("Name:", str_of(d, "HyperParameterTuningJobName"));
	cli_print_field("ARN:", str_of(d, "HyperParameterTuningJobArn"));
	cli_print_field("Status:", str_of(d, "HyperParameterTuningJobStatus"));
	cli_print_field("Strategy:", str_of(cfg, "Strategy"));
	if (obj) {
		(void)buf_addf(&line, "%s %s", or_dash(str_of(obj, "Type")),
			       or_dash(str_of(obj, "MetricName")));
		cli_print_field("Objective:", line.data);
	}
	buf_reset(&line);
	(void)buf_addf(&line, "max %d, %d in parallel",
		       int_of(lim, "MaxNumberOfTrainingJobs"),
		       int_of(lim, "MaxParallelTrainingJobs"));
	cli_print_field("Limits:", line.data);
	buf_reset(&line);
	counters_text(json_object_get(d, "TrainingJobStatusCounters"), &line);
	cli_print_field("Training jobs:", line.data);
	buf_reset(&line);
	(void)buf_addf(&line, "%d succeeded, %d pending, %d failed",
		       int_of(oc, "Succeeded"), int_of(oc, "Pending"),
		       int_of(oc, "Failed"));
	cli_print_field("Objectives:", line.data);
	if (best) {
		json_t *m = json_object_get(
			best, "FinalHyperParameterTuningJobObjectiveMetric");

		objective_text(m, v, sizeof(v));
		buf_reset(&line);
		(void)buf_addf(&line, "%s (%s %s)",
			       or_dash(str_of(best, "TrainingJobName")),
			       or_dash(str_of(m, "MetricName")), v);
		cli_print_field("Best job:", line.data);
		buf_reset(&line);
		tuned_text(json_object_get(best, "TunedHyperParameters"),
			   &line);
		cli_print_field("Best values:", line.data);
	}
	cli_print_field("Failure reason:", str_of(d, "FailureReason"));
	cli_print_time_field("Created:", ms_of(d, "CreationTime"));
	cli_print_time_field("Ended:", ms_of(d, "HyperParameterTuningEndTime"));
	cli_print_time_field("Last modified:", ms_of(d, "LastModifiedTime"));
	buf_release(&line);
}

int cli_cmd_tuning_describe(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct cli_reply reply = CLI_REPLY_INIT;
	const char *name = NULL;
	json_t *d;
	int rc;

	rc = cli_parse_name(ctx, cmd, argc, argv, "tuning job", &name);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = tuning_name_call(ctx, "DescribeHyperParameterTuningJob", name,
			      &reply);
	if (!rc && ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(&reply);
	} else if (!rc) {
		d = reply_json(&reply);
		if (d)
			print_tuning(d);
		else
			rc = CLI_EXIT_TRANSPORT;
		json_decref(d);
	}
	cli_reply_release(&reply);
	return rc;
}

static int simple_tuning_cmd(struct cli_ctx *ctx, int argc, char **argv,
			     const char *op)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct cli_reply reply = CLI_REPLY_INIT;
	const char *name = NULL;
	int rc;

	rc = cli_parse_name(ctx, cmd, argc, argv, "tuning job", &name);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = tuning_name_call(ctx, op, name, &reply);
	if (!rc && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
	cli_reply_release(&reply);
	return rc;
}

int cli_cmd_tuning_stop(struct cli_ctx *ctx, int argc, char **argv)
{
	return simple_tuning_cmd(ctx, argc, argv,
				 "StopHyperParameterTuningJob");
}

int cli_cmd_tuning_delete(struct cli_ctx *ctx, int argc, char **argv)
{
	return simple_tuning_cmd(ctx, argc, argv,
				 "DeleteHyperParameterTuningJob");
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
	json_t *req = json_object();

	if (a->tuning)
		json_object_set_new(req, "HyperParameterTuningJobName",
				    json_string(a->tuning));
	if (a->status)
		json_object_set_new(req, "StatusEquals",
				    json_string(a->status));
	if (a->name_contains)
		json_object_set_new(req, "NameContains",
				    json_string(a->name_contains));
	if (a->sort_by)
		json_object_set_new(req, "SortBy", json_string(a->sort_by));
	if (a->sort_order)
		json_object_set_new(req, "SortOrder",
				    json_string(a->sort_order));
	if (a->max_results)
		json_object_set_new(req, "MaxResults",
				    json_integer(a->max_results));
	if (token)
		json_object_set_new(req, "NextToken", json_string(token));
	buf_reset(out);
	dump_to(req, out);
	json_decref(req);
}

/*
 * Calls op page by page (every page with --all, else one) and gathers the
 * member arrays into *items_out (a new array). Returns an exit code;
 * *token_out is the NextToken left (owned) when pages remain.
 */
static int list_pages(struct cli_ctx *ctx, const struct list_args *a,
		      const char *op, const char *member, json_t **items_out,
		      char **token_out)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf body = BUF_INIT;
	json_t *items = json_array();
	char *token = a->token ? xstrdup(a->token) : NULL;
	int pages = 0, rc = 0;

	for (;;) {
		json_t *page;

		list_body(a, token, &body);
		rc = cli_call(ctx, op, &body, &reply);
		if (rc)
			break;
		page = reply_json(&reply);
		if (!page || !json_is_array(json_object_get(page, member))) {
			if (page)
				cli_error("malformed response: no %s", member);
			json_decref(page);
			rc = CLI_EXIT_TRANSPORT;
			break;
		}
		json_array_extend(items, json_object_get(page, member));
		free(token);
		token = str_of(page, "NextToken") ?
				xstrdup(str_of(page, "NextToken")) :
				NULL;
		json_decref(page);
		if (!a->all || !token || ++pages >= TUNING_MAX_PAGES)
			break;
	}
	cli_reply_release(&reply);
	buf_release(&body);
	if (rc) {
		json_decref(items);
		free(token);
		return rc;
	}
	*items_out = items;
	*token_out = token;
	return 0;
}

/* --output json of a gathered list: {"<member>": [...], "NextToken"}. */
static void print_items_json(const char *member, json_t *items,
			     const char *token)
{
	struct cli_reply out = CLI_REPLY_INIT;
	json_t *doc = json_pack("{s:O}", member, items);

	if (token)
		json_object_set_new(doc, "NextToken", json_string(token));
	dump_to(doc, &out.body);
	cli_print_json(&out);
	json_decref(doc);
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
	json_t *req = json_pack("{s:s}", "HyperParameterTuningJobName", name);
	json_t *d = NULL;

	snprintf(out, size, "-");
	if (!req)
		return;
	dump_to(req, &body);
	json_decref(req);
	if (!cli_http_call(ctx, "DescribeHyperParameterTuningJob", &body,
			   &reply, &err) &&
	    reply.status == 200) {
		d = json_loadb(reply.body.data, reply.body.len, 0, NULL);
		objective_text(
			json_object_get(
				json_object_get(d, "BestTrainingJob"),
				"FinalHyperParameterTuningJobObjectiveMetric"),
			out, size);
	}
	json_decref(d);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
}

/*
 * The tuning jobs' table. The summaries lack the best objective, so each
 * row costs a Describe: one page is at most 100 rows.
 */
static void print_tuning_table(struct cli_ctx *ctx, json_t *items)
{
	size_t wn = 4, ws = 6, wt = 8, i, n = json_array_size(items);
	char(*best)[32] = xcalloc(n ? n : 1, sizeof(*best));
	char(*jobs)[32] = xcalloc(n ? n : 1, sizeof(*jobs));
	char t[40];
	json_t *s;

	json_array_foreach(items, i, s)
	{
		json_t *c = json_object_get(s, "TrainingJobStatusCounters");
		json_t *lim = json_object_get(s, "ResourceLimits");
		int total = int_of(lim, "MaxNumberOfTrainingJobs");

		if (!total)
			total = int_of(c, "Completed") +
				int_of(c, "InProgress") + int_of(c, "Stopped") +
				int_of(c, "RetryableError") +
				int_of(c, "NonRetryableError");
		snprintf(jobs[i], sizeof(jobs[i]), "%d/%d",
			 int_of(c, "Completed"), total);
		best_of(ctx, or_dash(str_of(s, "HyperParameterTuningJobName")),
			best[i], sizeof(best[i]));
		wn = wider(str_of(s, "HyperParameterTuningJobName"), wn);
		ws = wider(str_of(s, "HyperParameterTuningJobStatus"), ws);
		wt = wider(str_of(s, "Strategy"), wt);
	}
	printf("%-*s  %-*s  %-*s  %-9s  %-12s  %s\n", (int)wn, "NAME", (int)ws,
	       "STATUS", (int)wt, "STRATEGY", "COMPLETED", "BEST", "CREATED");
	json_array_foreach(items, i, s)
	{
		printf("%-*s  %-*s  %-*s  %-9s  %-12s  %s\n", (int)wn,
		       or_dash(str_of(s, "HyperParameterTuningJobName")),
		       (int)ws,
		       or_dash(str_of(s, "HyperParameterTuningJobStatus")),
		       (int)wt, or_dash(str_of(s, "Strategy")), jobs[i],
		       best[i],
		       cli_time(ms_of(s, "CreationTime"), t, sizeof(t)));
	}
	free(best);
	free(jobs);
}

int cli_cmd_tuning_list(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct list_args a = { 0 };
	json_t *items = NULL;
	char *token = NULL;
	int rc;

	rc = parse_list(ctx, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = list_pages(ctx, &a, "ListHyperParameterTuningJobs",
			"HyperParameterTuningJobSummaries", &items, &token);
	if (rc)
		return rc;
	if (ctx->output == CLI_OUTPUT_JSON) {
		print_items_json("HyperParameterTuningJobSummaries", items,
				 token);
	} else {
		print_tuning_table(ctx, items);
		if (token)
			fprintf(stderr,
				"trainctl: more tuning jobs: --next-token %s "
				"or --all\n",
				token);
	}
	json_decref(items);
	free(token);
	return CLI_EXIT_OK;
}

static void print_children_table(json_t *items)
{
	size_t wn = 4, ws = 6, wo = 9, i;
	json_t *s;
	char v[64];

	json_array_foreach(items, i, s)
	{
		wn = wider(str_of(s, "TrainingJobName"), wn);
		ws = wider(str_of(s, "TrainingJobStatus"), ws);
	}
	printf("%-*s  %-*s  %-12s  %-*s  %s\n", (int)wn, "NAME", (int)ws,
	       "STATUS", "OBJECTIVE", (int)wo, "OBJ-STATUS", "HYPERPARAMETERS");
	json_array_foreach(items, i, s)
	{
		struct buf hp = BUF_INIT;

		objective_text(
			json_object_get(
				s,
				"FinalHyperParameterTuningJobObjectiveMetric"),
			v, sizeof(v));
		tuned_text(json_object_get(s, "TunedHyperParameters"), &hp);
		printf("%-*s  %-*s  %-12s  %-*s  %s\n", (int)wn,
		       or_dash(str_of(s, "TrainingJobName")), (int)ws,
		       or_dash(str_of(s, "TrainingJobStatus")), v, (int)wo + 1,
		       or_dash(str_of(s, "ObjectiveStatus")), hp.data);
		buf_release(&hp);
	}
}

int cli_cmd_tuning_children(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct list_args a = { 0 };
	json_t *items = NULL;
	char *token = NULL;
	int rc;

	a.children = 1;
	rc = parse_list(ctx, cmd, argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	rc = list_pages(ctx, &a, "ListTrainingJobsForHyperParameterTuningJob",
			"TrainingJobSummaries", &items, &token);
	if (rc)
		return rc;
	if (ctx->output == CLI_OUTPUT_JSON) {
		print_items_json("TrainingJobSummaries", items, token);
	} else {
		print_children_table(items);
		if (token)
			fprintf(stderr,
				"trainctl: more training jobs: --next-token "
				"%s or --all\n",
				token);
	}
	json_decref(items);
	free(token);
	return CLI_EXIT_OK;
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
	const char *status;
	json_t *d = NULL;
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
	d = reply_json(&reply);
	if (!d) {
		rc = CLI_EXIT_TRANSPORT;
		goto out;
	}
	status = or_dash(str_of(d, "HyperParameterTuningJobStatus"));
	(void)buf_addf(&line, "trainctl: tuning job '%s' %s: ",
		       or_dash(str_of(d, "HyperParameterTuningJobName")),
		       status);
	counters_text(json_object_get(d, "TrainingJobStatusCounters"), &line);
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
	if (rc == CLI_EXIT_FAILED && str_of(d, "FailureReason"))
		cli_error("tuning job '%s' failed: %s",
			  or_dash(str_of(d, "HyperParameterTuningJobName")),
			  str_of(d, "FailureReason"));
	if (rc >= 0 && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
out:
	json_decref(d);
	buf_release(&line);
	buf_release(&err);
	cli_reply_release(&reply);
	return rc;
}

int cli_wait_tuning_job(struct cli_ctx *ctx, const char *name,
			int64_t timeout_ms, int64_t interval_ms)
{
	json_t *req =
		name ? json_pack("{s:s}", "HyperParameterTuningJobName", name) :
		       NULL;
	struct buf body = BUF_INIT, last = BUF_INIT;
	int64_t deadline, now;
	int transport_errors = 0, rc;

	if (!req) {
		cli_error("invalid tuning job name '%s'", or_dash(name));
		return CLI_EXIT_USAGE;
	}
	dump_to(req, &body);
	json_decref(req);
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
