#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/client.h"
#include "api/job_record.h"
#include "api/requests.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * describe-training-job, list-training-jobs, stop-training-job and
 * delete-training-job: one request each (list: one per page).
 */

/* Sends {"TrainingJobName": name} as op. Returns an exit code. */
static const struct cli_named training_job = {
	.what = "job",
	.build = api_name_request_build,
	.usage_on_bad_name = 1,
};

static void print_record(const struct api_job_record *r)
{
	char t1[40], t2[40];
	size_t i;

	cli_print_field("Name:", r->name);
	cli_print_field("ARN:", r->arn);
	printf("%-17s%s / %s\n", "Status:", r->status ? r->status : "-",
	       r->secondary_status ? r->secondary_status : "-");
	cli_print_field("Failure reason:", r->failure_reason);
	cli_print_time_field("Created:", r->creation_ms);
	cli_print_time_field("Started:", r->start_ms);
	cli_print_time_field("Ended:", r->end_ms);
	cli_print_time_field("Last modified:", r->last_modified_ms);
	if (r->training_s)
		printf("%-17s%" PRId64 " s\n", "Training time:", r->training_s);
	if (r->billable_s)
		printf("%-17s%" PRId64 " s\n", "Billable time:", r->billable_s);
	cli_print_field("Model artifacts:", r->model_artifacts);
	if (r->n_metrics) {
		printf("Final metrics:\n");
		for (i = 0; i < r->n_metrics; i++)
			printf("  %-24s %g\n",
			       r->metrics[i].name ? r->metrics[i].name : "-",
			       r->metrics[i].value);
	}
	if (r->n_transitions) {
		printf("Transitions:\n");
		for (i = 0; i < r->n_transitions; i++) {
			const struct api_transition *tr = &r->transitions[i];

			printf("  %-24s %-24s %-24s %s\n",
			       tr->status ? tr->status : "-",
			       cli_time(tr->start_ms, t1, sizeof(t1)),
			       cli_time(tr->end_ms, t2, sizeof(t2)),
			       tr->message ? tr->message : "");
		}
	}
}

static int show_record(const struct cli_reply *reply, struct buf *err)
{
	struct api_job_record rec;

	if (api_job_record_from_json(reply->body.data, reply->body.len, &rec,
				     err))
		return -1;
	print_record(&rec);
	cli_goodput_print(reply->body.data, reply->body.len);
	api_job_record_release(&rec);
	return 0;
}

int cli_cmd_describe(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &training_job, "DescribeTrainingJob",
			     show_record, argc, argv);
}

int cli_cmd_stop(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &training_job, "StopTrainingJob", NULL, argc,
			     argv);
}

/*
 * requeue-training-job NAME (admin): the running job is preempted (its
 * last checkpoint saved) and waits in the queue again.
 */
int cli_cmd_requeue(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, body = BUF_INIT, path = BUF_INIT;
	const char *name = NULL;
	int rc;

	rc = cli_parse_name(ctx, cmd, argc, argv, "training job", &name);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	/* The name goes into a path: TrainingJobName's characters only. */
	if (strlen(name) > 63 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789-") != strlen(name))
		return cli_usage_error(cmd, "invalid training job name '%s'",
				       name);
	(void)buf_addf(&path, "/v1/training-jobs/%s/requeue", name);
	rc = cli_reply_status(cli_http_post(ctx, path.data, &body, &reply,
					    &err),
			      &reply, &err);
	if (!rc && ctx->output == CLI_OUTPUT_JSON)
		cli_print_json(&reply);
	else if (!rc)
		printf("%s requeued\n", name);
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&body);
	buf_release(&path);
	return rc;
}

int cli_cmd_delete(struct cli_ctx *ctx, int argc, char **argv)
{
	return cli_named_cmd(ctx, &training_job, "DeleteTrainingJob", NULL,
			     argc, argv);
}

/* --- list-training-jobs ------------------------------------------------- */

/* Every page's records, for the table. */
struct list_acc {
	struct api_job_record *recs;
	size_t n, alloc;
};

static void list_acc_take(struct list_acc *acc, struct api_job_record *recs,
			  size_t n)
{
	size_t i;

	ALLOC_GROW(acc->recs, acc->n + n, acc->alloc);
	for (i = 0; i < n; i++)
		acc->recs[acc->n++] = recs[i];
	/* The records moved into acc; only the array is left to free. */
	free(recs);
}

static size_t width_of(const char *s, size_t w)
{
	size_t n = s ? strlen(s) : 1;

	return n > w ? n : w;
}

static void print_table(const struct list_acc *acc)
{
	size_t wn = 4, ws = 6, w2 = 9, i;
	char t[40];

	for (i = 0; i < acc->n; i++) {
		wn = width_of(acc->recs[i].name, wn);
		ws = width_of(acc->recs[i].status, ws);
		w2 = width_of(acc->recs[i].secondary_status, w2);
	}
	printf("%-*s  %-*s  %-*s  %s\n", (int)wn, "NAME", (int)ws, "STATUS",
	       (int)w2, "SECONDARY", "CREATED");
	for (i = 0; i < acc->n; i++) {
		const struct api_job_record *r = &acc->recs[i];

		printf("%-*s  %-*s  %-*s  %s\n", (int)wn,
		       r->name ? r->name : "-", (int)ws,
		       r->status ? r->status : "-", (int)w2,
		       r->secondary_status ? r->secondary_status : "-",
		       cli_time(r->creation_ms, t, sizeof(t)));
	}
}

static int parse_list_args(struct cli_ctx *ctx, const struct cli_cmd *cmd,
			   int argc, char **argv, struct api_client_list *q,
			   int *all)
{
	struct cli_list_flags f = { 0 };
	int rc = cli_parse_list_flags(ctx, cmd, argc, argv, &f);

	if (rc)
		return rc;
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'",
				       argv[optind]);
	q->status_equals = f.status;
	q->name_contains = f.name_contains;
	q->sort_by = f.sort_by;
	q->sort_order = f.sort_order;
	q->max_results = f.max_results;
	q->next_token = f.next_token;
	*all = f.all;
	return 0;
}

/* Upper bound on pages followed by --all, in case a server loops. */
#define LIST_MAX_PAGES 100000

int cli_cmd_list(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cli_cmd_find(argv[0]);
	struct api_client_list q = { 0 };
	struct cli_reply reply = CLI_REPLY_INIT;
	struct list_acc acc = { 0 };
	struct buf body = BUF_INIT;
	struct buf err = BUF_INIT;
	struct buf joined = BUF_INIT;
	struct buf doc = BUF_INIT;
	char *token = NULL;
	int all = 0, pages = 0, rc;

	rc = parse_list_args(ctx, cmd, argc, argv, &q, &all);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	for (;;) {
		struct api_job_record *recs = NULL;
		size_t n = 0;
		char *next = NULL;

		buf_reset(&body);
		q.next_token = token ? token : q.next_token;
		if (api_list_request_build(&q, &body, &err)) {
			rc = cli_usage_error(cmd, "%s", err.data);
			goto out;
		}
		rc = cli_call(ctx, "ListTrainingJobs", &body, &reply);
		if (rc)
			goto out;
		if (ctx->output == CLI_OUTPUT_JSON && !all) {
			cli_print_json(&reply);
			goto out;
		}
		if (api_list_response_parse(reply.body.data, reply.body.len,
					    &recs, &n, &next, &err) ||
		    (ctx->output == CLI_OUTPUT_JSON &&
		     api_list_summaries_append(reply.body.data, reply.body.len,
					       &joined, &err))) {
			api_job_records_free(recs, n);
			free(next);
			cli_error("%s", err.data);
			rc = CLI_EXIT_TRANSPORT;
			goto out;
		}
		list_acc_take(&acc, recs, n);
		free(token);
		token = next;
		if (!all || !token || ++pages >= LIST_MAX_PAGES)
			break;
	}
	if (ctx->output == CLI_OUTPUT_JSON) {
		struct cli_reply merged = CLI_REPLY_INIT;

		if (buf_addf(&doc, "{\"TrainingJobSummaries\":[%s]}",
			     joined.data))
			BUG("unbounded buffer refused a string");
		merged.body = doc;
		cli_print_json(&merged);
	} else {
		print_table(&acc);
		if (token && !all)
			fprintf(stderr,
				"trainctl: more jobs: --next-token %s or "
				"--all\n",
				token);
	}
out:
	free(token);
	api_job_records_free(acc.recs, acc.n);
	buf_release(&doc);
	buf_release(&joined);
	buf_release(&err);
	buf_release(&body);
	cli_reply_release(&reply);
	return rc;
}
