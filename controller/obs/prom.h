#ifndef CTRL_PROM_H
#define CTRL_PROM_H

/*
 * The one writer of the Prometheus text format (version 0.0.4) that
 * GET /metrics answers with (controller/obs/metrics.h). A family is its
 * "# HELP" and "# TYPE" lines, then its samples; a sample is written in
 * three steps so that label values, whatever they hold, come out escaped:
 *
 *	struct ctrl_prom_sample s;
 *
 *	ctrl_prom_family(out, "trainctl_hosts", "gauge", "Hosts by state.");
 *	ctrl_prom_sample_start(&s, out, "trainctl_hosts");
 *	ctrl_prom_label(&s, "state", "ready");
 *	ctrl_prom_value(&s, "%lld", n);
 *
 * gives trainctl_hosts{state="ready"} 3. Appends to an out without a
 * max never fail; with one, a line may be cut short.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "common/buf.h"

struct ctrl_prom_sample {
	struct buf *out;
	size_t n_labels; /* labels written so far */
};

/* The "# HELP name help" and "# TYPE name type" lines of a family. */
void ctrl_prom_family(struct buf *out, const char *name, const char *type,
		      const char *help);

/* Starts a sample line: its name, before any label. */
void ctrl_prom_sample_start(struct ctrl_prom_sample *s, struct buf *out,
			    const char *name);

/* Adds key="value", with \, " and newline in value escaped. */
void ctrl_prom_label(struct ctrl_prom_sample *s, const char *key,
		     const char *value);

/* Adds key="v" for an integer v. */
void ctrl_prom_label_int(struct ctrl_prom_sample *s, const char *key, int v);

/* Ends the sample with its value, printed by the printf format fmt. */
void ctrl_prom_value(struct ctrl_prom_sample *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends v with \, " and newline escaped as a label value asks. */
void ctrl_prom_escape(struct buf *out, const char *v);

/*
 * A latency histogram, in seconds on the wire, fed in microseconds from
 * any thread (relaxed atomics): bounds from 0.5 ms to 30 s.
 */
#define CTRL_PROM_BUCKETS 15

struct ctrl_prom_hist {
	atomic_ullong buckets[CTRL_PROM_BUCKETS + 1]; /* last: above all */
	atomic_ullong sum_us;
};

void ctrl_prom_hist_observe(struct ctrl_prom_hist *h, int64_t us);

/*
 * Writes name_bucket, name_sum and name_count, each with the label
 * key="value" first when key is not NULL; nothing for an empty h.
 */
void ctrl_prom_hist_render(struct ctrl_prom_hist *h, struct buf *out,
			   const char *name, const char *key,
			   const char *value);

#endif
