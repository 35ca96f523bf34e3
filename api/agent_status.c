/*
 * The agent protocol's status message and log batches
 * (docs/agent-protocol.md): what an agent reports about its assignments
 * and the output of their processes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "api/agent_wire.h"
#include "api/telemetry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

void api_report_release(struct api_report *r)
{
	size_t i;

	for (i = 0; r->procs && i < r->n_procs; i++)
		free(r->procs[i].tail);
	free(r->job);
	free(r->job_uid);
	free(r->algo);
	free(r->procs);
	free(r->failure);
	free(r->error);
	free(r->runtime);
	memset(r, 0, sizeof(*r));
}

void api_status_release(struct api_status *s)
{
	size_t i;

	free(s->boot_id);
	for (i = 0; s->items && i < s->n; i++)
		api_report_release(&s->items[i]);
	free(s->items);
	free(s->images_json);
	for (i = 0; s->samples && i < s->n_samples; i++)
		tm_host_sample_release(&s->samples[i]);
	free(s->samples);
	free(s->telemetry_error);
	memset(s, 0, sizeof(*s));
}

/*
 * A process is running while exited_ms is null, and then exit_code and
 * signal are null too; once exited, exactly one of them is set.
 */
static int parse_proc(const json_t *o, const char *where,
		      struct api_proc_report *p, struct buf *err)
{
	long long v = 0;
	int code_null, sig_null, exit_null, ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = api__ap_get_intv(o, where, "rank", 0, API__AP_MAX_COUNT, &p->rank,
			       err);
	ret = ret ? ret :
		    api__ap_get_int(o, where, "pid", 1, INT32_MAX, NULL, &v,
				    err);
	p->pid = v;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "started_ms", 0, API__AP_MAX_MS,
				    NULL, &v, err);
	p->started_ms = v;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "exit_code", 0, 255, &code_null,
				    &v, err);
	p->exit_code = (int)v;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "signal", 1, 255, &sig_null, &v,
				    err);
	p->signal = (int)v;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "exited_ms", 0, API__AP_MAX_MS,
				    &exit_null, &v, err);
	p->exited_ms = v;
	ret = ret ? ret :
		    api__ap_get_str(o, where, "tail", API__AP_OPT, &p->tail,
				    err);
	if (ret)
		return ret;
	p->exited = !exit_null;
	if (exit_null && (!code_null || !sig_null))
		return api__ap_bad(err, where, "exited_ms",
				   "must be set with exit_code or signal");
	if (!exit_null && code_null == sig_null)
		return api__ap_bad(err, where, "exit_code",
				   "or signal (exactly one) must be set once "
				   "exited_ms is");
	return 0;
}

static int parse_report(const json_t *o, const char *where,
			struct api_report *r, struct buf *err)
{
	const json_t *arr, *hung;
	char m[128], *phase = NULL;
	long long v = 0;
	int is_null, ret;
	size_t i;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = api__ap_get_name(o, where, "job", &r->job, err);
	ret = ret ? ret : api__ap_get_uid(o, where, &r->job_uid, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "attempt", 1,
				     API__AP_MAX_ATTEMPT, &r->attempt, err);
	ret = ret ? ret : api__ap_get_name(o, where, "algo", &r->algo, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "phase", API__AP_REQ, &phase,
				    err);
	if (!ret && api_phase_parse(phase, &r->phase))
		ret = api__ap_bad(err, where, "phase", "is not a known phase");
	free(phase);
	ret = ret ? ret :
		    api__ap_get_int(o, where, "started_ms", 0, API__AP_MAX_MS,
				    &is_null, &v, err);
	r->started_ms = v;
	ret = ret ? ret :
		    api__ap_get_array(o, where, "processes", 0,
				      API_PROTO_MAX_PROCS, &arr, err);
	if (!ret) {
		r->n_procs = json_array_size(arr);
		r->procs = xcalloc(r->n_procs + 1, sizeof(*r->procs));
	}
	for (i = 0; !ret && i < r->n_procs; i++) {
		api__ap_path_fmt(m, sizeof(m), "%s.processes[%zu]", where, i);
		ret = parse_proc(json_array_get(arr, i), m, &r->procs[i], err);
	}
	ret = ret ? ret :
		    api__ap_get_str(o, where, "failure", API__AP_OPT,
				    &r->failure, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "error", API__AP_OPT, &r->error,
				    err);
	hung = json_object_get(o, "hung");
	if (!ret && hung && !json_is_boolean(hung))
		ret = api__ap_bad(err, where, "hung", "is not a boolean");
	r->hung = json_is_true(hung);
	v = 0;
	ret = ret ? ret :
		    api__ap_get_int(o, where, "check_ms", 0, API__AP_MAX_MS,
				    &is_null, &v, err);
	r->check_ms = v;
	ret = ret ? ret :
		    api__ap_get_str(o, where, "runtime", API__AP_OPT,
				    &r->runtime, err);
	return ret;
}

/* "images": {"pruned": N, "list": [{"id", "names", "size", ...}]} */
static int parse_images(const json_t *root, struct api_status *s,
			struct buf *err)
{
	const json_t *o = json_object_get(root, "images"), *list, *e;
	long long v = 0;
	size_t i;
	int ret;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return api__ap_bad(err, "", "images",
				   "must be an object or null");
	ret = api__ap_get_int(o, "images", "pruned", 0, INT64_MAX, NULL, &v,
			      err);
	s->images_pruned = v;
	ret = ret ? ret :
		    api__ap_get_array(o, "images", "list", 0,
				      API_PROTO_MAX_IMAGES, &list, err);
	json_array_foreach(list, i, e)
	{
		const json_t *id = json_object_get(e, "id");
		const json_t *names = json_object_get(e, "names");

		if (ret)
			break;
		if (!json_is_object(e) || !json_is_string(id) ||
		    !json_is_array(names) ||
		    !json_is_integer(json_object_get(e, "size")))
			ret = api__ap_bad(
				err, "images", "list",
				"must hold objects with id, names and "
				"size");
	}
	if (!ret)
		s->images_json = json_dumps(list, JSON_COMPACT);
	return ret;
}

int api_status_parse(const char *json, size_t len, struct api_status *s,
		     struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_name(root, "", "boot_id", &s->boot_id, err);
	ret = ret ? ret :
		    api__ap_get_array(root, "", "assignments", 0,
				      API_PROTO_MAX_ASSIGNMENTS, &arr, err);
	if (!ret) {
		s->n = json_array_size(arr);
		s->items = xcalloc(s->n + 1, sizeof(*s->items));
	}
	for (i = 0; !ret && i < s->n; i++) {
		(void)snprintf(m, sizeof(m), "assignments[%zu]", i);
		ret = parse_report(json_array_get(arr, i), m, &s->items[i],
				   err);
	}
	ret = ret ? ret : parse_images(root, s, err);
	if (!ret) {
		struct buf why = BUF_INIT;

		if (api__telemetry_parse(root, &s->samples, &s->n_samples,
					 &why))
			s->telemetry_error = buf_detach(&why, NULL);
		buf_release(&why);
	}
	json_decref(root);
	if (ret)
		api_status_release(s);
	return ret;
}

static json_t *jint_or_null(struct api__jb *b, int set, long long v)
{
	return set ? api__ap_jint(b, v) : json_null();
}

static json_t *report_json(struct api__jb *b, const struct api_report *r)
{
	json_t *o = api__ap_jobj(b), *procs = api__ap_jarr(b);
	size_t i;

	api__ap_put(b, o, "job", api__ap_jstr(b, r->job));
	if (r->job_uid)
		api__ap_put(b, o, "job_uid", api__ap_jstr(b, r->job_uid));
	api__ap_put(b, o, "attempt", api__ap_jint(b, r->attempt));
	api__ap_put(b, o, "algo", api__ap_jstr(b, r->algo));
	api__ap_put(b, o, "phase", api__ap_jstr(b, api_phase_name(r->phase)));
	api__ap_put(b, o, "started_ms",
		    jint_or_null(b, r->started_ms != 0, r->started_ms));
	for (i = 0; r->procs && i < r->n_procs; i++) {
		const struct api_proc_report *p = &r->procs[i];
		json_t *j = api__ap_jobj(b);

		api__ap_put(b, j, "rank", api__ap_jint(b, p->rank));
		api__ap_put(b, j, "pid", api__ap_jint(b, p->pid));
		api__ap_put(b, j, "started_ms", api__ap_jint(b, p->started_ms));
		api__ap_put(b, j, "exit_code",
			    jint_or_null(b, p->exited && !p->signal,
					 p->exit_code));
		api__ap_put(b, j, "signal",
			    jint_or_null(b, p->exited && p->signal, p->signal));
		api__ap_put(b, j, "exited_ms",
			    jint_or_null(b, p->exited, p->exited_ms));
		if (p->tail)
			api__ap_put(b, j, "tail", api__ap_jstr(b, p->tail));
		api__ap_push(b, procs, j);
	}
	api__ap_put(b, o, "processes", procs);
	api__ap_put(b, o, "failure", api__ap_jstr(b, r->failure));
	api__ap_put(b, o, "error", api__ap_jstr(b, r->error));
	if (r->hung)
		api__ap_put(b, o, "hung", json_true());
	if (r->check_ms > 0)
		api__ap_put(b, o, "check_ms", api__ap_jint(b, r->check_ms));
	if (r->runtime)
		api__ap_put(b, o, "runtime", api__ap_jstr(b, r->runtime));
	return o;
}

int api_status_build(const struct api_status *s, struct buf *out)
{
	struct api__jb b = { 0 };
	json_t *root = api__ap_jobj(&b), *arr = api__ap_jarr(&b);
	size_t i;

	api__ap_put(&b, root, "boot_id", api__ap_jstr(&b, s->boot_id));
	for (i = 0; s->items && i < s->n; i++)
		api__ap_push(&b, arr, report_json(&b, &s->items[i]));
	api__ap_put(&b, root, "assignments", arr);
	if (s->images_json) {
		json_t *img = api__ap_jobj(&b), *list;

		list = json_loads(s->images_json, 0, NULL);
		if (!list && !b.ret)
			b.ret = ERR_INVALID;
		api__ap_put(&b, img, "pruned",
			    api__ap_jint(&b, s->images_pruned));
		api__ap_put(&b, img, "list", list ? list : json_array());
		api__ap_put(&b, root, "images", img);
	}
	if (s->n_samples)
		api__ap_put(&b, root, "telemetry",
			    api__telemetry_json(s->samples, s->n_samples));
	return api__ap_finish(&b, root, out);
}

/* ---- log batches ---- */

void api_log_batch_release(struct api_log_batch *b)
{
	size_t i;

	for (i = 0; b->lines && i < b->n; i++) {
		free(b->lines[i].job);
		free(b->lines[i].job_uid);
		free(b->lines[i].algo);
		free(b->lines[i].text);
	}
	free(b->lines);
	free(b->boot_id);
	memset(b, 0, sizeof(*b));
}

static int parse_line(const json_t *o, const char *where,
		      struct api_log_line *l, struct buf *err)
{
	char *stream = NULL;
	long long v = 0;
	int ret;

	if (!json_is_object(o)) {
		(void)buf_addf(err, "member '%s' must be an object", where);
		return ERR_INVALID;
	}
	ret = api__ap_get_name(o, where, "job", &l->job, err);
	ret = ret ? ret : api__ap_get_uid(o, where, &l->job_uid, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "attempt", 1,
				     API__AP_MAX_ATTEMPT, &l->attempt, err);
	ret = ret ? ret : api__ap_get_name(o, where, "algo", &l->algo, err);
	ret = ret ? ret :
		    api__ap_get_intv(o, where, "rank", 0, API__AP_MAX_COUNT,
				     &l->rank, err);
	ret = ret ? ret :
		    api__ap_get_str(o, where, "stream", API__AP_REQ, &stream,
				    err);
	if (!ret && !strcmp(stream, "stderr"))
		l->is_stderr = 1;
	else if (!ret && strcmp(stream, "stdout"))
		ret = api__ap_bad(err, where, "stream",
				  "must be \"stdout\" or \"stderr\"");
	free(stream);
	ret = ret ? ret :
		    api__ap_get_int(o, where, "ts_ms", 0, API__AP_MAX_MS, NULL,
				    &v, err);
	l->ts_ms = v;
	ret = ret ? ret :
		    api__ap_get_str(o, where, "text", API__AP_REQ, &l->text,
				    err);
	return ret;
}

int api_log_batch_parse(const char *json, size_t len, struct api_log_batch *b,
			struct buf *err)
{
	const json_t *arr;
	json_t *root;
	char m[64];
	size_t i;
	int ret, seq_null = 0;
	long long seq = 0;

	memset(b, 0, sizeof(*b));
	ret = api__ap_load(json, len, &root, err);
	if (ret)
		return ret;
	ret = api__ap_get_str(root, "", "boot_id", API__AP_OPT, &b->boot_id,
			      err);
	if (!ret && b->boot_id &&
	    (!*b->boot_id || strlen(b->boot_id) > API_PROTO_BOOT_ID_MAX))
		ret = api__ap_bad(err, "", "boot_id", "must be 1..64 bytes");
	ret = ret ? ret :
		    api__ap_get_int(root, "", "seq", 1, API__AP_MAX_MS,
				    &seq_null, &seq, err);
	b->seq = seq;
	ret = ret ? ret :
		    api__ap_get_array(root, "", "lines", 0,
				      API_PROTO_MAX_LOG_LINES, &arr, err);
	if (!ret) {
		b->n = json_array_size(arr);
		b->lines = xcalloc(b->n + 1, sizeof(*b->lines));
	}
	for (i = 0; !ret && i < b->n; i++) {
		(void)snprintf(m, sizeof(m), "lines[%zu]", i);
		ret = parse_line(json_array_get(arr, i), m, &b->lines[i], err);
	}
	json_decref(root);
	if (ret)
		api_log_batch_release(b);
	return ret;
}

int api_log_batch_build(const struct api_log_batch *lb, struct buf *out)
{
	struct api__jb b = { 0 };
	json_t *root = api__ap_jobj(&b), *arr = api__ap_jarr(&b);
	size_t i;

	for (i = 0; lb->lines && i < lb->n; i++) {
		const struct api_log_line *l = &lb->lines[i];
		json_t *o = api__ap_jobj(&b);

		api__ap_put(&b, o, "job", api__ap_jstr(&b, l->job));
		if (l->job_uid)
			api__ap_put(&b, o, "job_uid",
				    api__ap_jstr(&b, l->job_uid));
		api__ap_put(&b, o, "attempt", api__ap_jint(&b, l->attempt));
		api__ap_put(&b, o, "algo", api__ap_jstr(&b, l->algo));
		api__ap_put(&b, o, "rank", api__ap_jint(&b, l->rank));
		api__ap_put(&b, o, "stream",
			    api__ap_jstr(&b,
					 l->is_stderr ? "stderr" : "stdout"));
		api__ap_put(&b, o, "ts_ms", api__ap_jint(&b, l->ts_ms));
		api__ap_put(&b, o, "text", api__ap_jstr(&b, l->text));
		api__ap_push(&b, arr, o);
	}
	if (lb->boot_id)
		api__ap_put(&b, root, "boot_id", api__ap_jstr(&b, lb->boot_id));
	if (lb->seq > 0)
		api__ap_put(&b, root, "seq", api__ap_jint(&b, lb->seq));
	api__ap_put(&b, root, "lines", arr);
	return api__ap_finish(&b, root, out);
}
