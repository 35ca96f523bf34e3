#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/pyobj.h"
#include "common/err.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* ---- code points ---- */

/*
 * Decodes one code point at s[*i] and advances *i. With strict set, this is
 * UTF-8 as Python's decoder accepts it; without, surrogates (WTF-8) pass
 * too, for our own strings. Returns the code point or -1.
 */
static long cp_next(const char *str, size_t len, size_t *i, int strict)
{
	size_t n;
	long cp = utf8_decode((const unsigned char *)str + *i, len - *i,
			      strict ? 0 : UTF8_SURROGATES, &n);

	if (cp >= 0)
		*i += n;
	return cp;
}

/* Appends cp in UTF-8 (surrogates in their three-byte form). */
static int cp_put(struct buf *b, long cp)
{
	char t[4];
	size_t n;

	if (cp < 0x80) {
		t[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		t[0] = (char)(0xc0 | (cp >> 6));
		t[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		t[0] = (char)(0xe0 | (cp >> 12));
		t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		t[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		t[0] = (char)(0xf0 | (cp >> 18));
		t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		t[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_add(b, t, n);
}

/*
 * Non-ASCII code points that str.isprintable() rejects among the assigned
 * ones (categories Cc, Cf, Cs, Co, Zl, Zp, Zs; Unicode 14, Python 3.11),
 * plus the noncharacters U+FFFE/U+FFFF. Unassigned code points (Cn), which
 * Python also escapes in repr(), pass as printable: their set changes with
 * every Unicode version anyway.
 */
static const long nonprintable[][2] = {
	{ 0x80, 0xa0 },	      { 0xad, 0xad },	    { 0x600, 0x605 },
	{ 0x61c, 0x61c },     { 0x6dd, 0x6dd },	    { 0x70f, 0x70f },
	{ 0x890, 0x891 },     { 0x8e2, 0x8e2 },	    { 0x1680, 0x1680 },
	{ 0x180e, 0x180e },   { 0x2000, 0x200f },   { 0x2028, 0x202f },
	{ 0x205f, 0x2064 },   { 0x2066, 0x206f },   { 0x3000, 0x3000 },
	{ 0xd800, 0xf8ff },   { 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },
	{ 0xfffe, 0xffff },   { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd },
	{ 0x13430, 0x13438 }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a },
	{ 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f }, { 0xf0000, 0x10ffff },
};

static int printable(long cp)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(nonprintable); i++)
		if (cp >= nonprintable[i][0] && cp <= nonprintable[i][1])
			return 0;
	return 1;
}

/* ---- objects ---- */

static struct api__py *new_obj(enum api__py_type t)
{
	struct api__py *o = xcalloc(1, sizeof(*o));

	o->type = t;
	return o;
}

struct api__py *api__py_none(void)
{
	return new_obj(API__PY_NONE);
}

struct api__py *api__py_bool(int b)
{
	struct api__py *o = new_obj(API__PY_BOOL);

	o->boolean = !!b;
	return o;
}

struct api__py *api__py_int(long long v)
{
	struct api__py *o = new_obj(API__PY_INT);
	char t[32];
	int n = snprintf(t, sizeof(t), "%lld", v);

	o->str = xstrndup(t, (size_t)n);
	o->len = (size_t)n;
	return o;
}

static struct api__py *new_float(double v)
{
	struct api__py *o = new_obj(API__PY_FLOAT);

	o->real = v;
	return o;
}

struct api__py *api__py_str(const char *s, size_t len)
{
	struct api__py *o = new_obj(API__PY_STR);

	o->str = xmalloc(len + 1);
	memcpy(o->str, s, len);
	o->str[len] = '\0';
	o->len = len;
	return o;
}

struct api__py *api__py_strz(const char *s)
{
	return api__py_str(s, strlen(s));
}

struct api__py *api__py_list(void)
{
	return new_obj(API__PY_LIST);
}

struct api__py *api__py_dict(void)
{
	return new_obj(API__PY_DICT);
}

void api__py_free(struct api__py *o)
{
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->n; i++) {
		if (o->keys)
			api__py_free(o->keys[i]);
		api__py_free(o->items[i]);
	}
	free(o->keys);
	free(o->items);
	free(o->str);
	free(o);
}

static void grow(struct api__py *o)
{
	ALLOC_GROW(o->items, o->n + 1, o->cap);
	if (o->type == API__PY_DICT)
		ALLOC_GROW(o->keys, o->n + 1, o->keys_cap);
}

void api__py_append(struct api__py *list, struct api__py *item)
{
	grow(list);
	list->items[list->n++] = item;
}

static long dict_find(const struct api__py *d, const char *key, size_t klen)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->keys[i]->len == klen &&
		    !memcmp(d->keys[i]->str, key, klen))
			return (long)i;
	return -1;
}

void api__py_set(struct api__py *d, const char *key, size_t klen,
		 struct api__py *value)
{
	long at = dict_find(d, key, klen);

	if (at >= 0) {
		api__py_free(d->items[at]);
		d->items[at] = value;
		return;
	}
	grow(d);
	d->keys[d->n] = api__py_str(key, klen);
	d->items[d->n++] = value;
}

struct api__py *api__py_get(const struct api__py *d, const char *key)
{
	long at;

	if (!d || d->type != API__PY_DICT)
		return NULL;
	at = dict_find(d, key, strlen(key));
	return at < 0 ? NULL : d->items[at];
}

struct api__py *api__py_copy(const struct api__py *o)
{
	struct api__py *c = new_obj(o->type);
	size_t i;

	c->boolean = o->boolean;
	c->real = o->real;
	c->len = o->len;
	if (o->str) {
		c->str = xmalloc(o->len + 1);
		memcpy(c->str, o->str, o->len + 1);
	}
	for (i = 0; i < o->n; i++)
		if (o->type == API__PY_DICT)
			api__py_set(c, o->keys[i]->str, o->keys[i]->len,
				    api__py_copy(o->items[i]));
		else
			api__py_append(c, api__py_copy(o->items[i]));
	return c;
}

size_t api__py_strlen(const struct api__py *s)
{
	size_t i = 0, n = 0;

	while (i < s->len) {
		if (cp_next(s->str, s->len, &i, 0) < 0)
			i++;
		n++;
	}
	return n;
}

/* ---- comparisons ---- */

int api__py_truthy(const struct api__py *o)
{
	switch (o->type) {
	case API__PY_NONE:
		return 0;
	case API__PY_BOOL:
		return o->boolean;
	case API__PY_INT:
		return strcmp(o->str, "0") != 0;
	case API__PY_FLOAT:
		return o->real != 0.0;
	case API__PY_STR:
		return o->len > 0;
	default:
		return o->n > 0;
	}
}

static int is_number(const struct api__py *o)
{
	return o->type == API__PY_BOOL || o->type == API__PY_INT ||
	       o->type == API__PY_FLOAT;
}

/* Python compares int with float exactly, not through a rounded double. */
static int num_eq(const struct api__py *a, const struct api__py *b)
{
	char ta[8], tb[400];
	const char *da, *db;

	if (a->type == API__PY_FLOAT && b->type == API__PY_FLOAT)
		return a->real == b->real;
	if (b->type == API__PY_FLOAT) {
		const struct api__py *t = a;

		a = b;
		b = t;
	}
	if (b->type == API__PY_BOOL) {
		ta[0] = b->boolean ? '1' : '0';
		ta[1] = '\0';
		db = ta;
	} else {
		db = b->str;
	}
	if (a->type != API__PY_FLOAT) {
		da = a->type == API__PY_BOOL ? (a->boolean ? "1" : "0") :
					       a->str;
		return !strcmp(da, db);
	}
	if (!isfinite(a->real) || a->real != floor(a->real))
		return 0;
	/* An integral double prints exactly with %.0f (at most 309 digits). */
	(void)snprintf(tb, sizeof(tb), "%.0f", a->real == 0 ? 0.0 : a->real);
	return !strcmp(tb, db);
}

int api__py_eq(const struct api__py *a, const struct api__py *b)
{
	size_t i;

	if (is_number(a) && is_number(b))
		return num_eq(a, b);
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case API__PY_NONE:
		return 1;
	case API__PY_STR:
		return a->len == b->len && !memcmp(a->str, b->str, a->len);
	case API__PY_LIST:
		if (a->n != b->n)
			return 0;
		for (i = 0; i < a->n; i++)
			if (!api__py_eq(a->items[i], b->items[i]))
				return 0;
		return 1;
	case API__PY_DICT:
		if (a->n != b->n)
			return 0;
		for (i = 0; i < a->n; i++) {
			long at =
				dict_find(b, a->keys[i]->str, a->keys[i]->len);

			if (at < 0 || !api__py_eq(a->items[i], b->items[at]))
				return 0;
		}
		return 1;
	default:
		return 0;
	}
}

int api__py_contains(const struct api__py *container,
		     const struct api__py *item, int *result)
{
	size_t i;

	*result = 0;
	switch (container->type) {
	case API__PY_STR:
		if (item->type != API__PY_STR)
			return ERR_INVALID;
		if (item->len == 0) {
			*result = 1;
			return 0;
		}
		for (i = 0; i + item->len <= container->len; i++)
			if (!memcmp(container->str + i, item->str, item->len)) {
				*result = 1;
				break;
			}
		return 0;
	case API__PY_LIST:
		for (i = 0; i < container->n; i++)
			if (api__py_eq(container->items[i], item)) {
				*result = 1;
				break;
			}
		return 0;
	case API__PY_DICT:
		if (item->type == API__PY_LIST || item->type == API__PY_DICT)
			return ERR_INVALID; /* unhashable */
		for (i = 0; i < container->n; i++)
			if (api__py_eq(container->keys[i], item)) {
				*result = 1;
				break;
			}
		return 0;
	default:
		return ERR_INVALID;
	}
}

/* ---- json.loads ---- */

struct parser {
	const char *s;
	size_t len;
	size_t pos;
	int depth;
	int too_deep;
	struct buf *err;
};

static int perr(struct parser *p, const char *what)
{
	(void)buf_addf(p->err, "%s at char %zu", what, p->pos);
	return ERR_INVALID;
}

/* Python's json accepts exactly these four as whitespace. */
static void skip_ws(struct parser *p)
{
	while (p->pos < p->len &&
	       (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
		p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int lit(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n))
		return 0;
	p->pos += n;
	return 1;
}

static int hex4(const char *s, long *out)
{
	long v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* The character a one-letter escape stands for, or 0: not one. */
static char simple_escape(char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *at = c ? strchr(from, c) : NULL;

	return at ? to[at - from] : 0;
}

/*
 * A \uXXXX escape at p->pos (after the "\u"), a surrogate pair as one
 * code point; appended to b. Returns 0 or perr().
 */
static int unicode_escape(struct parser *p, struct buf *b)
{
	long cp, lo;

	if (p->len - p->pos < 4 || hex4(p->s + p->pos, &cp))
		return perr(p, "invalid \\uXXXX escape");
	p->pos += 4;
	/* A high surrogate escape followed by a low one is one pair. */
	if (cp >= 0xd800 && cp <= 0xdbff && p->len - p->pos >= 6 &&
	    p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
		if (hex4(p->s + p->pos + 2, &lo))
			return perr(p, "invalid \\uXXXX escape");
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			p->pos += 6;
		}
	}
	(void)cp_put(b, cp);
	return 0;
}

/* The escape at p->pos (a backslash), appended to b. 0 or perr(). */
static int parse_escape(struct parser *p, struct buf *b)
{
	char c, plain;

	if (p->pos + 1 >= p->len)
		return perr(p, "unterminated string");
	c = p->s[p->pos + 1];
	p->pos += 2;
	plain = simple_escape(c);
	if (plain) {
		(void)buf_addch(b, plain);
		return 0;
	}
	if (c != 'u')
		return perr(p, "invalid \\escape");
	return unicode_escape(p, b);
}

static int parse_string(struct parser *p, struct api__py **out)
{
	struct buf b = BUF_INIT;
	int ret = 0;

	p->pos++; /* the opening quote */
	for (;;) {
		char c;

		if (p->pos >= p->len) {
			ret = perr(p, "unterminated string");
			break;
		}
		c = p->s[p->pos];
		if (c == '"')
			break;
		if ((unsigned char)c < 0x20) {
			ret = perr(p, "invalid control character");
			break;
		}
		if (c != '\\') {
			(void)buf_addch(&b, c);
			p->pos++;
			continue;
		}
		ret = parse_escape(p, &b);
		if (ret)
			break;
	}
	if (!ret) {
		p->pos++;
		*out = api__py_str(b.data, b.len);
	}
	buf_release(&b);
	return ret;
}

static int is_digit(struct parser *p, size_t at)
{
	return at < p->len && p->s[at] >= '0' && p->s[at] <= '9';
}

static int parse_number(struct parser *p, struct api__py **out)
{
	size_t start = p->pos, digits;
	int is_float = 0;
	char *text;

	if (p->s[p->pos] == '-')
		p->pos++;
	if (!is_digit(p, p->pos)) {
		p->pos = start;
		return perr(p, "expecting value");
	}
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (is_digit(p, p->pos))
			p->pos++;
	digits = p->pos - start - (p->s[start] == '-');
	if (p->pos < p->len && p->s[p->pos] == '.' && is_digit(p, p->pos + 1)) {
		is_float = 1;
		p->pos++;
		while (is_digit(p, p->pos))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		size_t at = p->pos + 1;

		if (at < p->len && (p->s[at] == '+' || p->s[at] == '-'))
			at++;
		if (is_digit(p, at)) {
			is_float = 1;
			p->pos = at;
			while (is_digit(p, p->pos))
				p->pos++;
		}
	}
	text = xstrndup(p->s + start, p->pos - start);
	if (is_float) {
		/* strtod rounds correctly, as Python's float() does. */
		*out = new_float(strtod(text, NULL));
		free(text);
		return 0;
	}
	if (digits > API__PY_INT_MAX_DIGITS) {
		free(text);
		return perr(p, "integer exceeds the limit (4300 digits) for "
			       "integer string conversion");
	}
	*out = new_obj(API__PY_INT);
	if (!strcmp(text, "-0")) {
		free(text);
		text = xstrdup("0");
	}
	(*out)->str = text;
	(*out)->len = strlen(text);
	return 0;
}

static int parse_value(struct parser *p, struct api__py **out);

static int parse_container(struct parser *p, struct api__py **out)
{
	int is_dict = p->s[p->pos] == '{';
	char close = is_dict ? '}' : ']';
	struct api__py *c = is_dict ? api__py_dict() : api__py_list();
	struct api__py *key = NULL, *v = NULL;
	int ret;

	if (++p->depth > API__PY_MAX_DEPTH) {
		p->too_deep = 1;
		api__py_free(c);
		return perr(p, "document nested too deeply");
	}
	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		goto done;
	}
	for (;;) {
		if (is_dict) {
			if (p->pos >= p->len || p->s[p->pos] != '"') {
				ret = perr(p, "expecting property name "
					      "enclosed in double quotes");
				goto fail;
			}
			ret = parse_string(p, &key);
			if (ret)
				goto fail;
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':') {
				ret = perr(p, "expecting ':' delimiter");
				goto fail;
			}
			p->pos++;
			skip_ws(p);
		}
		ret = parse_value(p, &v);
		if (ret)
			goto fail;
		if (is_dict) {
			api__py_set(c, key->str, key->len, v);
			api__py_free(key);
			key = NULL;
		} else {
			api__py_append(c, v);
		}
		v = NULL;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			break;
		}
		if (p->pos >= p->len || p->s[p->pos] != ',') {
			ret = perr(p, "expecting ',' delimiter");
			goto fail;
		}
		p->pos++;
		skip_ws(p);
	}
done:
	p->depth--;
	*out = c;
	return 0;
fail:
	api__py_free(key);
	api__py_free(c);
	return ret;
}

static int parse_value(struct parser *p, struct api__py **out)
{
	char c;

	*out = NULL;
	if (p->pos >= p->len)
		return perr(p, "expecting value");
	c = p->s[p->pos];
	if (c == '"')
		return parse_string(p, out);
	if (c == '{' || c == '[')
		return parse_container(p, out);
	if (lit(p, "null"))
		*out = api__py_none();
	else if (lit(p, "true"))
		*out = api__py_bool(1);
	else if (lit(p, "false"))
		*out = api__py_bool(0);
	else if (c == '-' || (c >= '0' && c <= '9'))
		if (lit(p, "-Infinity"))
			*out = new_float(-INFINITY);
		else
			return parse_number(p, out);
	else if (lit(p, "NaN"))
		*out = new_float(NAN);
	else if (lit(p, "Infinity"))
		*out = new_float(INFINITY);
	else
		return perr(p, "expecting value");
	return 0;
}

int api__py_loads(const char *s, size_t len, struct api__py **out,
		  struct buf *err)
{
	struct parser p = { s, len, 0, 0, 0, err };
	size_t i = 0;
	int ret;

	*out = NULL;
	while (i < len)
		if (cp_next(s, len, &i, 1) < 0) {
			(void)buf_addf(err, "invalid UTF-8 at byte %zu", i);
			return ERR_INVALID;
		}
	skip_ws(&p);
	ret = parse_value(&p, out);
	if (ret)
		return p.too_deep ? ERR_TOOBIG : ret;
	skip_ws(&p);
	if (p.pos != len) {
		api__py_free(*out);
		*out = NULL;
		return perr(&p, "extra data");
	}
	return 0;
}

/* ---- float repr ---- */

/*
 * The shortest digits that read back as v (> 0, finite), as David Gay's
 * dtoa mode 0 gives them to Python: the fewest significant digits, and of
 * those the nearest to v. %.*e rounds correctly, so the first precision
 * whose nearest decimal reads back is the answer, except just above a power
 * of two, where the interval below v is half as wide as the one above and
 * the decimal above v may read back while the nearer one below does not.
 */
static void shortest_digits(double v, char *dig, int *ndig, int *decpt)
{
	char t[64];
	int p, e, n;

	for (p = 1; p <= 17; p++) {
		char *m;
		double back;

		(void)snprintf(t, sizeof(t), "%.*e", p - 1, v);
		back = strtod(t, NULL);
		m = strchr(t, 'e');
		e = atoi(m + 1);
		if (back != v && back < v && p < 17 && v > DBL_MIN) {
			int fe;

			if (frexp(v, &fe) == 0.5) {
				unsigned long long up = 0;
				char c[64];
				const char *q;

				for (q = t; q < m; q++)
					if (*q != '.')
						up = up * 10 +
						     (unsigned)(*q - '0');
				up++;
				(void)snprintf(c, sizeof(c), "%llue%d", up,
					       e - (p - 1));
				if (strtod(c, NULL) == v) {
					n = snprintf(t, sizeof(t), "%llu", up);
					/* 999+1 carried into a new digit */
					e += n - p;
					memcpy(dig, t, (size_t)n);
					goto trim;
				}
			}
		}
		if (back == v) {
			const char *q;

			n = 0;
			for (q = t; q < m; q++)
				if (*q != '.')
					dig[n++] = *q;
			goto trim;
		}
	}
	/* Not reached: 17 digits always read back. */
	n = 1;
	dig[0] = '0';
	e = 0;
trim:
	while (n > 1 && dig[n - 1] == '0')
		n--;
	dig[n] = '\0';
	*ndig = n;
	*decpt = e + 1;
}

/* Exponent notation, as repr() writes 1e+16 and up and below 1e-4. */
static int float_repr_sci(const char *dig, int n, int decpt, struct buf *out)
{
	int x = decpt - 1;
	int ret;

	ret = buf_addch(out, dig[0]);
	if (!ret && n > 1) {
		ret = buf_addch(out, '.');
		ret = ret ? ret : buf_add(out, dig + 1, (size_t)n - 1);
	}
	return ret ? ret :
		     buf_addf(out, "e%c%02d", x < 0 ? '-' : '+',
			      x < 0 ? -x : x);
}

/* Positional notation, always with a '.': "0.001", "12.5", "100.0". */
static int float_repr_fixed(const char *dig, int n, int decpt, struct buf *out)
{
	int i, ret;

	if (decpt <= 0) {
		ret = buf_adds(out, "0.");
		for (i = 0; !ret && i < -decpt; i++)
			ret = buf_addch(out, '0');
		return ret ? ret : buf_add(out, dig, (size_t)n);
	}
	if (decpt >= n) {
		ret = buf_add(out, dig, (size_t)n);
		for (i = n; !ret && i < decpt; i++)
			ret = buf_addch(out, '0');
		return ret ? ret : buf_adds(out, ".0");
	}
	ret = buf_add(out, dig, (size_t)decpt);
	ret = ret ? ret : buf_addch(out, '.');
	return ret ? ret : buf_add(out, dig + decpt, (size_t)(n - decpt));
}

int api__py_float_repr(double v, struct buf *out)
{
	char dig[32];
	int n, decpt, ret = 0;

	if (isnan(v))
		return buf_adds(out, "nan");
	if (isinf(v))
		return buf_adds(out, v < 0 ? "-inf" : "inf");
	if (signbit(v)) {
		ret = buf_addch(out, '-');
		v = -v;
	}
	if (v == 0)
		return ret ? ret : buf_adds(out, "0.0");
	if (ret)
		return ret;
	shortest_digits(v, dig, &n, &decpt);
	if (decpt <= -4 || decpt > 16)
		return float_repr_sci(dig, n, decpt, out);
	return float_repr_fixed(dig, n, decpt, out);
}

/* ---- json.dumps ---- */

static int dump_str(const struct api__py *s, struct buf *out)
{
	size_t i = 0;
	int ret = buf_addch(out, '"');

	while (!ret && i < s->len) {
		long cp = cp_next(s->str, s->len, &i, 0);

		if (cp < 0) { /* cannot happen: our strings are WTF-8 */
			cp = 0xfffd;
			i++;
		}
		switch (cp) {
		case '"':
			ret = buf_adds(out, "\\\"");
			break;
		case '\\':
			ret = buf_adds(out, "\\\\");
			break;
		case '\b':
			ret = buf_adds(out, "\\b");
			break;
		case '\f':
			ret = buf_adds(out, "\\f");
			break;
		case '\n':
			ret = buf_adds(out, "\\n");
			break;
		case '\r':
			ret = buf_adds(out, "\\r");
			break;
		case '\t':
			ret = buf_adds(out, "\\t");
			break;
		default:
			if (cp >= 0x20 && cp <= 0x7e)
				ret = buf_addch(out, (char)cp);
			else if (cp < 0x10000)
				ret = buf_addf(out, "\\u%04lx", cp);
			else
				ret = buf_addf(out, "\\u%04lx\\u%04lx",
					       0xd800 + ((cp - 0x10000) >> 10),
					       0xdc00 + ((cp - 0x10000) &
							 0x3ff));
		}
	}
	return ret ? ret : buf_addch(out, '"');
}

struct key_ref {
	const struct api__py *key;
	size_t at;
};

static int key_cmp(const void *a, const void *b)
{
	const struct api__py *x = ((const struct key_ref *)a)->key;
	const struct api__py *y = ((const struct key_ref *)b)->key;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->str, y->str, n);

	/* UTF-8 byte order is code point order, which is how str sorts. */
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

size_t *api__py_sorted_keys(const struct api__py *d)
{
	struct key_ref *refs = xcalloc(d->n, sizeof(*refs));
	size_t *at = xcalloc(d->n, sizeof(*at));
	size_t i;

	for (i = 0; i < d->n; i++) {
		refs[i].key = d->keys[i];
		refs[i].at = i;
	}
	qsort(refs, d->n, sizeof(*refs), key_cmp);
	for (i = 0; i < d->n; i++)
		at[i] = refs[i].at;
	free(refs);
	return at;
}

int api__py_dumps(const struct api__py *o, struct buf *out)
{
	size_t *at;
	size_t i;
	int ret = 0;

	switch (o->type) {
	case API__PY_NONE:
		return buf_adds(out, "null");
	case API__PY_BOOL:
		return buf_adds(out, o->boolean ? "true" : "false");
	case API__PY_INT:
		return buf_add(out, o->str, o->len);
	case API__PY_FLOAT:
		if (isnan(o->real))
			return buf_adds(out, "NaN");
		if (isinf(o->real))
			return buf_adds(out,
					o->real < 0 ? "-Infinity" : "Infinity");
		return api__py_float_repr(o->real, out);
	case API__PY_STR:
		return dump_str(o, out);
	case API__PY_LIST:
		ret = buf_addch(out, '[');
		for (i = 0; !ret && i < o->n; i++) {
			if (i)
				ret = buf_addch(out, ',');
			ret = ret ? ret : api__py_dumps(o->items[i], out);
		}
		return ret ? ret : buf_addch(out, ']');
	case API__PY_DICT:
		break;
	}
	at = api__py_sorted_keys(o);
	ret = buf_addch(out, '{');
	for (i = 0; !ret && i < o->n; i++) {
		if (i)
			ret = buf_addch(out, ',');
		ret = ret ? ret : dump_str(o->keys[at[i]], out);
		ret = ret ? ret : buf_addch(out, ':');
		ret = ret ? ret : api__py_dumps(o->items[at[i]], out);
	}
	free(at);
	return ret ? ret : buf_addch(out, '}');
}

/* ---- str() and repr() ---- */

static int repr_str(const struct api__py *s, struct buf *out)
{
	int has_sq = memchr(s->str, '\'', s->len) != NULL;
	int has_dq = memchr(s->str, '"', s->len) != NULL;
	char quote = has_sq && !has_dq ? '"' : '\'';
	size_t i = 0;
	int ret = buf_addch(out, quote);

	while (!ret && i < s->len) {
		size_t at = i;
		long cp = cp_next(s->str, s->len, &i, 0);

		if (cp < 0) {
			cp = 0xfffd;
			i = at + 1;
		}
		if (cp == quote || cp == '\\') {
			ret = buf_addch(out, '\\');
			ret = ret ? ret : buf_addch(out, (char)cp);
		} else if (cp == '\t') {
			ret = buf_adds(out, "\\t");
		} else if (cp == '\n') {
			ret = buf_adds(out, "\\n");
		} else if (cp == '\r') {
			ret = buf_adds(out, "\\r");
		} else if (cp < 0x20 || cp == 0x7f) {
			ret = buf_addf(out, "\\x%02lx", cp);
		} else if (cp < 0x7f) {
			ret = buf_addch(out, (char)cp);
		} else if (printable(cp)) {
			ret = buf_add(out, s->str + at, i - at);
		} else if (cp <= 0xff) {
			ret = buf_addf(out, "\\x%02lx", cp);
		} else if (cp <= 0xffff) {
			ret = buf_addf(out, "\\u%04lx", cp);
		} else {
			ret = buf_addf(out, "\\U%08lx", cp);
		}
	}
	return ret ? ret : buf_addch(out, quote);
}

int api__py_repr(const struct api__py *o, struct buf *out)
{
	size_t i;
	int ret = 0;

	switch (o->type) {
	case API__PY_NONE:
		return buf_adds(out, "None");
	case API__PY_BOOL:
		return buf_adds(out, o->boolean ? "True" : "False");
	case API__PY_INT:
		return buf_add(out, o->str, o->len);
	case API__PY_FLOAT:
		return api__py_float_repr(o->real, out);
	case API__PY_STR:
		return repr_str(o, out);
	case API__PY_LIST:
		ret = buf_addch(out, '[');
		for (i = 0; !ret && i < o->n; i++) {
			if (i)
				ret = buf_adds(out, ", ");
			ret = ret ? ret : api__py_repr(o->items[i], out);
		}
		return ret ? ret : buf_addch(out, ']');
	case API__PY_DICT:
		ret = buf_addch(out, '{');
		for (i = 0; !ret && i < o->n; i++) {
			if (i)
				ret = buf_adds(out, ", ");
			ret = ret ? ret : repr_str(o->keys[i], out);
			ret = ret ? ret : buf_adds(out, ": ");
			ret = ret ? ret : api__py_repr(o->items[i], out);
		}
		return ret ? ret : buf_addch(out, '}');
	}
	return 0;
}

int api__py_to_str(const struct api__py *o, struct buf *out)
{
	if (o->type == API__PY_STR)
		return buf_add(out, o->str, o->len);
	return api__py_repr(o, out);
}

int api__py_fsencode(const char *s, size_t len, struct buf *out)
{
	size_t i = 0;

	while (i < len) {
		size_t at = i;
		long cp = cp_next(s, len, &i, 0);
		int ret;

		if (cp <= 0)
			return ERR_INVALID; /* NUL, or not WTF-8 */
		if (cp >= 0xdc80 && cp <= 0xdcff)
			ret = buf_addch(out, (char)(cp - 0xdc00));
		else if (cp >= 0xd800 && cp <= 0xdfff)
			return ERR_INVALID;
		else
			ret = buf_add(out, s + at, i - at);
		if (ret)
			return ret;
	}
	return 0;
}
