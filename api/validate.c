/*
 * Checks request JSON against the service model tables in model_gen.c and
 * words the failures as SageMaker does:
 *
 *   2 validation errors detected: Value null at 'roleArn' failed to satisfy
 *   constraint: Member must not be null; Value '0' at
 *   'resourceConfig.volumeSizeInGB' failed to satisfy constraint: Member
 *   must have value greater than or equal to 1
 *
 * The walk follows the model, not the document: unknown members are never
 * visited, so the recursion is as deep as the model (api__max_depth) however
 * deep the JSON is, except below a recursive shape (SearchExpression), where
 * it stops at VALIDATE_MAX_DEPTH levels. Patterns are compiled once, on first
 * use, and matched against the whole string, as Java's String.matches() does on
 * the service.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model.h"
#include "api/validate.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Errors spelled out in the message; the count covers all of them. */
#define VALIDATE_MAX_LISTED 10
/* Code points of a value echoed in a message. */
#define VALIDATE_MAX_ECHO 256
/* Path segments; the generated model needs api__max_depth - 1. */
#define VALIDATE_MAX_DEPTH 32
/* Backtracking budget per match; the model's patterns need far less. */
#define VALIDATE_MATCH_LIMIT 1000000

/*
 * What a pattern slot holds. The model's commonest patterns are .* and
 * [\S\s]*, which need no regex engine.
 */
enum re_state {
	RE_UNTRIED = 0,
	RE_PCRE2, /* code is compiled */
	RE_SKIP,  /* PCRE2 rejects the pattern: the check is skipped */
	RE_ANY,	  /* matches every string */
	RE_LINE,  /* ".*": no line terminators */
	RE_LINE1  /* ".+": the same, and not empty */
};

/*
 * One pattern. state leaves RE_UNTRIED exactly once, under re_lock;
 * readers that see another state with acquire order see code too.
 */
struct re_slot {
	atomic_int state;
	pcre2_code *code;
};

static pthread_once_t re_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t re_lock = PTHREAD_MUTEX_INITIALIZER;
static struct re_slot *re_slots;
static pcre2_general_context *re_gctx;
static pcre2_compile_context *re_cctx;
static pcre2_match_context *re_mctx;

/* One path segment: a member name, or a 1-based list index. */
struct seg {
	const char *name; /* NULL: list element `index` */
	size_t index;
};

struct vctx {
	unsigned nerr;
	struct buf msgs; /* the listed errors, "; "-separated */
	/*
	 * When set, failures are not reported but their constraint texts are
	 * collected here, ", "-separated, for "Map keys must satisfy
	 * constraint: [...]".
	 */
	struct buf *collect;
	unsigned ncollect;
	pcre2_match_data *md; /* made on the first pattern check */
	int depth;
	struct seg segs[VALIDATE_MAX_DEPTH];
};

static const char *const kind_names[] = {
	[API__STRUCTURE] = "structure",
	[API__LIST] = "list",
	[API__MAP] = "map",
	[API__STRING] = "string",
	[API__INTEGER] = "integer",
	[API__LONG] = "long",
	[API__FLOAT] = "float",
	[API__DOUBLE] = "double",
	[API__BOOLEAN] = "boolean",
	[API__TIMESTAMP] = "timestamp",
	[API__BLOB] = "blob",
};

static void check_value(struct vctx *c, int shape, const json_t *v);

static void *re_malloc(size_t n, void *data)
{
	(void)data;
	return xmalloc(n);
}

static void re_free(void *p, void *data)
{
	(void)data;
	free(p);
}

static void re_init(void)
{
	re_slots =
		xcalloc(api__npatterns ? api__npatterns : 1, sizeof(*re_slots));
	/* xmalloc exits on failure, so PCRE2 never sees NULL from it. */
	re_gctx = pcre2_general_context_create(re_malloc, re_free, NULL);
	re_cctx = pcre2_compile_context_create(re_gctx);
	re_mctx = pcre2_match_context_create(re_gctx);
	if (!re_gctx || !re_cctx || !re_mctx)
		BUG("pcre2 contexts");
	/*
	 * Java's '.' stops at \n, \r, U+0085, U+2028 and U+2029; PCRE2's
	 * NEWLINE_ANY is the closest (it adds \v and \f).
	 */
	pcre2_set_newline(re_cctx, PCRE2_NEWLINE_ANY);
	pcre2_set_match_limit(re_mctx, VALIDATE_MATCH_LIMIT);
}

static enum re_state re_compile(struct re_slot *s, const char *src)
{
	int errcode;
	PCRE2_SIZE erroff;

	if (!strcmp(src, "[\\S\\s]*") || !strcmp(src, "[\\s\\S]*"))
		return RE_ANY;
	if (!strcmp(src, ".*"))
		return RE_LINE;
	if (!strcmp(src, ".+"))
		return RE_LINE1;
	/*
	 * Anchoring both ends at compile time gives Java's matches() and,
	 * unlike match-time anchoring, keeps the JIT usable. Invalid UTF-8
	 * then never matches, instead of costing a check of every subject.
	 */
	s->code = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
				PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
					PCRE2_ANCHORED | PCRE2_ENDANCHORED,
				&errcode, &erroff, re_cctx);
	if (!s->code)
		return RE_SKIP;
	/* Without JIT the interpreter runs the same pattern. */
	(void)pcre2_jit_compile(s->code, PCRE2_JIT_COMPLETE);
	return RE_PCRE2;
}

/* Pattern i's slot, compiled on first use. */
static const struct re_slot *re_get(int i)
{
	struct re_slot *s;
	const char *src;

	pthread_once(&re_once, re_init);
	s = &re_slots[i];
	if (atomic_load_explicit(&s->state, memory_order_acquire))
		return s;
	pthread_mutex_lock(&re_lock);
	if (!atomic_load_explicit(&s->state, memory_order_relaxed)) {
		src = api__patterns[i].regex ? api__patterns[i].regex :
					       api__patterns[i].text;
		atomic_store_explicit(&s->state, re_compile(s, src),
				      memory_order_release);
	}
	pthread_mutex_unlock(&re_lock);
	return s;
}

/*
 * Whether s has none of the line terminators that '.' (PCRE2_NEWLINE_ANY)
 * stops at: \n, \v, \f, \r, U+0085, U+2028 and U+2029.
 */
static int no_line_end(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] >= 0x0a && p[i] <= 0x0d)
			return 0;
		if (p[i] == 0xc2 && i + 1 < n && p[i + 1] == 0x85)
			return 0;
		if (p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x80 &&
		    (p[i + 2] == 0xa8 || p[i + 2] == 0xa9))
			return 0;
	}
	return 1;
}

/*
 * Appends to a buffer of this file's own, which has no cap: buf_* can then
 * fail only with ERR_TOOBIG, which cannot happen.
 */
static void msg_add(struct buf *b, const char *s, size_t n)
{
	int r = buf_add(b, s, n);

	(void)r;
}

__attribute__((format(printf, 2, 3))) static void msg_addf(struct buf *b,
							   const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vaddf(b, fmt, ap);
	va_end(ap);
	(void)r;
}

static size_t utf8_count(const char *s, size_t n)
{
	size_t i, cp = 0;

	for (i = 0; i < n; i++)
		cp += ((unsigned char)s[i] & 0xc0) != 0x80;
	return cp;
}

/* Bytes of s that hold its first max code points. */
static size_t utf8_prefix(const char *s, size_t n, size_t max)
{
	size_t i, cp = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cp++ == max)
			break;
	return i;
}

/* Appends s cut to VALIDATE_MAX_ECHO code points; NUL shows as \0. */
static void echo_str(struct buf *b, const char *s, size_t n)
{
	size_t cut = utf8_prefix(s, n, VALIDATE_MAX_ECHO);
	size_t i, start = 0;

	for (i = 0; i < cut; i++) {
		if (s[i])
			continue;
		msg_add(b, s + start, i - start);
		msg_add(b, "\\0", 2);
		start = i + 1;
	}
	msg_add(b, s + start, cut - start);
	if (cut < n)
		msg_add(b, "...", 3);
}

/*
 * A real as Java's Double.toString would show it for the values requests
 * carry: "10.0", "0.001", else the shortest %g that reads back as d.
 */
static void render_real(struct buf *b, double d)
{
	char tmp[40];
	int prec;

	if (d > -1e7 && d < 1e7 && d == (double)(long long)d) {
		msg_addf(b, "%.1f", d);
		return;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
	msg_add(b, tmp, strlen(tmp));
}

/*
 * Java-style text of a value: [a, b] for arrays, {k=v} for objects. Stops
 * early once there is more than can be echoed.
 */
static void render(struct buf *b, const json_t *v)
{
	size_t i, limit = 4 * VALIDATE_MAX_ECHO;
	void *it;

	if (b->len > limit)
		return;
	switch (json_typeof(v)) {
	case JSON_STRING:
		msg_add(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		msg_addf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		render_real(b, json_real_value(v));
		break;
	case JSON_TRUE:
		msg_add(b, "true", 4);
		break;
	case JSON_FALSE:
		msg_add(b, "false", 5);
		break;
	case JSON_NULL:
		msg_add(b, "null", 4);
		break;
	case JSON_ARRAY:
		msg_add(b, "[", 1);
		for (i = 0; i < json_array_size(v) && b->len <= limit; i++) {
			if (i)
				msg_add(b, ", ", 2);
			render(b, json_array_get(v, i));
		}
		msg_add(b, "]", 1);
		break;
	case JSON_OBJECT:
		msg_add(b, "{", 1);
		/* Iterating does not modify v; the iterators want non-const. */
		it = json_object_iter((json_t *)v);
		for (i = 0; it && b->len <= limit; i++) {
			if (i)
				msg_add(b, ", ", 2);
			msg_add(b, json_object_iter_key(it),
				json_object_iter_key_len(it));
			msg_add(b, "=", 1);
			render(b, json_object_iter_value(it));
			it = json_object_iter_next((json_t *)v, it);
		}
		msg_add(b, "}", 1);
		break;
	}
}

static void echo_value(struct buf *b, const json_t *v)
{
	struct buf tmp = BUF_INIT;

	if (json_is_string(v)) {
		echo_str(b, json_string_value(v), json_string_length(v));
		return;
	}
	render(&tmp, v);
	echo_str(b, tmp.data, tmp.len);
	buf_release(&tmp);
}

static void path_push(struct vctx *c, const char *name, size_t index)
{
	/* api_validate() checked that the model fits in segs. */
	c->segs[c->depth].name = name;
	c->segs[c->depth].index = index;
	c->depth++;
}

static void path_pop(struct vctx *c)
{
	c->depth--;
}

/*
 * Starts one failure of the value at the current path: v, or the string
 * s/n when v is NULL, or null when both are. Returns the buffer to append
 * the constraint text to, or NULL when the failure is only counted.
 */
static struct buf *fail(struct vctx *c, const json_t *v, const char *s,
			size_t n)
{
	struct buf *b = &c->msgs;
	int i;

	if (c->collect) {
		if (c->ncollect++)
			msg_add(c->collect, ", ", 2);
		return c->collect;
	}
	if (c->nerr++ >= VALIDATE_MAX_LISTED)
		return NULL;
	if (b->len)
		msg_add(b, "; ", 2);
	if (v && !json_is_null(v)) {
		msg_add(b, "Value '", 7);
		echo_value(b, v);
		msg_add(b, "'", 1);
	} else if (s) {
		msg_add(b, "Value '", 7);
		echo_str(b, s, n);
		msg_add(b, "'", 1);
	} else {
		msg_add(b, "Value null", 10);
	}
	if (c->depth) {
		msg_add(b, " at '", 5);
		for (i = 0; i < c->depth; i++) {
			if (i)
				msg_add(b, ".", 1);
			if (c->segs[i].name)
				msg_add(b, c->segs[i].name,
					strlen(c->segs[i].name));
			else
				msg_addf(b, "%zu.member", c->segs[i].index);
		}
		msg_add(b, "'", 1);
	}
	msg_add(b, " failed to satisfy constraint: ", 31);
	return b;
}

static void fail_type(struct vctx *c, const struct api__shape *sh,
		      const json_t *v)
{
	struct buf *b = fail(c, v, NULL, 0);

	if (b)
		msg_addf(b, "Member must be of type %s", kind_names[sh->kind]);
}

/*
 * Length bounds: code points of a string, entries of a list or map. The
 * service states the upper bound first.
 */
static void check_length(struct vctx *c, const struct api__shape *sh,
			 const json_t *v, const char *s, size_t n,
			 long long len)
{
	struct buf *b;

	if (sh->has_max && len > sh->max) {
		b = fail(c, v, s, n);
		if (b)
			msg_addf(b,
				 "Member must have length less than or equal "
				 "to %lld",
				 sh->max);
	}
	if (sh->has_min && len < sh->min) {
		b = fail(c, v, s, n);
		if (b)
			msg_addf(b,
				 "Member must have length greater than or "
				 "equal to %lld",
				 sh->min);
	}
}

/* Value bounds; below and above say which bound v breaks. */
static void check_range(struct vctx *c, const struct api__shape *sh,
			const json_t *v, int below, int above)
{
	struct buf *b;

	if (sh->has_max && above) {
		b = fail(c, v, NULL, 0);
		if (b)
			msg_addf(b,
				 "Member must have value less than or equal "
				 "to %lld",
				 sh->max);
	}
	if (sh->has_min && below) {
		b = fail(c, v, NULL, 0);
		if (b)
			msg_addf(b,
				 "Member must have value greater than or "
				 "equal to %lld",
				 sh->min);
	}
}

static int pattern_matches(struct vctx *c, int i, const char *s, size_t n)
{
	const struct re_slot *re = re_get(i);
	int rc;

	switch ((enum re_state)atomic_load_explicit(&re->state,
						    memory_order_relaxed)) {
	case RE_UNTRIED:
	case RE_SKIP:
	case RE_ANY:
		return 1;
	case RE_LINE:
		return no_line_end(s, n);
	case RE_LINE1:
		return n && no_line_end(s, n);
	case RE_PCRE2:
		break;
	}
	if (!c->md)
		c->md = pcre2_match_data_create(1, re_gctx);
	/*
	 * A negative rc is no match, or a blown match limit: both fail the
	 * check. 0 means a match that the one-pair ovector could not hold.
	 */
	rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, c->md, re_mctx);
	return rc >= 0;
}

/* strcmp() of e against the n bytes at s, which may hold NULs. */
static int enum_cmp(const char *e, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!e[i])
			return -1;
		if (e[i] != s[i])
			return (unsigned char)e[i] - (unsigned char)s[i];
	}
	return e[n] != '\0';
}

static int enum_has(const struct api__shape *sh, const char *s, size_t n)
{
	size_t lo = 0, hi = sh->nenums, mid;
	int r;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		r = enum_cmp(sh->enums[sh->enum_sorted[mid]], s, n);
		if (!r)
			return 1;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void check_string(struct vctx *c, const struct api__shape *sh,
			 const json_t *v, const char *s, size_t n)
{
	struct buf *b;
	size_t len = n;
	unsigned i;

	/*
	 * Code points <= bytes, and a string is empty exactly when it has no
	 * bytes: count only when the byte length does not settle it.
	 */
	if ((sh->has_max && (long long)n > sh->max) ||
	    (sh->has_min && sh->min > 1))
		len = utf8_count(s, n);
	check_length(c, sh, v, s, n, (long long)len);
	if (sh->pattern >= 0 && !pattern_matches(c, sh->pattern, s, n)) {
		b = fail(c, v, s, n);
		if (b)
			msg_addf(b,
				 "Member must satisfy regular expression "
				 "pattern: %s",
				 api__patterns[sh->pattern].text);
	}
	if (sh->nenums && !enum_has(sh, s, n)) {
		b = fail(c, v, s, n);
		if (!b)
			return;
		msg_add(b, "Member must satisfy enum value set: [", 37);
		for (i = 0; i < sh->nenums; i++) {
			if (i)
				msg_add(b, ", ", 2);
			msg_add(b, sh->enums[i], strlen(sh->enums[i]));
		}
		msg_add(b, "]", 1);
	}
}

/* Reads exactly n digits at *p into *out; returns 0 if they are not there. */
static int iso_digits(const char **p, const char *end, int n, int *out)
{
	int v = 0;

	if (end - *p < n)
		return 0;
	for (; n; n--, (*p)++) {
		if (**p < '0' || **p > '9')
			return 0;
		v = v * 10 + (**p - '0');
	}
	*out = v;
	return 1;
}

/* YYYY-MM-DD, with a month and day in range. */
static int iso_date(const char **p, const char *end)
{
	int y, mo, d;

	if (!iso_digits(p, end, 4, &y) || *p == end || *(*p)++ != '-' ||
	    !iso_digits(p, end, 2, &mo) || *p == end || *(*p)++ != '-' ||
	    !iso_digits(p, end, 2, &d))
		return 0;
	return !(mo < 1 || mo > 12 || d < 1 || d > 31);
}

/* hh:mm[:ss[.fff]], after the T. */
static int iso_time(const char **p, const char *end)
{
	int h, mi, sec = 0;

	if (!iso_digits(p, end, 2, &h) || *p == end || *(*p)++ != ':' ||
	    !iso_digits(p, end, 2, &mi) || h > 23 || mi > 59)
		return 0;
	if (*p < end && **p == ':') {
		(*p)++;
		if (!iso_digits(p, end, 2, &sec) || sec > 60)
			return 0;
		if (*p < end && (**p == '.' || **p == ',')) {
			if (++*p == end || **p < '0' || **p > '9')
				return 0;
			while (*p < end && **p >= '0' && **p <= '9')
				(*p)++;
		}
	}
	return 1;
}

/* What is left after the time: nothing, Z, or +hh[:]mm. */
static int iso_zone(const char *p, const char *end)
{
	int tzh, tzm = 0;

	if (p == end)
		return 1;
	if ((*p == 'Z' || *p == 'z') && p + 1 == end)
		return 1;
	if (*p != '+' && *p != '-')
		return 0;
	p++;
	if (!iso_digits(&p, end, 2, &tzh) || tzh > 23)
		return 0;
	if (p < end && *p == ':')
		p++;
	if (p < end && (!iso_digits(&p, end, 2, &tzm) || tzm > 59))
		return 0;
	return p == end;
}

/*
 * ISO 8601 as botocore's parse_timestamp() reads it in practice:
 * YYYY-MM-DD, optionally followed by [T ]hh:mm[:ss[.fff]] and Z or +hh[:]mm.
 */
static int iso8601_ok(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	if (!iso_date(&p, end))
		return 0;
	if (p == end)
		return 1;
	if (*p != 'T' && *p != 't' && *p != ' ')
		return 0;
	p++;
	if (!iso_time(&p, end))
		return 0;
	return iso_zone(p, end);
}

static void check_struct(struct vctx *c, const struct api__shape *sh,
			 const json_t *v)
{
	const struct api__member *m;
	const json_t *mv;
	struct buf *b;
	unsigned i;

	for (i = 0; i < sh->nmembers; i++) {
		m = &sh->members[i];
		mv = json_object_get(v, m->name);
		path_push(c, m->path, 0);
		/* JSON null is what Jackson reads as an absent member. */
		if (mv && !json_is_null(mv)) {
			check_value(c, m->shape, mv);
		} else if (m->required) {
			b = fail(c, NULL, NULL, 0);
			if (b)
				msg_add(b, "Member must not be null", 23);
		}
		path_pop(c);
	}
}

/*
 * Checks one map key, scalar map value or scalar list element, collecting
 * the texts of the constraints it fails into `into` instead of reporting
 * them (s/n: a key, which has no json_t). Returns how many failed.
 */
static unsigned collect(struct vctx *c, struct buf *into, int shape,
			const json_t *v, const char *s, size_t n)
{
	unsigned found;

	buf_reset(into);
	c->collect = into;
	c->ncollect = 0;
	if (v && json_is_null(v))
		msg_add(fail(c, NULL, NULL, 0), "Member must not be null", 23);
	else if (v)
		check_value(c, shape, v);
	else if (api__shapes[shape].kind == API__STRING)
		check_string(c, &api__shapes[shape], NULL, s, n);
	found = c->ncollect;
	c->collect = NULL;
	return found;
}

static int is_scalar(int shape)
{
	enum api__kind k = api__shapes[shape].kind;

	return k != API__STRUCTURE && k != API__LIST && k != API__MAP;
}

/*
 * Elements that are structures, lists or maps get their own path,
 * "inputDataConfig.2.member.channelName". Scalar elements are reported as
 * the service does, once for the whole list: "Value '[a, b]' at
 * 'vpcConfig.subnets' failed to satisfy constraint: Member must satisfy
 * constraint: [...]", with what the first bad element fails.
 */
static void check_list(struct vctx *c, const struct api__shape *sh,
		       const json_t *v)
{
	struct buf why = BUF_INIT;
	const json_t *elem;
	struct buf *b;
	size_t i;

	check_length(c, sh, v, NULL, 0, (long long)json_array_size(v));
	if (is_scalar(sh->member)) {
		for (i = 0; i < json_array_size(v); i++) {
			if (!collect(c, &why, sh->member, json_array_get(v, i),
				     NULL, 0))
				continue;
			b = fail(c, v, NULL, 0);
			if (b)
				msg_addf(b,
					 "Member must satisfy constraint: [%s]",
					 why.data);
			break;
		}
		buf_release(&why);
		return;
	}
	for (i = 0; i < json_array_size(v); i++) {
		elem = json_array_get(v, i);
		path_push(c, NULL, i + 1);
		if (json_is_null(elem)) {
			b = fail(c, NULL, NULL, 0);
			if (b)
				msg_add(b, "Member must not be null", 23);
		} else {
			check_value(c, sh->member, elem);
		}
		path_pop(c);
	}
}

/*
 * Like the service, one error for the keys and one for the values of a
 * map: "Value '{a=b}' at 'environment' failed to satisfy constraint: Map
 * keys must satisfy constraint: [...]", with what the first bad key (or
 * value) fails. Values that are structures, lists or maps are checked in
 * full, with the key as a path segment.
 */
static void check_map(struct vctx *c, const struct api__shape *sh,
		      const json_t *v)
{
	struct buf why = BUF_INIT;
	int bad_key = 0, bad_value = 0;
	int scalar = is_scalar(sh->value);
	const char *key;
	json_t *val;
	struct buf *b;
	void *it;

	check_length(c, sh, v, NULL, 0, (long long)json_object_size(v));
	/* Iteration does not modify; jansson's iterators want non-const. */
	for (it = json_object_iter((json_t *)v); it;
	     it = json_object_iter_next((json_t *)v, it)) {
		key = json_object_iter_key(it);
		val = json_object_iter_value(it);
		if (!bad_key && collect(c, &why, sh->key, NULL, key,
					json_object_iter_key_len(it))) {
			bad_key = 1;
			b = fail(c, v, NULL, 0);
			if (b)
				msg_addf(b,
					 "Map keys must satisfy constraint: "
					 "[%s]",
					 why.data);
		}
		if (scalar || json_is_null(val)) {
			if (bad_value ||
			    !collect(c, &why, sh->value, val, NULL, 0))
				continue;
			bad_value = 1;
			b = fail(c, v, NULL, 0);
			if (b)
				msg_addf(b,
					 "Map value must satisfy constraint: "
					 "[%s]",
					 why.data);
		} else {
			path_push(c, key, 0);
			check_value(c, sh->value, val);
			path_pop(c);
		}
	}
	buf_release(&why);
}

/* An integer (in int32 range for INTEGER) or a number, within bounds. */
static void check_number(struct vctx *c, const struct api__shape *sh,
			 const json_t *v)
{
	json_int_t i;
	double d;

	if (sh->kind == API__INTEGER || sh->kind == API__LONG) {
		i = json_is_integer(v) ? json_integer_value(v) : 0;
		if (!json_is_integer(v) || (sh->kind == API__INTEGER &&
					    (i < INT32_MIN || i > INT32_MAX)))
			fail_type(c, sh, v);
		else
			check_range(c, sh, v, i<sh->min, i> sh->max);
		return;
	}
	d = json_number_value(v);
	if (!json_is_number(v))
		fail_type(c, sh, v);
	else
		check_range(c, sh, v, d<(double)sh->min, d>(double) sh->max);
}

static void check_value(struct vctx *c, int shape, const json_t *v)
{
	const struct api__shape *sh = &api__shapes[shape];
	struct buf *b;

	/* Recursive shapes (SearchExpression) nest as deep as the JSON. */
	if (c->depth >= VALIDATE_MAX_DEPTH &&
	    (json_is_object(v) || json_is_array(v))) {
		b = fail(c, NULL, NULL, 0);
		if (b)
			msg_addf(b,
				 "Member must not nest deeper than %d levels",
				 VALIDATE_MAX_DEPTH);
		return;
	}
	switch (sh->kind) {
	case API__STRUCTURE:
		if (!json_is_object(v))
			fail_type(c, sh, v);
		else
			check_struct(c, sh, v);
		break;
	case API__LIST:
		if (!json_is_array(v))
			fail_type(c, sh, v);
		else
			check_list(c, sh, v);
		break;
	case API__MAP:
		if (!json_is_object(v))
			fail_type(c, sh, v);
		else
			check_map(c, sh, v);
		break;
	case API__STRING:
		if (!json_is_string(v))
			fail_type(c, sh, v);
		else
			check_string(c, sh, v, json_string_value(v),
				     json_string_length(v));
		break;
	case API__BLOB:
		/* Base64 text; no shape we reach bounds a blob's length. */
		if (!json_is_string(v))
			fail_type(c, sh, v);
		break;
	case API__INTEGER:
	case API__LONG:
	case API__FLOAT:
	case API__DOUBLE:
		check_number(c, sh, v);
		break;
	case API__BOOLEAN:
		if (!json_is_boolean(v))
			fail_type(c, sh, v);
		break;
	case API__TIMESTAMP:
		/* Epoch seconds, as botocore sends them, or ISO 8601 text. */
		if (!json_is_number(v) &&
		    !(json_is_string(v) &&
		      iso8601_ok(json_string_value(v), json_string_length(v))))
			fail_type(c, sh, v);
		break;
	}
}

static int shape_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct api__shape *)elem)->name);
}

/* Appends as much of s as fits under err's cap, cut at a code point. */
static void add_capped(struct buf *err, const char *s, size_t n)
{
	int r;

	if (err->max) {
		if (err->len >= err->max)
			return;
		if (n > err->max - err->len) {
			n = err->max - err->len;
			while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
				n--;
		}
	}
	r = buf_add(err, s, n);
	(void)r;
}

int api_validate(const char *shape, const json_t *value, struct buf *err)
{
	const struct api__shape *sh;
	struct buf out = BUF_INIT;
	struct vctx c;
	struct buf *b;
	int ret = 0;

	if (api__max_depth > VALIDATE_MAX_DEPTH)
		BUG("model nests %d deep; raise VALIDATE_MAX_DEPTH",
		    api__max_depth);
	sh = bsearch(shape, api__shapes, api__nshapes, sizeof(*api__shapes),
		     shape_cmp);
	if (!sh) {
		msg_addf(&out, "unknown shape '%s'", shape);
		add_capped(err, out.data, out.len);
		buf_release(&out);
		return ERR_NOTFOUND;
	}
	memset(&c, 0, sizeof(c));
	buf_init(&c.msgs, 0);
	if (!value || json_is_null(value)) {
		b = fail(&c, NULL, NULL, 0);
		if (b)
			msg_add(b, "Member must not be null", 23);
	} else {
		check_value(&c, (int)(sh - api__shapes), value);
	}
	if (c.nerr) {
		msg_addf(&out, "%u validation error%s detected: %s", c.nerr,
			 c.nerr == 1 ? "" : "s", c.msgs.data);
		add_capped(err, out.data, out.len);
		ret = ERR_INVALID;
	}
	pcre2_match_data_free(c.md);
	buf_release(&c.msgs);
	buf_release(&out);
	return ret;
}
