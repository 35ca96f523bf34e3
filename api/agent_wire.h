#ifndef API_AGENT_WIRE_H
#define API_AGENT_WIRE_H

/*
 * Internal to api/: the readers and builders that the agent protocol's
 * messages share (api/agent_proto.c), used by api/agent_work.c,
 * api/agent_status.c and api/agent_register.c. Readers check one member,
 * copy it out and explain a refusal in err as "member 'where.key' ...";
 * builders keep a sticky error in struct api__jb.
 */
#include <stddef.h>

#include <jansson.h>

#include "api/agent_proto.h"
#include "common/buf.h"

#define API__AP_MAX_ATTEMPT 1000000
#define API__AP_MAX_GRACE_MS (28LL * 86400 * 1000)
#define API__AP_MAX_COUNT 1000000 /* cpus, gpus, ranks */
#define API__AP_MAX_MS                                         \
	(1LL << 53) /* epoch milliseconds: what a double holds \
		     */

/* API__AP_OPT: absent or null reads as NULL / unset. */
enum { API__AP_REQ = 0, API__AP_OPT = 1 };

/* ---- reading ---- */

/* Formats a member path for messages; a long one is cut short. */
void api__ap_path_fmt(char *dst, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The path of a member in messages: "assignments[2].launch.argv". */
void api__ap_member(char *dst, size_t n, const char *where, const char *key);

/* Writes "member 'where.key' what" to err; returns ERR_INVALID. */
int api__ap_bad(struct buf *err, const char *where, const char *key,
		const char *what);

/* Parses a message: one object, bounded in size, depth and strings. */
int api__ap_load(const char *json, size_t len, json_t **root, struct buf *err);

int api__ap_get_str(const json_t *o, const char *where, const char *key,
		    int opt, char **out, struct buf *err);

/* An optional job uid: 1..API_PROTO_UID_MAX lower-case hex digits. */
int api__ap_get_uid(const json_t *o, const char *where, char **out,
		    struct buf *err);

/* A string that must also be non-empty. */
int api__ap_get_name(const json_t *o, const char *where, const char *key,
		     char **out, struct buf *err);

/* *is_null (when given) says the member was null or absent. */
int api__ap_get_int(const json_t *o, const char *where, const char *key,
		    long long min, long long max, int *is_null, long long *out,
		    struct buf *err);

int api__ap_get_intv(const json_t *o, const char *where, const char *key,
		     long long min, long long max, int *out, struct buf *err);

int api__ap_get_array(const json_t *o, const char *where, const char *key,
		      size_t min, size_t max, const json_t **out,
		      struct buf *err);

int api__ap_get_object(const json_t *o, const char *where, const char *key,
		       int opt, const json_t **out, struct buf *err);

/* A NULL-terminated copy of an array of strings. */
int api__ap_get_str_list(const json_t *o, const char *where, const char *key,
			 size_t min, size_t max, char ***out, size_t *n,
			 struct buf *err);

/* An object of strings, in document order. */
int api__ap_get_str_map(const json_t *o, const char *where, const char *key,
			struct api_kv **out, size_t *n, struct buf *err);

/* An object member kept as its compact text (opt: NULL when absent). */
int api__ap_get_json_text_opt(const json_t *o, const char *where,
			      const char *key, int opt, char **out,
			      struct buf *err);
int api__ap_get_json_text(const json_t *o, const char *where, const char *key,
			  char **out, struct buf *err);

/* ---- building ---- */

/*
 * A builder's sticky error: the first failure is kept and later steps turn
 * into no-ops on NULL trees, so each builder checks once at the end.
 */
struct api__jb {
	int ret;
};

json_t *api__ap_jstr(struct api__jb *b, const char *s); /* NULL: null */
json_t *api__ap_jint(struct api__jb *b, long long v);
void api__ap_put(struct api__jb *b, json_t *o, const char *key, json_t *v);
void api__ap_push(struct api__jb *b, json_t *arr, json_t *v);
json_t *api__ap_jobj(struct api__jb *b);
json_t *api__ap_jarr(struct api__jb *b);
json_t *api__ap_jlist(struct api__jb *b, char *const *l, size_t n);

/* A config text as an embedded object; NULL is {}. */
json_t *api__ap_jtext(struct api__jb *b, const char *text);

/* Dumps root into out (reals as Python's repr) and frees it. */
int api__ap_finish(struct api__jb *b, json_t *root, struct buf *out);

#endif
