#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/search.h"
#include "api/tags.h"
#include "controller/ctrl.h"
#include "controller/ops.h"
#include "controller/search.h"
#include "controller/tags.h"
#include "db/db.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/* Pages reach at most this far: a search is narrowed, not paged through. */
#define SEARCH_MAX_OFFSET 1000000

/* NextToken: "o" and the offset of the next page in decimal. */
static int token_offset(const char *token, size_t *offset, struct buf *err)
{
	char *end;
	unsigned long v;

	*offset = 0;
	if (!token)
		return 0;
	if (token[0] != 'o' || !token[1] || token[1] == '-')
		goto bad;
	v = strtoul(token + 1, &end, 10);
	if (*end || v > SEARCH_MAX_OFFSET)
		goto bad;
	*offset = v;
	return 0;
bad:
	(void)buf_adds(err, "Invalid NextToken.");
	return ERR_INVALID;
}

/* Appends the job's tags as a JSON array. */
static int tags_json(struct ctrl_ctx *ctx, const char *name, struct buf *out,
		     struct buf *err)
{
	struct db_tag *tags = NULL;
	struct api_kv *kv;
	size_t n = 0, i;
	int more;
	int ret;

	ret = db_tags_list(ctx->db, DB_TAGS_JOB, name, NULL, CTRL_MAX_TAGS,
			   &tags, &n, &more, err);
	if (ret)
		return ret;
	kv = xcalloc(n ? n : 1, sizeof(*kv));
	for (i = 0; i < n; i++) {
		kv[i].key = tags[i].key;
		kv[i].value = tags[i].value;
	}
	ret = api_tags_array(kv, n, out) ? ERR_TOOBIG : 0;
	free(kv);
	db_tags_free(tags, n);
	return ret;
}

/*
 * Appends the search record of one job; 0, or ERR_NOTFOUND when it was
 * deleted since the query (it is then left out), or another error.
 */
static int add_record(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *name, struct buf *out, struct buf *err)
{
	struct buf body = BUF_INIT;
	struct buf tags = BUF_INIT;
	int ret;

	ret = ctrl_describe_body(ctx, who, name, &body, err);
	if (!ret)
		ret = tags_json(ctx, name, &tags, err);
	if (!ret)
		ret = api_search_record(body.data, body.len, tags.data, out);
	buf_release(&body);
	buf_release(&tags);
	return ret;
}

void ctrl_op_search(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const char *body, size_t len, struct ctrl_response *resp)
{
	struct api_search_request req;
	struct db_search_query q = { 0 };
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	char **names = NULL;
	size_t n = 0, i, shown = 0;
	int more = 0;
	int ret;

	ret = api_search_request_parse(body, len, &req, &err);
	if (ret) {
		ctrl_reply_err_code(resp, ret, err.data);
		buf_release(&err);
		return;
	}
	ret = token_offset(req.next_token, &q.offset, &err);
	q.expr = req.expr;
	q.sort_by = req.sort_by;
	q.descending = req.descending;
	q.owner = who->admin ? NULL : who->owner;
	q.limit = (size_t)req.max_results;
	if (!ret)
		ret = db_search_jobs(ctx->db, &q, &names, &n, &more, &err);
	if (!ret)
		(void)buf_adds(&out, "{\"Results\":[");
	for (i = 0; !ret && i < n; i++) {
		size_t mark = out.len;

		if (shown)
			(void)buf_addch(&out, ',');
		ret = add_record(ctx, who, names[i], &out, &err);
		if (ret == ERR_NOTFOUND) {
			out.len = mark;
			out.data[mark] = '\0';
			buf_reset(&err);
			ret = 0;
			continue;
		}
		shown++;
	}
	if (!ret) {
		(void)buf_addch(&out, ']');
		if (more)
			(void)buf_addf(&out, ",\"NextToken\":\"o%zu\"",
				       q.offset + n);
		if (buf_addch(&out, '}'))
			ret = ERR_TOOBIG;
	}
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	api_search_request_release(&req);
	buf_release(&err);
	buf_release(&out);
}
