/*
 * Refuses what a CreateTrainingJob request asks for and the controller does
 * not do: members outside the service model (from clients newer than the
 * model, or typos in hand-written JSON), and the members and values listed
 * in api/members_gen.c. Both walks follow the model or a table path, never
 * the document alone, so they are as deep as the model however deep the
 * JSON is.
 */
#include <stdlib.h>
#include <string.h>

#include "api/members.h"
#include "api/model.h"
#include "common/err.h"
#include "common/banned.h"

/* Longest wire path echoed in a message. */
#define MEMBERS_MAX_PATH 512

static int shape_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct api__shape *)elem)->name);
}

static const struct api__member *member_of(const struct api__shape *sh,
					   const char *name)
{
	unsigned i;

	for (i = 0; i < sh->nmembers; i++)
		if (!strcmp(sh->members[i].name, name))
			return &sh->members[i];
	return NULL;
}

/* Appends ".name" (or "name" at the top) to path, cut at the cap. */
static void path_add(struct buf *path, const char *name)
{
	size_t room =
		path->len < MEMBERS_MAX_PATH ? MEMBERS_MAX_PATH - path->len : 0;

	(void)buf_addf(path, "%s%.*s", path->len ? "." : "", (int)room, name);
}

static void path_cut(struct buf *path, size_t len)
{
	if (path->data && len < path->len) {
		path->len = len;
		path->data[len] = '\0';
	}
}

/*
 * The first member of v, a value of shape, that the model lacks; its path
 * is left in path. Returns 1 when found.
 */
static int find_unknown(int shape, const json_t *v, struct buf *path)
{
	const struct api__shape *sh = &api__shapes[shape];
	const struct api__member *m;
	const char *key;
	size_t len, i;
	json_t *mv;

	switch (sh->kind) {
	case API__STRUCTURE:
		json_object_foreach((json_t *)v, key, mv)
		{
			/* null reads as absent, as the model walk reads it. */
			if (json_is_null(mv))
				continue;
			len = path->len;
			path_add(path, key);
			m = member_of(sh, key);
			if (!m || find_unknown(m->shape, mv, path))
				return 1;
			path_cut(path, len);
		}
		return 0;
	case API__LIST:
		json_array_foreach(v, i, mv)
		{
			if (find_unknown(sh->member, mv, path))
				return 1;
		}
		return 0;
	case API__MAP:
		json_object_foreach((json_t *)v, key, mv)
		{
			if (find_unknown(sh->value, mv, path))
				return 1;
		}
		return 0;
	default:
		return 0;
	}
}

static int value_is(const json_t *v, const char *want)
{
	if (!strcmp(want, "true"))
		return json_is_true(v);
	if (!strcmp(want, "false"))
		return json_is_false(v);
	return json_is_string(v) && !strcmp(json_string_value(v), want);
}

/* Whether the member that r names, with the value v, is refused. */
static int refused_value(const struct api__refusal *r, const json_t *v)
{
	if (json_is_null(v))
		return 0;
	if (r->value)
		return value_is(v, r->value);
	if (r->unless_member &&
	    value_is(json_object_get(v, r->unless_member), r->unless_value))
		return 0;
	return 1;
}

/*
 * The value that r refuses, found by following path (the rest of r->path)
 * from v, crossing lists; NULL when the request has none.
 */
static const json_t *find_refused(const struct api__refusal *r, const json_t *v,
				  const char *path)
{
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	const json_t *child, *hit;
	size_t i;
	json_t *e;

	if (json_is_array(v)) {
		json_array_foreach(v, i, e)
		{
			hit = find_refused(r, e, path);
			if (hit)
				return hit;
		}
		return NULL;
	}
	child = json_object_getn(v, path, n);
	if (!child || json_is_null(child))
		return NULL;
	if (dot)
		return find_refused(r, child, dot + 1);
	return refused_value(r, child) ? child : NULL;
}

int api_members_check(const json_t *request, struct buf *err)
{
	const struct api__shape *sh;
	struct buf path = BUF_INIT;
	const char *q;
	size_t i;

	sh = bsearch("CreateTrainingJobRequest", api__shapes, api__nshapes,
		     sizeof(*api__shapes), shape_cmp);
	if (sh && find_unknown((int)(sh - api__shapes), request, &path)) {
		(void)buf_addf(err,
			       "1 validation error detected: %s is not a "
			       "member of CreateTrainingJobRequest in the "
			       "service model this controller implements; it "
			       "is refused rather than ignored",
			       path.data);
		buf_release(&path);
		return ERR_INVALID;
	}
	buf_release(&path);
	for (i = 0; i < api__nrefusals; i++) {
		const struct api__refusal *r = &api__refusals[i];

		if (!find_refused(r, request, r->path))
			continue;
		if (r->value) {
			q = strcmp(r->value, "true") &&
					    strcmp(r->value, "false") ?
				    "'" :
				    "";
			(void)buf_addf(err,
				       "1 validation error detected: %s "
				       "%s%s%s is not supported by this "
				       "controller: %s",
				       r->path, q, r->value, q, r->why);
		} else {
			(void)buf_addf(err,
				       "1 validation error detected: %s is not "
				       "supported by this controller: %s",
				       r->path, r->why);
		}
		return ERR_INVALID;
	}
	return 0;
}
