#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "api/client.h"
#include "api/requests.h"
#include "cli/cli.h"
#include "common/buf.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

/*
 * One libcurl easy handle per run, so that `wait` and `list --all` reuse
 * the connection (HTTP/1.1 keep-alive) instead of reconnecting per call.
 */
struct cli_http {
	CURL *curl;
	struct buf userpwd;	 /* "access:secret" when signing */
	struct buf sigv4;	 /* "aws:amz:<region>:sagemaker" */
	struct cli_reply *reply; /* the call in progress */
	int toobig;		 /* the write callback hit the body cap */
	int unreached;		 /* the last request never connected */
	const char *ca_bundle;	 /* ctx->ca_bundle */
	char errbuf[CURL_ERROR_SIZE];
};

/* Attempts in all for retryable answers, as botocore's legacy mode does. */
#define CLI_HTTP_ATTEMPTS 3

void cli_reply_release(struct cli_reply *reply)
{
	buf_release(&reply->body);
	FREE_AND_NULL(reply->err_type);
	FREE_AND_NULL(reply->err_message);
	reply->status = 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct cli_http *h = ud;
	size_t n = size * nmemb;

	if (buf_add(&h->reply->body, data, n)) {
		/* Returning less than n makes curl fail with a write error. */
		h->toobig = 1;
		return 0;
	}
	return n;
}

static struct cli_http *http_open(struct cli_ctx *ctx, struct buf *err)
{
	struct cli_http *h;
	const char *key = getenv("AWS_ACCESS_KEY_ID");
	const char *secret = getenv("AWS_SECRET_ACCESS_KEY");

	if (ctx->http)
		return ctx->http;
	h = xcalloc(1, sizeof(*h));
	buf_init(&h->userpwd, 0);
	buf_init(&h->sigv4, 0);
	h->ca_bundle = ctx->ca_bundle;
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		(void)buf_adds(err, "cannot initialise libcurl");
		return NULL;
	}
	if (key && *key && secret && *secret) {
		if (buf_addf(&h->userpwd, "%s:%s", key, secret) ||
		    buf_addf(&h->sigv4, "aws:amz:%s:sagemaker", ctx->region))
			BUG("unbounded buffer refused a string");
	}
	ctx->http = h;
	return h;
}

void cli_http_close(struct cli_ctx *ctx)
{
	struct cli_http *h = ctx->http;

	strv_free(ctx->members);
	ctx->members = NULL;
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	buf_release(&h->userpwd);
	buf_release(&h->sigv4);
	free(h);
	ctx->http = NULL;
}

/* Appends one header line; on failure frees the list and returns NULL. */
static struct curl_slist *add_header(struct curl_slist *list, const char *line)
{
	struct curl_slist *next;

	if (!list)
		return NULL;
	next = curl_slist_append(list, line);
	if (!next)
		curl_slist_free_all(list);
	return next;
}

/*
 * The request headers. libcurl's SigV4 signs every header in this list
 * along with Host and X-Amz-Date, so the target and the session token are
 * covered by the signature as botocore's are.
 */
/* op "": a REST POST of JSON, no X-Amz-Target. */
static struct curl_slist *make_headers(const struct cli_http *h, const char *op)
{
	const char *token = getenv("AWS_SESSION_TOKEN");
	struct curl_slist *list;
	struct buf line = BUF_INIT;

	list = curl_slist_append(NULL, *op ? "Content-Type: "
					     "application/x-amz-json-1.1" :
					     "Content-Type: application/json");
	if (*op && buf_addf(&line, "X-Amz-Target: SageMaker.%s", op))
		BUG("unbounded buffer refused a string");
	if (*op)
		list = add_header(list, line.data);
	if (h->sigv4.len && token && *token) {
		buf_reset(&line);
		if (buf_addf(&line, "X-Amz-Security-Token: %s", token))
			BUG("unbounded buffer refused a string");
		list = add_header(list, line.data);
	}
	buf_release(&line);
	return list;
}

/* Whether botocore would retry this answer (data/_retry.json). */
static int retryable(const struct cli_reply *reply)
{
	static const char *const codes[] = {
		"Throttling",
		"ThrottlingException",
		"ThrottledException",
		"RequestThrottledException",
		"ProvisionedThroughputExceededException",
		NULL
	};
	size_t i;

	switch (reply->status) {
	case 429:
	case 500:
	case 502:
	case 503:
	case 504:
	case 509:
		return 1;
	case 400:
		for (i = 0; codes[i]; i++)
			if (reply->err_type &&
			    !strcmp(reply->err_type, codes[i]))
				return 1;
		return 0;
	default:
		return 0;
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* Fills err_type and err_message of a non-2xx reply. */
static void parse_error(struct cli_reply *reply)
{
	FREE_AND_NULL(reply->err_type);
	FREE_AND_NULL(reply->err_message);
	if (api_error_parse(reply->body.data, reply->body.len, &reply->err_type,
			    &reply->err_message)) {
		/* Not an AWS error body: a proxy or the wrong endpoint. */
		free(reply->err_type);
		reply->err_type = xmalloc(32);
		snprintf(reply->err_type, 32, "HTTP %ld", reply->status);
	}
}

/* Whether the last transfer got a connection to its server. */
static int connected(CURL *c)
{
	curl_off_t t = 0;

	return curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &t) == CURLE_OK &&
	       t > 0;
}

/* The op of a DELETE (compared by address). */
static const char op_delete[] = "DELETE";

/*
 * One request to url: a JSON 1.1 POST of body as SageMaker.<op> (op ""
 * posts plain JSON, op_delete sends a DELETE), or a GET when op is NULL. Fills
 * reply; returns 0 when the server answered.
 */
static int perform(struct cli_http *h, const char *url, const char *op,
		   const struct buf *body, struct cli_reply *reply,
		   struct buf *err)
{
	struct curl_slist *headers = NULL;
	CURL *c = h->curl;
	CURLcode rc;
	int ret = 0;

	if (op && op != op_delete) {
		headers = make_headers(h, op);
		if (!headers) {
			(void)buf_adds(err, "out of memory");
			return ERR_IO;
		}
	}
	buf_reset(&reply->body);
	FREE_AND_NULL(reply->err_type);
	FREE_AND_NULL(reply->err_message);
	reply->status = 0;
	h->reply = reply;
	h->toobig = 0;
	h->unreached = 0;
	h->errbuf[0] = '\0';

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (h->ca_bundle)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_bundle);
	if (op == op_delete) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
	} else if (op) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)body->len);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(c, CURLOPT_USERAGENT, "trainctl/" CLI_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	if (h->sigv4.len) {
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4.data);
		curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd.data);
	}

	rc = curl_easy_perform(c);
	if (rc == CURLE_WRITE_ERROR && h->toobig) {
		(void)buf_addf(err, "response from %s is larger than %u bytes",
			       url, CLI_MAX_RESPONSE);
		ret = ERR_TOOBIG;
	} else if (rc != CURLE_OK) {
		h->unreached = !connected(c);
		(void)buf_addf(err, "cannot reach %s: %s", url,
			       h->errbuf[0] ? h->errbuf :
					      curl_easy_strerror(rc));
		ret = ERR_IO;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply->status);
		if (reply->status < 200 || reply->status > 299)
			parse_error(reply);
	}
	curl_slist_free_all(headers);
	return ret;
}

/*
 * Splits ctx->endpoint into its members, once. Their order is kept, so
 * that every run starts with the first member named.
 */
static void members_split(struct cli_ctx *ctx)
{
	struct strvec v = STRVEC_INIT;

	if (ctx->members)
		return;
	strvec_split(&v, ctx->endpoint, ',');
	ctx->members = v.v;
	ctx->n_members = v.n;
	ctx->cur_member = 0;
}

const char *cli_endpoint(struct cli_ctx *ctx)
{
	members_split(ctx);
	return ctx->members[ctx->cur_member];
}

const char *cli_endpoint_live(struct cli_ctx *ctx)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT;

	members_split(ctx);
	if (ctx->n_members > 1)
		(void)cli_http_get(ctx, "/healthz", &reply, &err);
	cli_reply_release(&reply);
	buf_release(&err);
	return cli_endpoint(ctx);
}

int cli_endpoint_check(const char *list, struct buf *err)
{
	struct strvec v = STRVEC_INIT;
	size_t i;
	int ret = 0;

	strvec_split(&v, list, ',');
	for (i = 0; i < v.n && !ret; i++)
		if (!*v.v[i]) {
			(void)buf_addf(err,
				       "--endpoint '%s' has an empty member",
				       list);
			ret = -1;
		}
	strvec_release(&v);
	return ret;
}

/*
 * Whether the request may go on to the next member: it never reached this
 * one, or this one has no leader to carry it out (503), so nothing was
 * done. Any other failure is the answer.
 */
static int next_member(struct cli_ctx *ctx, struct cli_http *h, int ret,
		       const struct cli_reply *reply, size_t *tried)
{
	if (ctx->n_members < 2 || ++*tried >= ctx->n_members)
		return 0;
	if (ret ? !h->unreached : reply->status != 503)
		return 0;
	ctx->cur_member = (ctx->cur_member + 1) % ctx->n_members;
	return 1;
}

/*
 * One request to the members in turn: path on the REST face (NULL: the
 * JSON 1.1 face at the root), GET (op NULL) or a POST.
 */
static int member_request(struct cli_ctx *ctx, struct cli_http *h,
			  const char *path, const char *op,
			  const struct buf *body, struct cli_reply *reply,
			  struct buf *err)
{
	struct buf url = BUF_INIT;
	size_t tried = 0;
	int ret;

	do {
		const char *base = cli_endpoint(ctx);
		size_t blen = strlen(base);

		if (blen && base[blen - 1] == '/' && path)
			blen--;
		buf_reset(&url);
		if (tried)
			buf_reset(err); /* the last member's word stands */
		if (buf_addf(&url, "%.*s%s", (int)blen, base, path ? path : ""))
			BUG("unbounded buffer refused a string");
		ret = perform(h, url.data, op, body, reply, err);
	} while (next_member(ctx, h, ret, reply, &tried));
	buf_release(&url);
	return ret;
}

/* A request to path on the REST face: GET (op NULL) or a JSON POST. */
static int rest_request(struct cli_ctx *ctx, const char *path, const char *op,
			const struct buf *body, struct cli_reply *reply,
			struct buf *err)
{
	struct cli_http *h = http_open(ctx, err);

	if (!h)
		return ERR_IO;
	return member_request(ctx, h, path, op, body, reply, err);
}

int cli_http_get(struct cli_ctx *ctx, const char *path, struct cli_reply *reply,
		 struct buf *err)
{
	return rest_request(ctx, path, NULL, NULL, reply, err);
}

int cli_http_post(struct cli_ctx *ctx, const char *path, const struct buf *body,
		  struct cli_reply *reply, struct buf *err)
{
	return rest_request(ctx, path, "", body, reply, err);
}

int cli_http_delete(struct cli_ctx *ctx, const char *path,
		    struct cli_reply *reply, struct buf *err)
{
	return rest_request(ctx, path, op_delete, NULL, reply, err);
}

int cli_http_call(struct cli_ctx *ctx, const char *op, const struct buf *body,
		  struct cli_reply *reply, struct buf *err)
{
	struct cli_http *h = http_open(ctx, err);
	long delay_ms = 100;
	int attempt, ret = ERR_IO;

	if (!h)
		return ERR_IO;
	for (attempt = 1; attempt <= CLI_HTTP_ATTEMPTS; attempt++) {
		ret = member_request(ctx, h, NULL, op, body, reply, err);
		if (ret || !retryable(reply) || attempt == CLI_HTTP_ATTEMPTS)
			break;
		sleep_ms(delay_ms);
		delay_ms *= 2;
	}
	return ret;
}

int cli_call(struct cli_ctx *ctx, const char *op, const struct buf *body,
	     struct cli_reply *reply)
{
	struct buf err = BUF_INIT;
	int r = cli_http_call(ctx, op, body, reply, &err);

	if (r) {
		cli_error("%s", err.data);
		buf_release(&err);
		return CLI_EXIT_TRANSPORT;
	}
	buf_release(&err);
	if (reply->status >= 200 && reply->status <= 299)
		return CLI_EXIT_OK;
	if (reply->err_message && *reply->err_message)
		cli_error("%s: %s", reply->err_type, reply->err_message);
	else
		cli_error("%s", reply->err_type);
	return CLI_EXIT_API;
}

void cli_print_json(const struct cli_reply *reply)
{
	struct buf out = BUF_INIT;

	if (!api_json_pretty(reply->body.data, reply->body.len, &out))
		fputs(out.data, stdout);
	else if (reply->body.len)
		printf("%s\n", reply->body.data);
	buf_release(&out);
}

int cli_get_table(struct cli_ctx *ctx, const char *path,
		  int (*table)(const char *json, size_t len, struct buf *out,
			       struct buf *err),
		  const char *what)
{
	struct cli_reply reply = CLI_REPLY_INIT;
	struct buf err = BUF_INIT, out = BUF_INIT;
	int rc = cli_reply_status(cli_http_get(ctx, path, &reply, &err), &reply,
				  &err);

	if (rc) {
		/* cli_reply_status() said why */
	} else if (ctx->output == CLI_OUTPUT_JSON) {
		cli_print_json(&reply);
	} else if (table(reply.body.data, reply.body.len, &out, &err)) {
		cli_error("bad %s reply: %s", what, err.data);
		rc = CLI_EXIT_TRANSPORT;
	} else {
		fputs(out.data, stdout);
	}
	cli_reply_release(&reply);
	buf_release(&err);
	buf_release(&out);
	return rc;
}

int cli_reply_status(int rc, const struct cli_reply *reply,
		     const struct buf *err)
{
	if (rc) {
		cli_error("%s", err->data);
		return CLI_EXIT_TRANSPORT;
	}
	if (reply->status < 200 || reply->status > 299) {
		cli_error("%s: %s", reply->err_type,
			  reply->err_message ? reply->err_message : "");
		return CLI_EXIT_API;
	}
	return 0;
}
