#define LOG_TAG "ctrl"

#include <stdlib.h>
#include <string.h>

#include "api/tags.h"
#include "controller/ctrl.h"
#include "controller/tags.h"
#include "controller/tuning.h"
#include "db/db.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * The training job or tuning job an ARN names, checked to be this
 * controller's and one who may see. Returns 0 with *name pointing into
 * arn and *kind set, or an error code with err set.
 */
static int job_of_arn(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *arn, const char **name,
		      enum db_tag_kind *kind, struct buf *err)
{
	static const char tuning[] = "hyper-parameter-tuning-job";
	const char *type;
	size_t type_len;
	int ret;

	ret = api_arn_split(arn, ctx->cfg.region, ctx->cfg.account_id, &type,
			    &type_len, name, err);
	if (ret)
		return ret;
	if (type_len == sizeof(tuning) - 1 &&
	    !strncmp(type, tuning, type_len)) {
		*kind = DB_TAGS_TUNING;
		ret = ctrl_tuning_check(ctx, who, *name, err);
	} else if (type_len == 12 && !strncmp(type, "training-job", 12)) {
		*kind = DB_TAGS_JOB;
		ret = ctrl_caller_check_job(ctx, who, *name, err);
	} else {
		(void)buf_addf(err,
			       "ResourceArn '%.256s': tags are supported on "
			       "training jobs (training-job/NAME) and tuning "
			       "jobs (hyper-parameter-tuning-job/NAME) only",
			       arn);
		return ERR_INVALID;
	}
	if (ret == ERR_NOTFOUND) {
		buf_reset(err);
		(void)buf_addf(err, "Resource '%.256s' does not exist.", arn);
		ret = ERR_INVALID;
	}
	return ret;
}

/* Runs op's parse and ARN checks, then fn; answers errors itself. */
static void with_request(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 enum api_tags_op op, const char *body, size_t len,
			 struct ctrl_response *resp,
			 int (*fn)(struct ctrl_ctx *ctx, enum db_tag_kind kind,
				   const char *name,
				   struct api_tags_request *req,
				   struct buf *out, struct buf *err))
{
	struct api_tags_request req;
	struct buf err = BUF_INIT;
	struct buf out = BUF_INIT;
	const char *name = NULL;
	enum db_tag_kind kind = DB_TAGS_JOB;
	int ret;

	ret = api_tags_request_parse(op, body, len, &req, &err);
	if (!ret)
		ret = job_of_arn(ctx, who, req.arn, &name, &kind, &err);
	if (!ret)
		ret = fn(ctx, kind, name, &req, &out, &err);
	if (ret == ERR_NOTFOUND) {
		/* Deleted between the check and the write. */
		buf_reset(&err);
		(void)buf_addf(&err, "Resource '%.256s' does not exist.",
			       req.arn);
		ret = ERR_INVALID;
	}
	if (ret)
		ctrl_reply_err_code(resp, ret, err.data);
	else
		ctrl_reply_json(resp, &out);
	api_tags_request_release(&req);
	buf_release(&err);
	buf_release(&out);
}

static int add_tags(struct ctrl_ctx *ctx, enum db_tag_kind kind,
		    const char *name, struct api_tags_request *req,
		    struct buf *out, struct buf *err)
{
	struct db_tag *tags = xcalloc(req->n_tags ? req->n_tags : 1,
				      sizeof(*tags));
	size_t i;
	int ret;

	for (i = 0; i < req->n_tags; i++) {
		tags[i].key = req->tags[i].key;
		tags[i].value = req->tags[i].value;
	}
	ret = db_tags_add(ctx->db, kind, name, tags, req->n_tags, CTRL_MAX_TAGS,
			  err);
	free(tags);
	if (ret == ERR_LIMIT)
		ret = ERR_INVALID; /* the service's answer to too many */
	if (!ret && api_tags_response(req->tags, req->n_tags, NULL, out))
		ret = ERR_TOOBIG;
	return ret;
}

/* ListTags' NextToken: "k" and the hex of the last key listed. */
static char *token_of(const char *key)
{
	struct buf b = BUF_INIT;

	(void)buf_addch(&b, 'k');
	for (; *key; key++)
		(void)buf_addf(&b, "%02x", (unsigned char)*key);
	return buf_detach(&b, NULL);
}

static int token_key(const char *token, char **key, struct buf *err)
{
	size_t n = strlen(token);
	struct buf b = BUF_INIT;
	size_t i;

	*key = NULL;
	if (token[0] != 'k' || n % 2 != 1 || n < 3)
		goto bad;
	for (i = 1; i < n; i += 2) {
		unsigned int c;
		char hex[3] = { token[i], token[i + 1], 0 };
		char *end;

		c = (unsigned int)strtoul(hex, &end, 16);
		if (*end || !c)
			goto bad;
		(void)buf_addch(&b, (char)c);
	}
	*key = buf_detach(&b, NULL);
	return 0;
bad:
	buf_release(&b);
	(void)buf_adds(err, "Invalid NextToken.");
	return ERR_INVALID;
}

static int list_tags(struct ctrl_ctx *ctx, enum db_tag_kind kind,
		     const char *name, struct api_tags_request *req,
		     struct buf *out, struct buf *err)
{
	struct db_tag *tags = NULL;
	struct api_kv *kv = NULL;
	char *after = NULL;
	char *next = NULL;
	size_t n = 0, i;
	int more = 0;
	int ret = 0;

	if (req->next_token)
		ret = token_key(req->next_token, &after, err);
	if (!ret)
		ret = db_tags_list(ctx->db, kind, name, after,
				   (size_t)req->max_results, &tags, &n, &more,
				   err);
	if (ret)
		goto out;
	kv = xcalloc(n ? n : 1, sizeof(*kv));
	for (i = 0; i < n; i++) {
		kv[i].key = tags[i].key;
		kv[i].value = tags[i].value;
	}
	if (more && n)
		next = token_of(tags[n - 1].key);
	if (api_tags_response(kv, n, next, out))
		ret = ERR_TOOBIG;
out:
	free(kv);
	free(next);
	free(after);
	db_tags_free(tags, n);
	return ret;
}

static int delete_tags(struct ctrl_ctx *ctx, enum db_tag_kind kind,
		       const char *name, struct api_tags_request *req,
		       struct buf *out, struct buf *err)
{
	int ret = db_tags_delete(ctx->db, kind, name, req->keys, req->n_keys,
				 err);

	if (!ret && buf_adds(out, "{}"))
		ret = ERR_TOOBIG;
	return ret;
}

void ctrl_op_add_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		      const char *body, size_t len, struct ctrl_response *resp)
{
	with_request(ctx, who, API_TAGS_ADD, body, len, resp, add_tags);
}

void ctrl_op_list_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		       const char *body, size_t len,
		       struct ctrl_response *resp)
{
	with_request(ctx, who, API_TAGS_LIST, body, len, resp, list_tags);
}

void ctrl_op_delete_tags(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
			 const char *body, size_t len,
			 struct ctrl_response *resp)
{
	with_request(ctx, who, API_TAGS_DELETE, body, len, resp, delete_tags);
}
