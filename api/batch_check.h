#ifndef API_BATCH_CHECK_H
#define API_BATCH_CHECK_H

/*
 * The AWS Batch requests' shapes as tables (api/batch*.c only): each
 * member's type, whether it is required, its enum values and bounds.
 * api__batch_check() walks a request against its shape and refuses, by
 * its path, a member the shape does not name, a missing required one, a
 * wrong type, a value outside the enum or the bounds.
 */
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"

enum api__bm_type {
	BM_STR,
	BM_INT,
	BM_NUM,
	BM_ENUM,
	BM_STRUCT,
	BM_LIST,     /* of child structures */
	BM_STR_LIST, /* of strings */
	BM_MAP	     /* of strings to strings (tags) */
};

struct api__bshape;

struct api__bmember {
	const char *name;
	enum api__bm_type type;
	int required;
	const char *const *values; /* BM_ENUM, NULL-terminated */
	int64_t min, max;	   /* BM_INT, BM_NUM, string lengths */
	const struct api__bshape *child;
};

struct api__bshape {
	const struct api__bmember *m;
	size_t n;
};

/* 0, or ERR_INVALID with err naming the member by its path. */
int api__batch_check(const json_t *v, const struct api__bshape *s,
		     const char *path, struct buf *err);

/* The shape of op's request, or NULL. */
const struct api__bshape *api__batch_shape(const char *op);

#endif
