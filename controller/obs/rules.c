#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/job_spec.h"
#include "common/bregex.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "controller/obs/rules.h"
#include "common/banned.h"

/* Keep details short of StatusDetails' 1024 characters. */
#define DETAILS_MAX 900

enum param_type {
	P_NUM,	 /* a decimal number within [min, max] */
	P_BOOL,	 /* True or False, any case */
	P_REGEX, /* tensor_regex: matched against metric names */
	P_TEXT,	 /* training_job_name_prefix */
	P_ANY,	 /* accepted; the verdict does not depend on it */
	P_EMPTY, /* accepted only empty ("{}" or "") */
};

struct param_def {
	const char *name;
	enum param_type type;
	double def, min, max;
};

typedef enum ctrl_rule_status eval_fn(const struct ctrl_rule *r,
				      const struct ctrl_rule_facts *f,
				      struct buf *details);

struct rule_def {
	const char *name; /* rule_to_invoke */
	enum ctrl_rule_kind kind;
	int profiler;
	int metric; /* needs a MetricDefinition naming a loss */
	struct param_def params[CTRL_RULE_MAX_PARAMS];
	eval_fn *eval;
};

static eval_fn eval_stalled, eval_loss, eval_overfit, eval_low_gpu,
	eval_cpu_bottleneck, eval_overall, eval_report;

#define BIG 1e12
/* SageMaker's default scan interval of a profiler rule: a minute. */
#define SCAN_US 60e6

/* Parameter indexes into ctrl_rule.p, by rule. */
enum { STALL_THRESHOLD, STALL_STOP };
enum { LOSS_REGEX, LOSS_USE_LOSSES, LOSS_NUM_STEPS, LOSS_DIFF_PERCENT };
enum { OVF_START_STEP, OVF_PATIENCE, OVF_RATIO };
enum { LGPU_P95, LGPU_P5, LGPU_WINDOW, LGPU_PATIENCE };
enum { CPUB_THRESHOLD, CPUB_GPU, CPUB_CPU, CPUB_PATIENCE };

static const struct rule_def rules[] = {
	{ "StalledTrainingRule",
	  CTRL_RULE_STALLED,
	  0,
	  0,
	  { { "threshold", P_NUM, 1800, 1, 28 * 86400 },
	    { "stop_training_on_fire", P_BOOL, 0, 0, 1 },
	    { "training_job_name_prefix", P_TEXT, 0, 0, 0 } },
	  eval_stalled },
	{ "LossNotDecreasing",
	  CTRL_RULE_LOSS,
	  0,
	  1,
	  { { "tensor_regex", P_REGEX, 0, 0, 0 },
	    { "use_losses_collection", P_BOOL, 1, 0, 1 },
	    { "num_steps", P_NUM, 10, 1, 1e6 },
	    { "diff_percent", P_NUM, 0.1, 0, 100 } },
	  eval_loss },
	{ "Overfit",
	  CTRL_RULE_OVERFIT,
	  0,
	  1,
	  { { "start_step", P_NUM, 0, 0, 1e9 },
	    { "patience", P_NUM, 1, 1, 1e6 },
	    { "ratio_threshold", P_NUM, 0.1, 0, BIG } },
	  eval_overfit },
	{ "LowGPUUtilization",
	  CTRL_RULE_LOW_GPU,
	  1,
	  0,
	  { { "threshold_p95", P_NUM, 70, 0, 100 },
	    { "threshold_p5", P_NUM, 10, 0, 100 },
	    { "window", P_NUM, 500, 1, 1e6 },
	    { "patience", P_NUM, 1000, 0, 1e9 },
	    { "scan_interval_us", P_NUM, SCAN_US, 1e6, 864e8 } },
	  eval_low_gpu },
	{ "CPUBottleneck",
	  CTRL_RULE_CPU_BOTTLENECK,
	  1,
	  0,
	  { { "threshold", P_NUM, 50, 0, 100 },
	    { "gpu_threshold", P_NUM, 10, 0, 100 },
	    { "cpu_threshold", P_NUM, 90, 0, 100 },
	    { "patience", P_NUM, 1000, 0, 1e9 },
	    { "scan_interval_us", P_NUM, SCAN_US, 1e6, 864e8 } },
	  eval_cpu_bottleneck },
	{ "OverallSystemUsage",
	  CTRL_RULE_OVERALL,
	  1,
	  0,
	  { { "scan_interval_us", P_NUM, SCAN_US, 1e6, 864e8 } },
	  eval_overall },
	{ "ProfilerReport",
	  CTRL_RULE_REPORT,
	  1,
	  0,
	  { { "opt_out_telemetry", P_ANY, 0, 0, 0 },
	    { "custom_rule_parameters", P_EMPTY, 0, 0, 0 } },
	  eval_report },
};

#define N_RULES (sizeof(rules) / sizeof(rules[0]))

/* Built-in rules that cannot be evaluated from what is collected. */
static const struct {
	const char *name;
	const char *why;
} refused[] = {
	{ "IOBottleneck", "the hosts' telemetry has no I/O wait to judge it "
			  "by" },
	{ "StepOutlier", "step durations are not collected" },
};

static const char *const status_names[] = {
	[CTRL_RULE_IN_PROGRESS] = "InProgress",
	[CTRL_RULE_NO_ISSUES] = "NoIssuesFound",
	[CTRL_RULE_ISSUES] = "IssuesFound",
	[CTRL_RULE_ERROR] = "Error",
	[CTRL_RULE_STOPPED] = "Stopped",
};

const char *ctrl_rule_status_name(enum ctrl_rule_status s)
{
	return status_names[s];
}

static const struct rule_def *def_of(enum ctrl_rule_kind kind)
{
	size_t i;

	for (i = 0; i < N_RULES; i++)
		if (rules[i].kind == kind)
			return &rules[i];
	return NULL;
}

const char *ctrl_rule_kind_name(enum ctrl_rule_kind k)
{
	const struct rule_def *d = def_of(k);

	return d ? d->name : "unknown";
}

/* ------------------------------------------------------------ parsing */

static int bad_rule(struct buf *err, const struct api_rule_config *c,
		    const char *what)
{
	(void)buf_addf(err, "1 validation error detected: %s '%.256s': %s",
		       c->profiler ? "ProfilerRuleConfigurations" :
				     "DebugRuleConfigurations",
		       c->name ? c->name : "", what);
	return ERR_INVALID;
}

static const struct rule_def *find_def(const struct api_rule_config *c,
				       struct buf *err)
{
	struct buf why = BUF_INIT;
	size_t i;

	if (!c->invoke) {
		bad_rule(err, c,
			 "RuleParameters has no rule_to_invoke; custom rules "
			 "(a rule image of your own) are not supported, only "
			 "the built-in rules the controller evaluates");
		return NULL;
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (strcmp(c->invoke, refused[i].name))
			continue;
		(void)buf_addf(&why,
			       "rule_to_invoke %s is not supported by this "
			       "controller: %s",
			       refused[i].name, refused[i].why);
		bad_rule(err, c, why.data);
		buf_release(&why);
		return NULL;
	}
	for (i = 0; i < N_RULES; i++) {
		if (strcmp(c->invoke, rules[i].name))
			continue;
		if (rules[i].profiler == c->profiler)
			return &rules[i];
		(void)buf_addf(&why, "%s is a %s rule; give it in %s",
			       rules[i].name,
			       rules[i].profiler ? "Profiler" : "Debugger",
			       rules[i].profiler ?
				       "ProfilerRuleConfigurations" :
				       "DebugRuleConfigurations");
		bad_rule(err, c, why.data);
		buf_release(&why);
		return NULL;
	}
	(void)buf_addf(&why,
		       "rule_to_invoke %.256s is not a rule this controller "
		       "evaluates (it evaluates StalledTrainingRule, "
		       "LossNotDecreasing, Overfit, LowGPUUtilization, "
		       "CPUBottleneck, OverallSystemUsage and ProfilerReport)",
		       c->invoke);
	bad_rule(err, c, why.data);
	buf_release(&why);
	return NULL;
}

static int parse_bool(const char *s, double *out)
{
	if (!strcasecmp(s, "true") || !strcmp(s, "1")) {
		*out = 1;
		return 0;
	}
	if (!strcasecmp(s, "false") || !strcmp(s, "0")) {
		*out = 0;
		return 0;
	}
	return -1;
}

static int parse_num(const char *s, const struct param_def *p, double *out)
{
	char *end;
	double v;

	if (!*s)
		return -1;
	v = strtod(s, &end);
	if (*end || !isfinite(v) || v < p->min || v > p->max)
		return -1;
	*out = v;
	return 0;
}

/* One parameter's value into r (by its index k in the rule's order). */
static int parse_value(const struct api_rule_config *c,
		       const struct param_def *p, size_t k, const char *v,
		       struct ctrl_rule *r, struct buf *err)
{
	struct buf why = BUF_INIT;
	struct buf rerr = BUF_INIT;
	int ret = 0;

	switch (p->type) {
	case P_NUM:
		if (parse_num(v, p, &r->p[k]))
			(void)buf_addf(&why,
				       "RuleParameters %s '%.64s' must be a "
				       "number from %g to %g",
				       p->name, v, p->min, p->max);
		break;
	case P_BOOL:
		if (parse_bool(v, &r->p[k]))
			(void)buf_addf(&why,
				       "RuleParameters %s '%.64s' must be "
				       "True or False",
				       p->name, v);
		break;
	case P_REGEX:
		if (bregex_compile(v, 0, NULL, &r->re, &rerr))
			(void)buf_addf(&why,
				       "RuleParameters %s is not a valid "
				       "regular expression: %s",
				       p->name, rerr.data);
		break;
	case P_TEXT:
		free(r->prefix);
		r->prefix = xstrdup(v);
		break;
	case P_EMPTY:
		if (*v && strcmp(v, "{}"))
			(void)buf_addf(&why,
				       "RuleParameters %s is not supported "
				       "by this controller (give the "
				       "parameters to the rule itself: "
				       "LowGPUUtilization, CPUBottleneck or "
				       "OverallSystemUsage)",
				       p->name);
		break;
	case P_ANY:
		break;
	}
	if (why.len)
		ret = bad_rule(err, c, why.data);
	buf_release(&why);
	buf_release(&rerr);
	return ret;
}

static int parse_params(const struct api_rule_config *c,
			const struct rule_def *d, struct ctrl_rule *r,
			struct buf *err)
{
	struct buf why = BUF_INIT;
	size_t i, k;
	int ret = 0;

	for (k = 0; k < CTRL_RULE_MAX_PARAMS && d->params[k].name; k++)
		r->p[k] = d->params[k].def;
	for (i = 0; i < c->n_params && !ret; i++) {
		for (k = 0; k < CTRL_RULE_MAX_PARAMS && d->params[k].name; k++)
			if (!strcmp(d->params[k].name, c->params[i].key))
				break;
		if ((k == CTRL_RULE_MAX_PARAMS || !d->params[k].name) &&
		    !strcmp(c->params[i].key, "action_json")) {
			(void)buf_adds(
				&why, "RuleParameters action_json (the SDK's "
				      "rule actions: StopTraining, Email, SMS) "
				      "is not supported by this controller; "
				      "StalledTrainingRule stops the job with "
				      "stop_training_on_fire");
			ret = bad_rule(err, c, why.data);
			break;
		}
		if (k == CTRL_RULE_MAX_PARAMS || !d->params[k].name) {
			(void)buf_addf(&why,
				       "RuleParameters %.256s is not a "
				       "parameter of %s that this controller "
				       "honours; it is refused rather than "
				       "ignored (docs/distributed.md, "
				       "\"Rules\")",
				       c->params[i].key, d->name);
			ret = bad_rule(err, c, why.data);
			break;
		}
		ret = parse_value(c, &d->params[k], k, c->params[i].value, r,
				  err);
	}
	buf_release(&why);
	return ret;
}

/* Whether s contains what (ASCII letters), any case. */
static int contains(const char *s, const char *what)
{
	size_t n = strlen(what);

	for (; *s; s++)
		if (!strncasecmp(s, what, n))
			return 1;
	return 0;
}

/* Whether name is a loss: it contains "loss", any case. */
static int is_loss(const char *name)
{
	return contains(name, "loss");
}

static int is_train_loss(const char *name)
{
	return is_loss(name) && contains(name, "train");
}

static int is_val_loss(const char *name)
{
	return is_loss(name) &&
	       (contains(name, "val") || contains(name, "test"));
}

/* Whether a metric rule has a MetricDefinition to read. */
static int metric_named(const struct ctrl_rule *r, const char *name)
{
	if (r->kind == CTRL_RULE_OVERFIT)
		return is_train_loss(name) || is_val_loss(name);
	if (r->re)
		return bregex_match(r->re, name, strlen(name), NULL, NULL) == 1;
	return r->p[LOSS_USE_LOSSES] != 0 && is_loss(name);
}

static int check_metrics(const struct api_job_spec *spec,
			 const struct api_rule_config *c,
			 const struct ctrl_rule *r, struct buf *err)
{
	int train = 0, val = 0, any = 0;
	size_t i;

	for (i = 0; i < spec->n_metrics; i++) {
		const char *name = spec->metrics[i].name;

		any |= metric_named(r, name);
		train |= is_train_loss(name);
		val |= is_val_loss(name);
	}
	if (r->kind == CTRL_RULE_OVERFIT && !(train && val))
		return bad_rule(err, c,
				"Overfit reads a training and a validation "
				"loss from AlgorithmSpecification."
				"MetricDefinitions: give one whose Name holds "
				"'loss' and 'train', and one whose Name holds "
				"'loss' and 'val' or 'test'");
	if (r->kind == CTRL_RULE_LOSS && !any)
		return bad_rule(err, c,
				"LossNotDecreasing reads the loss from "
				"AlgorithmSpecification.MetricDefinitions: "
				"give one whose Name holds 'loss' (or matches "
				"tensor_regex)");
	return 0;
}

int ctrl_rules_parse(const struct api_job_spec *spec, struct ctrl_rule **out,
		     size_t *n, struct buf *err)
{
	struct ctrl_rule *r = NULL;
	size_t i;
	int ret = 0;

	*out = NULL;
	*n = 0;
	if (!spec->n_rules)
		return 0;
	r = xcalloc(spec->n_rules, sizeof(*r));
	for (i = 0; i < spec->n_rules && !ret; i++) {
		const struct api_rule_config *c = &spec->rules[i];
		const struct rule_def *d = find_def(c, err);

		if (!d) {
			ret = ERR_INVALID;
			break;
		}
		r[i].kind = d->kind;
		r[i].profiler = d->profiler;
		r[i].name = xstrdup(c->name);
		ret = parse_params(c, d, &r[i], err);
		if (!ret && d->metric)
			ret = check_metrics(spec, c, &r[i], err);
	}
	if (ret) {
		ctrl_rules_free(r, spec->n_rules);
		return ret;
	}
	*out = r;
	*n = spec->n_rules;
	return 0;
}

void ctrl_rules_free(struct ctrl_rule *r, size_t n)
{
	size_t i;

	for (i = 0; r && i < n; i++) {
		free(r[i].name);
		free(r[i].prefix);
		bregex_free(r[i].re);
	}
	free(r);
}

int64_t ctrl_rules_stall_ms(const struct ctrl_rule *r, size_t n,
			    const char *job, int *stop)
{
	size_t i;

	*stop = 0;
	for (i = 0; i < n; i++) {
		if (r[i].kind != CTRL_RULE_STALLED)
			continue;
		*stop = r[i].p[STALL_STOP] != 0 &&
			(!r[i].prefix ||
			 !strncmp(job, r[i].prefix, strlen(r[i].prefix)));
		return (int64_t)(r[i].p[STALL_THRESHOLD] * 1000);
	}
	return 0;
}

int64_t ctrl_rules_scan_ms(const struct ctrl_rule *r, size_t n)
{
	double us = SCAN_US;
	size_t i, k;

	for (i = 0; i < n; i++) {
		const struct rule_def *d = def_of(r[i].kind);

		for (k = 0; k < CTRL_RULE_MAX_PARAMS && d->params[k].name; k++)
			if (!strcmp(d->params[k].name, "scan_interval_us") &&
			    r[i].p[k] < us)
				us = r[i].p[k];
	}
	return (int64_t)(us / 1000);
}

/* --------------------------------------------------------- evaluation */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ctrl_rules_percentile(double *v, size_t n, double p)
{
	double pos, frac;
	size_t lo;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = p / 100 * (double)(n - 1);
	lo = (size_t)pos;
	frac = pos - (double)lo;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + frac * (v[lo + 1] - v[lo]);
}

static void cut_details(struct buf *d)
{
	if (d->len > DETAILS_MAX) {
		d->len = DETAILS_MAX - 3;
		while (d->len &&
		       ((unsigned char)d->data[d->len] & 0xc0) == 0x80)
			d->len--;
		d->data[d->len] = '\0';
		(void)buf_adds(d, "...");
	}
}

static enum ctrl_rule_status eval_stalled(const struct ctrl_rule *r,
					  const struct ctrl_rule_facts *f,
					  struct buf *details)
{
	(void)f;
	(void)buf_addf(details, "no rank was without progress for %g s",
		       r->p[STALL_THRESHOLD]);
	return CTRL_RULE_NO_ISSUES;
}

/*
 * One loss series: every num_steps points, the loss must be at least
 * diff_percent % below the loss num_steps points before. Returns 1 and
 * says where when it is not.
 */
static int loss_stalls(const struct ctrl_rule *r,
		       const struct ctrl_rule_series *s, struct buf *details)
{
	size_t step = (size_t)r->p[LOSS_NUM_STEPS];
	double want = r->p[LOSS_DIFF_PERCENT];
	size_t i;

	for (i = step; i < s->n; i += step) {
		double prev = s->p[i - step].v, cur = s->p[i].v;
		double drop = prev != 0 ? (prev - cur) / fabs(prev) * 100 :
					  (cur < prev ? 100 : 0);

		if (drop >= want)
			continue;
		(void)buf_addf(details,
			       "%s did not decrease by %g %% over %zu "
			       "steps: %g at point %zu, %g at point %zu",
			       s->name, want, step, prev, i - step + 1, cur,
			       i + 1);
		return 1;
	}
	return 0;
}

static enum ctrl_rule_status eval_loss(const struct ctrl_rule *r,
				       const struct ctrl_rule_facts *f,
				       struct buf *details)
{
	size_t i, seen = 0, points = 0;

	for (i = 0; i < f->n_metrics; i++) {
		const struct ctrl_rule_series *s = &f->metrics[i];

		if (!metric_named(r, s->name))
			continue;
		seen++;
		points += s->n;
		if (loss_stalls(r, s, details)) {
			cut_details(details);
			return CTRL_RULE_ISSUES;
		}
	}
	if (!points) {
		(void)buf_adds(details, "no loss was reported: no line "
					"matched a loss's MetricDefinition");
		return CTRL_RULE_ERROR;
	}
	(void)buf_addf(details,
		       "the loss decreased by at least %g %% every %g "
		       "steps (%zu series, %zu points)",
		       r->p[LOSS_DIFF_PERCENT], r->p[LOSS_NUM_STEPS], seen,
		       points);
	return CTRL_RULE_NO_ISSUES;
}

static const struct ctrl_rule_series *
find_series(const struct ctrl_rule_facts *f, int (*pick)(const char *))
{
	size_t i;

	for (i = 0; i < f->n_metrics; i++)
		if (pick(f->metrics[i].name) && f->metrics[i].n)
			return &f->metrics[i];
	return NULL;
}

/*
 * Overfit: at each validation point from start_step on, the ratio of
 * (validation - training) to the training loss last reported before it;
 * patience points in a row above ratio_threshold fire.
 */
static enum ctrl_rule_status eval_overfit(const struct ctrl_rule *r,
					  const struct ctrl_rule_facts *f,
					  struct buf *details)
{
	const struct ctrl_rule_series *tr = find_series(f, is_train_loss);
	const struct ctrl_rule_series *va = find_series(f, is_val_loss);
	size_t i, t = 0, run = 0;

	if (!tr || !va) {
		(void)buf_adds(details, "no training and validation loss "
					"were both reported");
		return CTRL_RULE_ERROR;
	}
	for (i = (size_t)r->p[OVF_START_STEP]; i < va->n; i++) {
		double ratio;

		while (t + 1 < tr->n && tr->p[t + 1].ts_ms <= va->p[i].ts_ms)
			t++;
		if (tr->p[t].v == 0)
			continue;
		ratio = (va->p[i].v - tr->p[t].v) / fabs(tr->p[t].v);
		run = ratio > r->p[OVF_RATIO] ? run + 1 : 0;
		if (run >= (size_t)r->p[OVF_PATIENCE]) {
			(void)buf_addf(details,
				       "%s %g is %.0f %% above %s %g at "
				       "validation point %zu (ratio "
				       "threshold %g)",
				       va->name, va->p[i].v, ratio * 100,
				       tr->name, tr->p[t].v, i + 1,
				       r->p[OVF_RATIO]);
			return CTRL_RULE_ISSUES;
		}
	}
	(void)buf_addf(details,
		       "%s stayed within %g of %s (%zu validation points)",
		       va->name, r->p[OVF_RATIO], tr->name, va->n);
	return CTRL_RULE_NO_ISSUES;
}

/* Samples of h after patience, as a count; 0 when none. */
static size_t after_patience(const struct ctrl_rule_host *h, double patience)
{
	return h->n > (size_t)patience ? h->n - (size_t)patience : 0;
}

/* A verdict for a GPU rule on a job whose hosts have no GPU. */
static enum ctrl_rule_status no_gpus(const struct ctrl_rule_facts *f,
				     struct buf *details)
{
	size_t i;

	for (i = 0; i < f->n_hosts; i++)
		if (f->hosts[i].gpus > 0)
			return CTRL_RULE_IN_PROGRESS;
	(void)buf_adds(details, "the job's hosts have no GPU: there is no "
				"GPU utilization to judge");
	return CTRL_RULE_ERROR;
}

static enum ctrl_rule_status eval_low_gpu(const struct ctrl_rule *r,
					  const struct ctrl_rule_facts *f,
					  struct buf *details)
{
	enum ctrl_rule_status st = no_gpus(f, details);
	size_t i, k, judged = 0;
	double *v = NULL;

	if (st != CTRL_RULE_IN_PROGRESS)
		return st;
	st = CTRL_RULE_NO_ISSUES;
	for (i = 0; i < f->n_hosts && st == CTRL_RULE_NO_ISSUES; i++) {
		const struct ctrl_rule_host *h = &f->hosts[i];
		size_t n = after_patience(h, r->p[LGPU_PATIENCE]);
		size_t w = n < (size_t)r->p[LGPU_WINDOW] ?
				   n :
				   (size_t)r->p[LGPU_WINDOW];
		double p95, p5;

		if (!h->gpus || !w)
			continue;
		judged++;
		v = xrealloc(v, w * sizeof(*v));
		for (k = 0; k < w; k++)
			v[k] = h->s[h->n - w + k].gpu;
		p95 = ctrl_rules_percentile(v, w, 95);
		p5 = ctrl_rules_percentile(v, w, 5);
		if (p95 < r->p[LGPU_P95]) {
			(void)buf_addf(details,
				       "%s: GPU utilization is low (95th "
				       "percentile %.0f %% < %g %%)",
				       h->algo, p95, r->p[LGPU_P95]);
			st = CTRL_RULE_ISSUES;
		} else if (p5 < r->p[LGPU_P5]) {
			(void)buf_addf(details,
				       "%s: GPU utilization fluctuates (5th "
				       "percentile %.0f %% < %g %%, 95th "
				       "%.0f %%)",
				       h->algo, p5, r->p[LGPU_P5], p95);
			st = CTRL_RULE_ISSUES;
		}
	}
	free(v);
	if (st == CTRL_RULE_NO_ISSUES && !judged) {
		(void)buf_addf(details,
			       "no telemetry after the first %g samples "
			       "(patience)",
			       r->p[LGPU_PATIENCE]);
		return CTRL_RULE_NO_ISSUES;
	}
	if (st == CTRL_RULE_NO_ISSUES)
		(void)buf_addf(details,
			       "GPU utilization neither low nor fluctuating "
			       "on %zu host%s",
			       judged, judged == 1 ? "" : "s");
	return st;
}

static enum ctrl_rule_status
eval_cpu_bottleneck(const struct ctrl_rule *r, const struct ctrl_rule_facts *f,
		    struct buf *details)
{
	enum ctrl_rule_status st = no_gpus(f, details);
	size_t i, k, total = 0, hits = 0;

	if (st != CTRL_RULE_IN_PROGRESS)
		return st;
	for (i = 0; i < f->n_hosts; i++) {
		const struct ctrl_rule_host *h = &f->hosts[i];
		size_t n = after_patience(h, r->p[CPUB_PATIENCE]);

		if (!h->gpus)
			continue;
		for (k = h->n - n; k < h->n; k++) {
			total++;
			hits += h->s[k].cpu > r->p[CPUB_CPU] &&
				h->s[k].gpu < r->p[CPUB_GPU];
		}
	}
	if (total &&
	    (double)hits * 100 / (double)total > r->p[CPUB_THRESHOLD]) {
		(void)buf_addf(details,
			       "CPU above %g %% with GPU below %g %% in %zu "
			       "of %zu samples (more than %g %%)",
			       r->p[CPUB_CPU], r->p[CPUB_GPU], hits, total,
			       r->p[CPUB_THRESHOLD]);
		return CTRL_RULE_ISSUES;
	}
	(void)buf_addf(details,
		       "CPU bottleneck in %zu of %zu samples (at most %g %%)",
		       hits, total, r->p[CPUB_THRESHOLD]);
	return CTRL_RULE_NO_ISSUES;
}

/* "cpu p50/p95/p99 a/b/c %" of one figure of h's samples. */
static void usage_line(const struct ctrl_rule_host *h, size_t field,
		       const char *label, struct buf *details)
{
	double *v = xcalloc(h->n ? h->n : 1, sizeof(*v));
	double p50, p95, p99;
	size_t k;

	for (k = 0; k < h->n; k++)
		v[k] = field == 0 ? h->s[k].cpu :
		       field == 1 ? h->s[k].mem :
				    h->s[k].gpu;
	p50 = ctrl_rules_percentile(v, h->n, 50);
	p95 = ctrl_rules_percentile(v, h->n, 95);
	p99 = ctrl_rules_percentile(v, h->n, 99);
	(void)buf_addf(details, " %s p50/p95/p99 %.0f/%.0f/%.0f %%", label, p50,
		       p95, p99);
	free(v);
}

/*
 * OverallSystemUsage, as SageMaker's: the percentiles of each host's use,
 * for the record; it never fires.
 */
static enum ctrl_rule_status eval_overall(const struct ctrl_rule *r,
					  const struct ctrl_rule_facts *f,
					  struct buf *details)
{
	size_t i, judged = 0;

	(void)r;
	for (i = 0; i < f->n_hosts; i++) {
		const struct ctrl_rule_host *h = &f->hosts[i];

		if (!h->n)
			continue;
		(void)buf_addf(details,
			       "%s%s (%zu samples):", judged++ ? "; " : "",
			       h->algo, h->n);
		usage_line(h, 0, "CPU", details);
		usage_line(h, 1, "memory", details);
		if (h->gpus)
			usage_line(h, 2, "GPU", details);
	}
	if (!judged) {
		(void)buf_adds(details, "no telemetry arrived from the job's "
					"hosts");
		return CTRL_RULE_ERROR;
	}
	cut_details(details);
	return CTRL_RULE_NO_ISSUES;
}

/*
 * ProfilerReport: the rules of its set that are evaluated here, with
 * their defaults; IssuesFound when one of them fires. Its other rules
 * (BatchSize, Dataloader, GPUMemoryIncrease, LoadBalancing,
 * MaxInitializationTime, IOBottleneck, StepOutlier) are named as not
 * evaluated.
 */
static enum ctrl_rule_status eval_report(const struct ctrl_rule *r,
					 const struct ctrl_rule_facts *f,
					 struct buf *details)
{
	static const enum ctrl_rule_kind parts[] = { CTRL_RULE_LOW_GPU,
						     CTRL_RULE_CPU_BOTTLENECK,
						     CTRL_RULE_OVERALL };
	enum ctrl_rule_status st = CTRL_RULE_NO_ISSUES;
	struct ctrl_rule sub;
	struct buf one = BUF_INIT;
	size_t i, k;

	(void)r;
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const struct rule_def *d = def_of(parts[i]);
		enum ctrl_rule_status s;

		memset(&sub, 0, sizeof(sub));
		sub.kind = d->kind;
		sub.profiler = 1;
		for (k = 0; k < CTRL_RULE_MAX_PARAMS && d->params[k].name; k++)
			sub.p[k] = d->params[k].def;
		buf_reset(&one);
		s = d->eval(&sub, f, &one);
		if (s == CTRL_RULE_ISSUES)
			st = CTRL_RULE_ISSUES;
		(void)buf_addf(details, "%s: %s (%s). ", d->name,
			       ctrl_rule_status_name(s), one.data);
	}
	buf_release(&one);
	(void)buf_adds(details, "Not evaluated here: BatchSize, Dataloader, "
				"GPUMemoryIncrease, IOBottleneck, "
				"LoadBalancing, MaxInitializationTime, "
				"StepOutlier");
	cut_details(details);
	return st;
}

enum ctrl_rule_status ctrl_rule_eval(const struct ctrl_rule *r,
				     const struct ctrl_rule_facts *f,
				     struct buf *details)
{
	const struct rule_def *d = def_of(r->kind);
	enum ctrl_rule_status st = d->eval(r, f, details);

	cut_details(details);
	return st;
}
