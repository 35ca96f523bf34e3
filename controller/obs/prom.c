/*
 * The Prometheus text format writer (controller/obs/prom.h).
 */
#include <stdarg.h>

#include "controller/obs/prom.h"
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
