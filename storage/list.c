/*
 * Objects and lists of them (storage.h): what every backend fills in and
 * the tree transfers read. A leaf: it calls nothing else in storage/.
 */
#include <stdlib.h>
#include <string.h>

#include "storage/stor_internal.h"
#include "common/xalloc.h"
#include "common/banned.h"

void stor_object_release(struct stor_object *obj)
{
	FREE_AND_NULL(obj->key);
}

struct stor_object *stor_list_push(struct stor_list *l, const char *key,
				   int64_t size, int64_t mtime_ms)
{
	struct stor_object *o;

	ALLOC_GROW(l->v, l->n + 1, l->alloc);
	o = &l->v[l->n++];
	memset(o, 0, sizeof(*o));
	o->key = xstrdup(key);
	o->size = size;
	o->mtime_ms = mtime_ms;
	return o;
}

static int cmp_object(const void *a, const void *b)
{
	const struct stor_object *x = a, *y = b;

	return strcmp(x->key, y->key);
}

const struct stor_object *stor__list_find(const struct stor_list *l,
					  const char *key)
{
	struct stor_object k = { 0 };

	k.key = (char *)key;
	if (!l->n)
		return NULL;
	return bsearch(&k, l->v, l->n, sizeof(*l->v), cmp_object);
}

void stor_list_sort(struct stor_list *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_object);
}

void stor_list_release(struct stor_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		stor_object_release(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
	l->alloc = 0;
}
