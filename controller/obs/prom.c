/*
 * The Prometheus text format writer (controller/obs/prom.h).
 */
#include <stdarg.h>

#include "controller/obs/prom.h"
#include "common/xalloc.h"
#include "common/banned.h"

void ctrl_prom_family(struct buf *out, const char *name, const char *type,
		      const char *help)
{
	(void)buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		       type);
}

void ctrl_prom_escape(struct buf *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			(void)buf_addch(out, '\\');
		if (*v == '\n') {
			(void)buf_adds(out, "\\n");
			continue;
		}
		(void)buf_addch(out, *v);
	}
}

void ctrl_prom_sample_start(struct ctrl_prom_sample *s, struct buf *out,
			    const char *name)
{
	s->out = out;
	s->n_labels = 0;
	(void)buf_adds(out, name);
}

static void label_key(struct ctrl_prom_sample *s, const char *key)
{
	(void)buf_addch(s->out, s->n_labels++ ? ',' : '{');
	(void)buf_addf(s->out, "%s=\"", key);
}

void ctrl_prom_label(struct ctrl_prom_sample *s, const char *key,
		     const char *value)
{
	label_key(s, key);
	ctrl_prom_escape(s->out, value);
	(void)buf_addch(s->out, '"');
}

void ctrl_prom_label_int(struct ctrl_prom_sample *s, const char *key, int v)
{
	label_key(s, key);
	(void)buf_addf(s->out, "%d\"", v);
}

void ctrl_prom_value(struct ctrl_prom_sample *s, const char *fmt, ...)
{
	va_list ap;

	if (s->n_labels)
		(void)buf_addch(s->out, '}');
	(void)buf_addch(s->out, ' ');
	va_start(ap, fmt);
	(void)buf_vaddf(s->out, fmt, ap);
	va_end(ap);
	(void)buf_addch(s->out, '\n');
}

/* Bucket upper bounds in microseconds, and as printed. */
static const int64_t bucket_us[] = { 500,     1000,	2500,	 5000,
				     10000,   25000,	50000,	 100000,
				     250000,  500000,	1000000, 2500000,
				     5000000, 10000000, 30000000 };
static const char *const bucket_le[] = { "0.0005", "0.001", "0.0025", "0.005",
					 "0.01",   "0.025", "0.05",   "0.1",
					 "0.25",   "0.5",   "1",      "2.5",
					 "5",	   "10",    "30" };

_Static_assert(ARRAY_SIZE(bucket_us) == CTRL_PROM_BUCKETS &&
		       ARRAY_SIZE(bucket_le) == CTRL_PROM_BUCKETS,
	       "every latency bucket needs its bound and its label");

void ctrl_prom_hist_observe(struct ctrl_prom_hist *h, int64_t us)
{
	size_t bi;

	if (us < 0)
		us = 0;
	for (bi = 0; bi < CTRL_PROM_BUCKETS; bi++)
		if (us <= bucket_us[bi])
			break;
	atomic_fetch_add_explicit(&h->buckets[bi], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, (unsigned long long)us,
				  memory_order_relaxed);
}

static void hist_sample(struct ctrl_prom_sample *s, struct buf *out,
			const char *name, const char *suffix, const char *key,
			const char *value)
{
	struct buf n = BUF_INIT;

	(void)buf_addf(&n, "%s%s", name, suffix);
	ctrl_prom_sample_start(s, out, n.data);
	if (key)
		ctrl_prom_label(s, key, value);
	buf_release(&n);
}

void ctrl_prom_hist_render(struct ctrl_prom_hist *h, struct buf *out,
			   const char *name, const char *key,
			   const char *value)
{
	unsigned long long counts[CTRL_PROM_BUCKETS + 1], cum = 0;
	struct ctrl_prom_sample s;
	size_t k;

	for (k = 0; k <= CTRL_PROM_BUCKETS; k++) {
		counts[k] = atomic_load_explicit(&h->buckets[k],
						 memory_order_relaxed);
		cum += counts[k];
	}
	if (!cum)
		return;
	cum = 0;
	for (k = 0; k <= CTRL_PROM_BUCKETS; k++) {
		cum += counts[k];
		hist_sample(&s, out, name, "_bucket", key, value);
		ctrl_prom_label(&s, "le",
				k < CTRL_PROM_BUCKETS ? bucket_le[k] : "+Inf");
		ctrl_prom_value(&s, "%llu", cum);
	}
	hist_sample(&s, out, name, "_sum", key, value);
	ctrl_prom_value(&s, "%.6f",
			(double)atomic_load_explicit(&h->sum_us,
						     memory_order_relaxed) /
				1e6);
	hist_sample(&s, out, name, "_count", key, value);
	ctrl_prom_value(&s, "%llu", cum);
}
