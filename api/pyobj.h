#ifndef API_PYOBJ_H
#define API_PYOBJ_H

/*
 * JSON documents as Python's json module and str() see them; internal to
 * api/ (sm_env.c). sagemaker-training-toolkit decodes every hyperparameter
 * with json.loads() and prints values with json.dumps() and str(), so the
 * exact bytes of SM_* variables and of the user's argv depend on Python's
 * rules: arbitrary-precision integers, NaN and Infinity, last-wins duplicate
 * keys that keep their first position, lone surrogates, shortest-repr
 * floats, repr() quoting. jansson follows none of these, hence this module.
 *
 * Strings hold UTF-8; a lone surrogate (from a "\ud800" escape) is kept in
 * the three-byte form UTF-8 would give it (WTF-8), as Python keeps it in a
 * str. Strings may hold NUL bytes (from "\u0000").
 */
#include <stddef.h>

#include "common/buf.h"

enum api__py_type {
	API__PY_NONE = 0,
	API__PY_BOOL,
	API__PY_INT,   /* any size: str holds the canonical decimal digits */
	API__PY_FLOAT, /* real */
	API__PY_STR,   /* str/len */
	API__PY_LIST,  /* items[0..n) */
	API__PY_DICT   /* keys[i] (API__PY_STR) -> items[i], insertion order */
};

struct api__py {
	enum api__py_type type;
	int boolean;
	double real;
	char *str;
	size_t len;
	struct api__py **keys;
	struct api__py **items;
	size_t n;
	size_t cap;
	size_t keys_cap; /* allocated count of keys (dicts only) */
};

/* Python's int('...') refuses more digits than this (sys.int_info). */
#define API__PY_INT_MAX_DIGITS 4300
/* Deeper documents fail, as Python's json.loads hits its recursion limit. */
#define API__PY_MAX_DEPTH 512

/*
 * Parses s[0..len) like Python's json.loads(). Returns 0 with *out a new
 * object; ERR_INVALID when Python raises ValueError (not JSON, invalid UTF-8,
 * an integer of more than API__PY_INT_MAX_DIGITS digits), with err saying
 * why; ERR_TOOBIG when nesting passes API__PY_MAX_DEPTH.
 */
int api__py_loads(const char *s, size_t len, struct api__py **out,
		  struct buf *err);

/* Frees o and everything it holds; o may be NULL. */
void api__py_free(struct api__py *o);

/* Constructors: each returns a new object (never NULL; xmalloc). */
struct api__py *api__py_none(void);
struct api__py *api__py_bool(int b);
struct api__py *api__py_int(long long v);
struct api__py *api__py_str(const char *s, size_t len);
struct api__py *api__py_strz(const char *s);
struct api__py *api__py_list(void);
struct api__py *api__py_dict(void);
struct api__py *api__py_copy(const struct api__py *o);

/* Appends item to list, which takes ownership of it. */
void api__py_append(struct api__py *list, struct api__py *item);

/*
 * d[key] = value: replaces the value in place when key exists (a Python
 * dict keeps the first position), else appends. d takes ownership of value.
 */
void api__py_set(struct api__py *d, const char *key, size_t klen,
		 struct api__py *value);

/* d.get(key): a borrowed pointer or NULL (also when d is not a dict). */
struct api__py *api__py_get(const struct api__py *d, const char *key);

/*
 * The positions of d's keys in sorted(d) order (code point order, as
 * Python sorts str), as a new array of d->n indexes to free(3).
 */
size_t *api__py_sorted_keys(const struct api__py *d);

/* bool(o) and a == b (1 == 1.0 == True, as in Python). */
int api__py_truthy(const struct api__py *o);
int api__py_eq(const struct api__py *a, const struct api__py *b);

/*
 * `item in container`: *result is 1 or 0. Returns 0, or ERR_INVALID where
 * Python raises TypeError (container not a str, list or dict; a non-str in
 * a str).
 */
int api__py_contains(const struct api__py *container,
		     const struct api__py *item, int *result);

/*
 * Appends json.dumps(o, sort_keys=True, separators=(",", ":"),
 * ensure_ascii=True), mapping.py's format. Returns 0 or ERR_TOOBIG.
 */
int api__py_dumps(const struct api__py *o, struct buf *out);

/* Appends str(o) (strings as they are) or repr(o). Returns 0 or ERR_TOOBIG. */
int api__py_to_str(const struct api__py *o, struct buf *out);
int api__py_repr(const struct api__py *o, struct buf *out);

/* Appends repr(v) of a Python float: "0.1", "1e-05", "10.0", "inf". */
int api__py_float_repr(double v, struct buf *out);

/* len(s) of a str: the number of code points. */
size_t api__py_strlen(const struct api__py *s);

/*
 * Encodes s as os.fsencode() does on Linux (UTF-8 with surrogateescape:
 * U+DC80..U+DCFF become the bytes 0x80..0xFF) for an environment variable
 * or an argument. Returns 0 and appends, or ERR_INVALID (a NUL byte, or any
 * other lone surrogate: Python raises ValueError or UnicodeEncodeError).
 */
int api__py_fsencode(const char *s, size_t len, struct buf *out);

#endif
