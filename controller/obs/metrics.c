#define LOG_TAG "metrics"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "controller/members_api.h"
#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/obs/metrics.h"
#include "controller/obs/goodput.h"
#include "controller/obs/prom.h"
#include "controller/obs/rules.h"
#include "controller/obs/telemetry.h"
#include "controller/reply.h"
#include "controller/sched/stats.h"
#include "controller/stragwatch.h"
#include "db/db.h"
#include "db/run.h"
#include "common/err.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * Operation labels. Index 0 is the catch-all; the order is the order of
 * the output. A fixed table keeps the number of series bounded whatever
 * clients send.
 */
static const char *const op_names[] = {
	"other",
	"CreateTrainingJob",
	"DescribeTrainingJob",
	"ListTrainingJobs",
	"StopTrainingJob",
	"DeleteTrainingJob",
	"sagemaker:unknown",
	"logs:DescribeLogStreams",
	"logs:GetLogEvents",
	"logs:FilterLogEvents",
	"logs:unknown",
	"cloudwatch:ListMetrics",
	"cloudwatch:GetMetricStatistics",
	"cloudwatch:GetMetricData",
	"cloudwatch:query",
	"cloudwatch:unknown",
	"rest:ListTrainingJobs",
	"rest:CreateTrainingJob",
	"rest:DescribeTrainingJob",
	"rest:DeleteTrainingJob",
	"rest:StopTrainingJob",
	"rest:GetLogs",
	"rest:ListHosts",
	"rest:HostTelemetry",
	"agent:register",
	"agent:work",
	"agent:status",
	"agent:logs",
	"agent:artifacts",
	"web:page",
	"web:changes",
	"web:jobs",
	"web:job",
	"web:metrics",
	"metrics",
	"healthz",
};

#define N_OPS (ARRAY_SIZE(op_names))

/* Statuses with their own series; anything else counts as "other". */
static const int status_codes[] = { 200, 201, 204, 304, 400, 401, 403, 404,
				    405, 409, 413, 415, 429, 500, 503, 0 };

#define N_STATUS (ARRAY_SIZE(status_codes))

struct op_stats {
	atomic_ullong by_status[N_STATUS];
	struct ctrl_prom_hist latency;
};

static struct op_stats stats[N_OPS];
static atomic_ullong log_lines;
static atomic_ullong hosts_quarantined;
/* Rule verdicts by the rule invoked and RuleEvaluationStatus. */
static atomic_ullong rule_verdicts[CTRL_RULE_KINDS][CTRL_RULE_STATUSES];

static size_t op_index(const char *name)
{
	size_t i;

	for (i = 1; i < N_OPS; i++)
		if (!strcmp(op_names[i], name))
			return i;
	return 0;
}

/* The REST face of /v1/training-jobs[/{name}[/stop|/logs]]. */
static const char *rest_operation(const char *method, const char *rest)
{
	const char *slash;

	if (*rest == '\0' || !strcmp(rest, "/"))
		return !strcmp(method, "POST") ? "rest:CreateTrainingJob" :
		       !strcmp(method, "GET")  ? "rest:ListTrainingJobs" :
						 "other";
	if (*rest != '/')
		return "other";
	slash = strchr(rest + 1, '/');
	if (!slash)
		return !strcmp(method, "GET")	 ? "rest:DescribeTrainingJob" :
		       !strcmp(method, "DELETE") ? "rest:DeleteTrainingJob" :
						   "other";
	if (!strcmp(slash, "/stop"))
		return "rest:StopTrainingJob";
	if (!strcmp(slash, "/logs"))
		return "rest:GetLogs";
	return "other";
}

static const char *agent_operation(const char *rest)
{
	const char *slash = strchr(rest, '/');

	if (!strcmp(rest, "register"))
		return "agent:register";
	if (!slash)
		return "other";
	slash++;
	if (!strcmp(slash, "work"))
		return "agent:work";
	if (!strcmp(slash, "status"))
		return "agent:status";
	if (!strcmp(slash, "logs"))
		return "agent:logs";
	if (!strncmp(slash, "artifacts/", 10))
		return "agent:artifacts";
	return "other";
}

/* CloudWatch metrics: the JSON target's or CBOR path's operation. */
static const char *cloudwatch_operation(const char *op)
{
	static const char *const cw_ops[] = {
		"cloudwatch:ListMetrics",
		"cloudwatch:GetMetricStatistics",
		"cloudwatch:GetMetricData",
	};
	size_t i;

	for (i = 0; i < 3; i++)
		if (!strcmp(cw_ops[i] + 11, op))
			return cw_ops[i];
	return "cloudwatch:unknown";
}

/* POST / with an X-Amz-Target: SageMaker, Logs or CloudWatch JSON. */
static const char *target_operation(const char *target)
{
	if (!strncmp(target, "SageMaker.", 10)) {
		size_t i = op_index(target + 10);

		/* Entries 1..5 are the SageMaker operations. */
		return i >= 1 && i <= 5 ? op_names[i] : "sagemaker:unknown";
	}
	if (!strncmp(target, "Logs_20140328.", 14)) {
		static const char *const logs_ops[] = {
			"logs:DescribeLogStreams",
			"logs:GetLogEvents",
			"logs:FilterLogEvents",
		};
		size_t i;

		for (i = 0; i < 3; i++)
			if (!strcmp(logs_ops[i] + 5, target + 14))
				return logs_ops[i];
		return "logs:unknown";
	}
	if (!strncmp(target, "GraniteServiceVersion20100801.", 30))
		return cloudwatch_operation(target + 30);
	return "other";
}

const char *ctrl_metrics_operation(const char *method, const char *url,
				   const char *target)
{
	static const char jobs[] = "/v1/training-jobs";
	static const char cbor_ops[] =
		"/service/GraniteServiceVersion20100801/operation/";

	if (!strcmp(url, "/") && target)
		return target_operation(target);
	if (!strncmp(url, cbor_ops, strlen(cbor_ops)))
		return cloudwatch_operation(url + strlen(cbor_ops));
	if (!strncmp(url, jobs, strlen(jobs)))
		return rest_operation(method, url + strlen(jobs));
	if (!strcmp(url, "/v1/hosts"))
		return "rest:ListHosts";
	if (!strncmp(url, "/v1/hosts/", 10) && strlen(url) > 20 &&
	    !strcmp(url + strlen(url) - 10, "/telemetry"))
		return "rest:HostTelemetry";
	if (!strncmp(url, "/v1/agents/", 11))
		return agent_operation(url + 11);
	if (!strcmp(url, "/v1/changes"))
		return "web:changes";
	if (!strcmp(url, "/v1/ui/jobs"))
		return "web:jobs";
	if (!strncmp(url, "/v1/ui/jobs/", 12)) {
		const char *slash = strchr(url + 12, '/');

		return slash && !strcmp(slash, "/metrics") ? "web:metrics" :
							     "web:job";
	}
	if (!strcmp(url, "/") || !strncmp(url, "/ui/", 4))
		return "web:page";
	if (!strcmp(url, "/metrics"))
		return "metrics";
	if (!strcmp(url, "/healthz"))
		return "healthz";
	return "other";
}

void ctrl_metrics_request(struct MHD_Connection *conn, const char *method,
			  const char *url, int status, int64_t us)
{
	const char *target = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							 "X-Amz-Target");
	const char *ct = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *op = ctrl_metrics_operation(method, url, target);
	struct op_stats *s;

	/* The query protocol names its operation in the body. */
	if (!target && !strcmp(method, "POST") && !strcmp(url, "/") && ct &&
	    !strncmp(ct, "application/x-www-form-urlencoded", 33))
		op = "cloudwatch:query";
	s = &stats[op_index(op)];
	size_t si;

	for (si = 0; si < N_STATUS - 1; si++)
		if (status_codes[si] == status)
			break;
	atomic_fetch_add_explicit(&s->by_status[si], 1, memory_order_relaxed);
	ctrl_prom_hist_observe(&s->latency, us);
}

void ctrl_metrics_log_lines(size_t n)
{
	atomic_fetch_add_explicit(&log_lines, n, memory_order_relaxed);
}

void ctrl_metrics_host_quarantined(void)
{
	atomic_fetch_add_explicit(&hosts_quarantined, 1, memory_order_relaxed);
}

void ctrl_metrics_rule_verdict(int kind, int status)
{
	if (kind < 0 || kind >= CTRL_RULE_KINDS || status <= 0 ||
	    status >= CTRL_RULE_STATUSES)
		return;
	atomic_fetch_add_explicit(&rule_verdicts[kind][status], 1,
				  memory_order_relaxed);
}

static unsigned long long load(atomic_ullong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* Every rule's issues found; the verdicts given so far, by status. */
static void render_rules(struct buf *out)
{
	struct ctrl_prom_sample s;
	int k, st;

	ctrl_prom_family(out, "trainctl_rule_issues_found_total", "counter",
			 "Debugger and Profiler rules that found an issue, by "
			 "the rule invoked (rule_to_invoke).");
	for (k = 0; k < CTRL_RULE_KINDS; k++) {
		ctrl_prom_sample_start(&s, out,
				       "trainctl_rule_issues_found_total");
		ctrl_prom_label(&s, "rule", ctrl_rule_kind_name(k));
		ctrl_prom_value(&s, "%llu",
				load(&rule_verdicts[k][CTRL_RULE_ISSUES]));
	}
	ctrl_prom_family(out, "trainctl_rule_verdicts_total", "counter",
			 "Verdicts of Debugger and Profiler rules, by the rule "
			 "invoked and RuleEvaluationStatus.");
	for (k = 0; k < CTRL_RULE_KINDS; k++)
		for (st = CTRL_RULE_NO_ISSUES; st < CTRL_RULE_STATUSES; st++) {
			ctrl_prom_sample_start(&s, out,
					       "trainctl_rule_verdicts_total");
			ctrl_prom_label(&s, "rule", ctrl_rule_kind_name(k));
			ctrl_prom_label(&s, "status",
					ctrl_rule_status_name(st));
			ctrl_prom_value(&s, "%llu",
					load(&rule_verdicts[k][st]));
		}
}

#define HIST "trainctl_api_request_duration_seconds"

void ctrl_metrics_render_counters(struct buf *out)
{
	struct ctrl_prom_sample s;
	size_t o, k;

	ctrl_prom_family(
		out, "trainctl_api_requests_total", "counter",
		"API requests answered, by operation and HTTP status.");
	for (o = 0; o < N_OPS; o++) {
		for (k = 0; k < N_STATUS; k++) {
			unsigned long long v = load(&stats[o].by_status[k]);
			struct ctrl_prom_sample s;

			if (!v)
				continue;
			ctrl_prom_sample_start(&s, out,
					       "trainctl_api_requests_total");
			ctrl_prom_label(&s, "operation", op_names[o]);
			if (status_codes[k])
				ctrl_prom_label_int(&s, "status",
						    status_codes[k]);
			else
				ctrl_prom_label(&s, "status", "other");
			ctrl_prom_value(&s, "%llu", v);
		}
	}
	ctrl_prom_family(out, HIST, "histogram",
			 "Time from a request's arrival to its answer "
			 "(long-polls include their wait).");
	for (o = 0; o < N_OPS; o++)
		ctrl_prom_hist_render(&stats[o].latency, out, HIST, "operation",
				      op_names[o]);
	ctrl_prom_family(out, "trainctl_log_lines_ingested_total", "counter",
			 "Log lines received from agents and stored.");
	ctrl_prom_sample_start(&s, out, "trainctl_log_lines_ingested_total");
	ctrl_prom_value(&s, "%llu", load(&log_lines));
	ctrl_prom_family(out, "trainctl_hosts_quarantined_total", "counter",
			 "Hosts drained by the quarantine: the failures of "
			 "--quarantine-failures different jobs were laid at "
			 "them within --quarantine-window.");
	ctrl_prom_sample_start(&s, out, "trainctl_hosts_quarantined_total");
	ctrl_prom_value(&s, "%llu", load(&hosts_quarantined));
	render_rules(out);
}

/* Jobs by TrainingJobStatus, and the active ones by SecondaryStatus. */
static void render_jobs(struct ctrl_ctx *ctx, struct buf *out)
{
	static const char *const statuses[] = { "InProgress", "Completed",
						"Failed", "Stopping",
						"Stopped" };
	static const char *const active[] = { "InProgress", "Stopping" };
	struct ctrl_prom_sample s;
	struct buf err = BUF_INIT;
	size_t i, k;

	ctrl_prom_family(out, "trainctl_jobs", "gauge",
			 "Training jobs in the store, by TrainingJobStatus.");
	for (i = 0; i < ARRAY_SIZE(statuses); i++) {
		int64_t n = db_job_count(ctx->db, statuses[i]);

		if (n < 0)
			continue;
		ctrl_prom_sample_start(&s, out, "trainctl_jobs");
		ctrl_prom_label(&s, "status", statuses[i]);
		ctrl_prom_value(&s, "%lld", (long long)n);
	}
	ctrl_prom_family(out, "trainctl_active_jobs", "gauge",
			 "InProgress and Stopping jobs, by SecondaryStatus.");
	for (i = 0; i < 2; i++) {
		struct db_list_query q = { 0 };
		struct db_job *jobs = NULL;
		char *next = NULL;
		struct {
			char name[32];
			long long n;
		} seen[16];
		size_t n_seen = 0;
		size_t n = 0;

		q.limit = 1000;
		q.status = active[i];
		if (db_job_list(ctx->db, &q, &jobs, &n, &next, &err)) {
			log_warn("cannot list %s jobs: %s", active[i],
				 err.data);
			buf_reset(&err);
			continue;
		}
		for (k = 0; k < n; k++) {
			size_t s;

			for (s = 0; s < n_seen; s++)
				if (!strcmp(seen[s].name,
					    jobs[k].secondary_status))
					break;
			if (s == n_seen && n_seen < 16) {
				snprintf(seen[s].name, sizeof(seen[s].name),
					 "%s", jobs[k].secondary_status);
				seen[s].n = 0;
				n_seen++;
			}
			if (s < n_seen)
				seen[s].n++;
			db_job_release(&jobs[k]);
		}
		free(jobs);
		free(next);
		for (k = 0; k < n_seen; k++) {
			ctrl_prom_sample_start(&s, out, "trainctl_active_jobs");
			ctrl_prom_label(&s, "status", active[i]);
			ctrl_prom_label(&s, "secondary_status", seen[k].name);
			ctrl_prom_value(&s, "%lld", seen[k].n);
		}
	}
	buf_release(&err);
}

/*
 * Restarts of jobs: every attempt after a job's first. db_job_list does
 * not carry the attempt, so each job is loaded; fine for the thousands of
 * jobs one controller holds, and only paid per scrape.
 */
static long long job_restarts(struct ctrl_ctx *ctx)
{
	struct db_list_query q = { 0 };
	struct buf err = BUF_INIT;
	char *token = NULL;
	long long total = 0;

	q.limit = 1000;
	do {
		struct db_job *jobs = NULL;
		char *next = NULL;
		size_t n = 0, i;

		q.token = token;
		if (db_job_list(ctx->db, &q, &jobs, &n, &next, &err)) {
			log_warn("cannot list jobs: %s", err.data);
			break;
		}
		for (i = 0; i < n; i++) {
			struct db_job full;

			if (!db_job_get(ctx->db, jobs[i].name, &full, &err)) {
				if (full.attempt > 1)
					total += full.attempt - 1;
				db_job_release(&full);
			}
			buf_reset(&err);
			db_job_release(&jobs[i]);
		}
		free(jobs);
		free(token);
		token = next;
	} while (token);
	free(token);
	buf_release(&err);
	return total;
}

static void render_hosts(struct ctrl_ctx *ctx, struct buf *out)
{
	static const char *const states[] = { "provisioning", "ready", "busy",
					      "lost" };
	struct db_assignment *as = NULL;
	struct ctrl_prom_sample s;
	struct buf err = BUF_INIT;
	struct buf ages = BUF_INIT;
	long long count[4] = { 0, 0, 0, 0 };
	long long agent_restarts = 0;
	int64_t now = time_mono_ms();
	int64_t max_age = 0;
	size_t n_as = 0;
	size_t i, k;

	if (db_assignments_list(ctx->db, NULL, NULL, 0, &as, &n_as, &err))
		log_warn("cannot list assignments: %s", err.data);
	pthread_mutex_lock(&ctx->hosts_lock);
	for (i = 0; i < ctx->n_hosts; i++) {
		struct ctrl_host *h = ctx->hosts[i];
		int st = !h->registered ? 0 : h->lost ? 3 : 1;

		for (k = 0; st == 1 && k < n_as; k++)
			if (!strcmp(as[k].host, h->name))
				st = 2;
		count[st]++;
		agent_restarts += h->restarts;
		if (!h->last_seen_ms)
			continue;
		if (now - h->last_seen_ms > max_age)
			max_age = now - h->last_seen_ms;
		ctrl_prom_sample_start(&s, &ages,
				       "trainctl_host_heartbeat_age_seconds");
		ctrl_prom_label(&s, "host", h->name);
		ctrl_prom_value(&s, "%.3f",
				(double)(now - h->last_seen_ms) / 1000.0);
	}
	pthread_mutex_unlock(&ctx->hosts_lock);
	ctrl_prom_family(out, "trainctl_hosts", "gauge",
			 "Hosts by state: provisioning (no agent yet), ready, "
			 "busy (running an assignment), lost (missed its "
			 "heartbeat deadline).");
	for (i = 0; i < 4; i++) {
		ctrl_prom_sample_start(&s, out, "trainctl_hosts");
		ctrl_prom_label(&s, "state", states[i]);
		ctrl_prom_value(&s, "%lld", count[i]);
	}
	ctrl_prom_family(out, "trainctl_host_heartbeat_age_seconds", "gauge",
			 "Seconds since each host's agent was last heard "
			 "from.");
	(void)buf_add(out, ages.data, ages.len);
	ctrl_prom_family(out, "trainctl_host_heartbeat_max_age_seconds",
			 "gauge",
			 "The largest heartbeat age over all hosts (0 without "
			 "hosts).");
	ctrl_prom_sample_start(&s, out,
			       "trainctl_host_heartbeat_max_age_seconds");
	ctrl_prom_value(&s, "%.3f", (double)max_age / 1000.0);
	ctrl_prom_family(out, "trainctl_agent_restarts_total", "counter",
			 "Agents of the embedded local cluster restarted after "
			 "they died.");
	ctrl_prom_sample_start(&s, out, "trainctl_agent_restarts_total");
	ctrl_prom_value(&s, "%lld", agent_restarts);
	db_assignments_free(as, n_as);
	buf_release(&ages);
	buf_release(&err);
}

void ctrl_metrics_serve(struct ctrl_ctx *ctx, struct ctrl_response *resp)
{
	struct ctrl_prom_sample s;
	struct buf out = BUF_INIT;

	render_jobs(ctx, &out);
	ctrl_prom_family(&out, "trainctl_job_restarts_total", "counter",
			 "Attempts of training jobs after their first "
			 "(RetryStrategy and host-loss restarts).");
	ctrl_prom_sample_start(&s, &out, "trainctl_job_restarts_total");
	ctrl_prom_value(&s, "%lld", job_restarts(ctx));
	render_hosts(ctx, &out);
	ctrl_tm_render_metrics(ctx, &out);
	ctrl_sched_render_metrics(&out);
	ctrl_stragwatch_render_metrics(ctx, &out);
	ctrl_goodput_render(ctx, &out);
	ctrl_members_render_metrics(ctx, &out);
	ctrl_metrics_render_counters(&out);
	resp->status = 200;
	buf_release(&resp->body);
	resp->body = out;
}
