/*
 * Client of the job's rendezvous store, a key-value store in the
 * controller:
 *     PUT <url>/<key>               body = value          -> 200
 *     GET <url>/<key>?wait_ms=N     (N <= 60000)          -> 200 value
 *                                                         -> 404 not yet
 * both with "Authorization: Bearer <token>". A wait longer than a minute
 * is a loop of GETs, so no single request outlives a proxy's or the
 * server's idle limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "trainer/internal.h"
#include "common/banned.h"

#define WAIT_MS_MAX 60000
/* Slack on top of wait_ms before libcurl gives up on one request. */
#define REQUEST_SLACK_MS 30000
#define CONNECT_TIMEOUT_MS 10000
/* Pause between GETs after a connection failure. */
#define RETRY_PAUSE_MS 500

int trainer__kv_global_init(struct trainer *t)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return trainer__err(t, TRAINER_EIO, "curl_global_init failed");
	t->curl_inited = 1;
	return 0;
}

void trainer__kv_global_cleanup(struct trainer *t)
{
	if (t->curl_inited)
		curl_global_cleanup();
	t->curl_inited = 0;
}

static int key_valid(const char *key)
{
	size_t n = 0;
	const char *p;

	for (p = key; *p; p++, n++) {
		char c = *p;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return n >= 1 && n <= TRAINER__KEY_MAX;
}

static int check_args(struct trainer *t, const char *key)
{
	if (!t->rdzv_url)
		return trainer__err(t, TRAINER_ENOTSUP,
				    "no rendezvous store: TRAINCTL_RDZV_URL "
				    "is not set (not inside a trainctl job)");
	if (!key || !key_valid(key))
		return trainer__err(t, TRAINER_EINVAL,
				    "rendezvous key '%s' is not "
				    "[A-Za-z0-9._-]{1,128}",
				    key ? key : "(null)");
	return 0;
}

struct body {
	char *data;
	size_t len;
	int toobig;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct body *b = arg;
	size_t n = size * nmemb;
	char *d;

	if (n > TRAINER__VALUE_MAX - b->len) {
		b->toobig = 1;
		return 0;
	}
	d = realloc(b->data, b->len + n + 1);
	if (!d)
		return 0;
	b->data = d;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return n;
}

/* The easy handle with what every request shares: headers, no proxy. */
static int request_new(struct trainer *t, CURL **out, struct curl_slist **hdr)
{
	struct curl_slist *h = NULL, *n;
	char auth[1024];
	CURL *c;

	*out = NULL;
	*hdr = NULL;
	c = curl_easy_init();
	if (!c)
		return trainer__err(t, TRAINER_ENOMEM, "curl_easy_init failed");
	/* The agent names the CAs of an https controller. */
	if (getenv("TRAINCTL_CA_FILE") && *getenv("TRAINCTL_CA_FILE"))
		curl_easy_setopt(c, CURLOPT_CAINFO, getenv("TRAINCTL_CA_FILE"));
	if (t->rdzv_token) {
		if ((size_t)snprintf(auth, sizeof(auth),
				     "Authorization: Bearer %s",
				     t->rdzv_token) >= sizeof(auth)) {
			curl_easy_cleanup(c);
			return trainer__err(t, TRAINER_EINVAL,
					    "TRAINCTL_RDZV_TOKEN is too long");
		}
		h = curl_slist_append(h, auth);
		if (!h)
			goto nomem;
	}
	/* A value over 1 KiB would otherwise wait for 100-continue. */
	n = curl_slist_append(h, "Expect:");
	if (!n)
		goto nomem;
	h = n;
	n = curl_slist_append(h, "Content-Type: application/octet-stream");
	if (!n)
		goto nomem;
	h = n;
	/*
	 * The store lives in the job's controller, reached directly: a proxy
	 * from the environment (meant for downloads) would only get in the
	 * way.
	 */
	(void)curl_easy_setopt(c, CURLOPT_PROXY, "");
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			       (long)CONNECT_TIMEOUT_MS);
	(void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	*out = c;
	*hdr = h;
	return 0;
nomem:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return trainer__err(t, TRAINER_ENOMEM, "out of memory");
}

int trainer_kv_put(struct trainer *t, const char *key, const void *value,
		   size_t len)
{
	struct curl_slist *hdr = NULL;
	struct body b = { NULL, 0, 0 };
	char url[2048];
	long status = 0;
	CURLcode cc;
	CURL *c;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	ret = check_args(t, key);
	if (ret)
		return ret;
	if (len > TRAINER__VALUE_MAX)
		return trainer__err(t, TRAINER_EINVAL,
				    "rendezvous value of %zu bytes (at most "
				    "%d)",
				    len, TRAINER__VALUE_MAX);
	if (!value && len > 0)
		return trainer__err(t, TRAINER_EINVAL, "value is NULL");
	if ((size_t)snprintf(url, sizeof(url), "%s/%s", t->rdzv_url, key) >=
	    sizeof(url))
		return trainer__err(t, TRAINER_EINVAL,
				    "TRAINCTL_RDZV_URL is too long");
	ret = request_new(t, &c, &hdr);
	if (ret)
		return ret;
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
	(void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, value ? value : "");
	(void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	(void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)REQUEST_SLACK_MS);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	/* The reply body is of no interest; a big one is not an error. */
	if (cc == CURLE_WRITE_ERROR && b.toobig)
		cc = CURLE_OK;
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	free(b.data);
	if (cc != CURLE_OK)
		return trainer__err(t, TRAINER_EIO, "rendezvous PUT %s: %s",
				    key, curl_easy_strerror(cc));
	if (status != 200)
		return trainer__err(t, TRAINER_EIO,
				    "rendezvous PUT %s: HTTP status %ld", key,
				    status);
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * One GET waiting up to wait_ms. Returns 0 with the body in *b on 200,
 * TRAINER_ENOTFOUND on 404, 1 on a connection failure worth retrying, or
 * an error.
 */
static int get_once(struct trainer *t, const char *key, int64_t wait_ms,
		    struct body *b)
{
	struct curl_slist *hdr = NULL;
	char url[2048];
	long status = 0;
	CURLcode cc;
	CURL *c;
	int ret;

	if ((size_t)snprintf(url, sizeof(url), "%s/%s?wait_ms=%lld",
			     t->rdzv_url, key,
			     (long long)wait_ms) >= sizeof(url))
		return trainer__err(t, TRAINER_EINVAL,
				    "TRAINCTL_RDZV_URL is too long");
	ret = request_new(t, &c, &hdr);
	if (ret)
		return ret;
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
	(void)curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	(void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			       (long)(wait_ms + REQUEST_SLACK_MS));
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
		return 1;
	if (cc == CURLE_WRITE_ERROR && b->toobig)
		return trainer__err(t, TRAINER_EIO,
				    "rendezvous GET %s: value over %d bytes",
				    key, TRAINER__VALUE_MAX);
	if (cc == CURLE_WRITE_ERROR)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	if (cc != CURLE_OK)
		return trainer__err(t, TRAINER_EIO, "rendezvous GET %s: %s",
				    key, curl_easy_strerror(cc));
	if (status == 404)
		return TRAINER_ENOTFOUND;
	if (status != 200)
		return trainer__err(t, TRAINER_EIO,
				    "rendezvous GET %s: HTTP status %ld", key,
				    status);
	return 0;
}

int trainer_kv_get(struct trainer *t, const char *key, int timeout_ms,
		   void **value, size_t *len)
{
	struct body b = { NULL, 0, 0 };
	int64_t deadline, left, wait, start;
	int ret;

	if (!t)
		return TRAINER_EINVAL;
	if (value)
		*value = NULL;
	if (len)
		*len = 0;
	ret = check_args(t, key);
	if (ret)
		return ret;
	if (!value || !len)
		return trainer__err(t, TRAINER_EINVAL, "value or len is NULL");
	if (timeout_ms < 0)
		timeout_ms = 0;
	deadline = now_ms() + timeout_ms;
	for (;;) {
		left = deadline - now_ms();
		if (left < 0)
			left = 0;
		wait = left < WAIT_MS_MAX ? left : WAIT_MS_MAX;
		free(b.data);
		b.data = NULL;
		b.len = 0;
		b.toobig = 0;
		start = now_ms();
		ret = get_once(t, key, wait, &b);
		if (ret == 0)
			break;
		if (ret == 1) {
			/* The controller may be restarting: retry until the
			 * deadline, then report the failure. */
			if (now_ms() >= deadline) {
				ret = trainer__err(t, TRAINER_EIO,
						   "rendezvous GET %s: cannot "
						   "connect to %s",
						   key, t->rdzv_url);
				break;
			}
			left = deadline - now_ms();
			sleep_ms(left < RETRY_PAUSE_MS ? left : RETRY_PAUSE_MS);
			continue;
		}
		if (ret != TRAINER_ENOTFOUND)
			break;
		if (now_ms() >= deadline) {
			ret = trainer__err(t, TRAINER_ETIMEDOUT,
					   "rendezvous key %s did not appear "
					   "within %d ms",
					   key, timeout_ms);
			break;
		}
		/* A server that answers 404 before wait_ms must not make
		 * this a busy loop. */
		if (now_ms() - start < wait) {
			left = deadline - now_ms();
			sleep_ms(left < 100 ? left : 100);
		}
	}
	if (ret) {
		free(b.data);
		return ret;
	}
	if (!b.data) {
		b.data = malloc(1);
		if (!b.data)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	}
	b.data[b.len] = '\0';
	*value = b.data;
	*len = b.len;
	return 0;
}
