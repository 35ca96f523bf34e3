#define LOG_TAG "ctrl"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "controller/ctrl.h"
#include "controller/registry.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MAX_FILE (1u << 20)
#define MANIFEST_MAX (4u << 20)
#define PIN_TIMEOUT_MS 40000

/* --- references ---------------------------------------------------------- */

static int is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A path component: [a-z0-9]+ joined by '.', '_', "__" or dashes. */
static int component_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (!n || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return 0;
	while (i < n) {
		if (is_alnum_lower(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.' || (s[i] == '_' && s[i + 1] != '_'))
			i++;
		else if (s[i] == '_')
			i += 2;
		else if (s[i] == '-')
			while (i < n && s[i] == '-')
				i++;
		else
			return 0;
		if (i >= n || !is_alnum_lower(s[i]))
			return 0;
	}
	return 1;
}

/* host[:port]: labels of letters, digits and '-', a numeric port. */
static int domain_ok(const char *s, size_t n)
{
	size_t i;
	const char *colon = memchr(s, ':', n);
	size_t host = colon ? (size_t)(colon - s) : n;

	if (!host)
		return 0;
	for (i = 0; i < host; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return 0;
	if (colon) {
		if (colon + 1 == s + n)
			return 0;
		for (i = host + 1; i < n; i++)
			if (!isdigit((unsigned char)s[i]))
				return 0;
	}
	return 1;
}

static int tag_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > 128 || !(isalnum((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '.' && s[i] != '-')
			return 0;
	return 1;
}

static int digest_ok(const char *s)
{
	return !strncmp(s, "sha256:", 7) && strlen(s + 7) == 64 &&
	       strspn(s + 7, "0123456789abcdef") == 64;
}

static int bad_ref(struct buf *err, const char *s, const char *why)
{
	(void)buf_addf(err, "TrainingImage '%s' is not an image reference: %s",
		       s, why);
	return ERR_INVALID;
}

int ctrl_image_ref_parse(const char *s, struct ctrl_image_ref *out,
			 struct buf *err)
{
	const char *at = strchr(s, '@');
	const char *slash = strchr(s, '/');
	const char *path = s, *end, *c, *colon;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!*s || strlen(s) > 1024)
		return bad_ref(err, s, "empty or too long");
	if (at) {
		if (!digest_ok(at + 1))
			return bad_ref(err, s,
				       "a digest must be sha256: and 64 "
				       "lower-case hex digits");
		out->digest = xstrdup(at + 1);
	}
	end = at ? at : s + strlen(s);
	if (slash && slash < end &&
	    (memchr(s, '.', (size_t)(slash - s)) ||
	     memchr(s, ':', (size_t)(slash - s)) ||
	     (slash - s == 9 && !strncmp(s, "localhost", 9)))) {
		if (!domain_ok(s, (size_t)(slash - s))) {
			ctrl_image_ref_release(out);
			return bad_ref(err, s, "bad registry host");
		}
		out->registry = xstrndup(s, (size_t)(slash - s));
		path = slash + 1;
	} else {
		out->registry = xstrdup("docker.io");
	}
	/* A tag is after the last ':' that follows the last '/'. */
	c = path;
	while (memchr(c, '/', (size_t)(end - c)))
		c = (const char *)memchr(c, '/', (size_t)(end - c)) + 1;
	colon = memchr(c, ':', (size_t)(end - c));
	n = (size_t)((colon ? colon : end) - path);
	if (colon) {
		out->tag = xstrndup(colon + 1, (size_t)(end - colon - 1));
		if (!tag_ok(out->tag)) {
			ctrl_image_ref_release(out);
			return bad_ref(err, s,
				       "a tag is 1..128 letters, digits, "
				       "'_', '.' or '-'");
		}
	} else if (!out->digest) {
		out->tag = xstrdup("latest");
	}
	for (c = path; c < path + n;) {
		const char *e = memchr(c, '/', (size_t)(path + n - c));

		if (!e)
			e = path + n;
		if (!component_ok(c, (size_t)(e - c))) {
			ctrl_image_ref_release(out);
			return bad_ref(err, s,
				       "repository names are lower-case "
				       "letters, digits and separators "
				       "('.', '_', '-') between them");
		}
		c = e + 1;
	}
	if (!strcmp(out->registry, "docker.io") && !memchr(path, '/', n)) {
		struct buf b = BUF_INIT;

		(void)buf_addf(&b, "library/%.*s", (int)n, path);
		out->repo = buf_detach(&b, NULL);
	} else {
		out->repo = xstrndup(path, n);
	}
	return 0;
}

void ctrl_image_ref_release(struct ctrl_image_ref *ref)
{
	free(ref->registry);
	free(ref->repo);
	free(ref->tag);
	free(ref->digest);
	memset(ref, 0, sizeof(*ref));
}

/* --- configuration ------------------------------------------------------- */

static int load_auth(struct ctrl_registry *r, const char *path, struct buf *err)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	json_t *auths;

	if (!root) {
		(void)buf_addf(err, "--registry-auth %s: %s (line %d)", path,
			       je.text, je.line);
		return ERR_INVALID;
	}
	auths = json_object_get(root, "auths");
	if (!json_is_object(auths)) {
		(void)buf_addf(err,
			       "--registry-auth %s: no \"auths\" object (the "
			       "containers auth.json format)",
			       path);
		json_decref(root);
		return ERR_INVALID;
	}
	r->auths = json_incref(auths);
	json_decref(root);
	r->auth_file = xstrdup(path);
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Lines "PATTERN IMAGE" (or "PATTERN /path/to/python"); '#' starts a
 * comment. */
static int load_map(struct ctrl_registry *r, const char *path, struct buf *err)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	size_t alloc = 0;
	int lineno = 0, ret = 0;

	if (!f) {
		(void)buf_addf(err, "--image-map %s: cannot open", path);
		return ERR_IO;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char *s, *sp, *image;
		struct ctrl_image_ref ref;

		lineno++;
		s = strchr(line, '#');
		if (s)
			*s = '\0';
		s = trim(line);
		if (!*s)
			continue;
		sp = strpbrk(s, " \t");
		image = sp ? trim(sp + 1) : NULL;
		if (!sp || !*image || strpbrk(image, " \t")) {
			(void)buf_addf(err,
				       "--image-map %s line %d: want "
				       "'PATTERN IMAGE'",
				       path, lineno);
			ret = ERR_INVALID;
			break;
		}
		*sp = '\0';
		/* An absolute path: a Python for script mode, not an image. */
		if (image[0] != '/' && ctrl_image_ref_parse(image, &ref, err)) {
			(void)buf_addf(err, " (--image-map %s line %d)", path,
				       lineno);
			ret = ERR_INVALID;
			break;
		}
		if (image[0] != '/')
			ctrl_image_ref_release(&ref);
		ALLOC_GROW(r->map, r->n_map + 1, alloc);
		r->map[r->n_map].pattern = xstrdup(s);
		r->map[r->n_map].image = xstrdup(image);
		r->n_map++;
	}
	fclose(f);
	return ret;
}

int ctrl_registry_load(struct ctrl_registry *r, const struct ctrl_config *cfg,
		       struct buf *err)
{
	size_t i;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (cfg->registry_auth)
		ret = load_auth(r, cfg->registry_auth, err);
	if (!ret && cfg->image_map)
		ret = load_map(r, cfg->image_map, err);
	if (cfg->n_insecure) {
		r->insecure = xcalloc(cfg->n_insecure, sizeof(*r->insecure));
		for (i = 0; i < cfg->n_insecure; i++)
			r->insecure[i] = xstrdup(cfg->insecure[i]);
		r->n_insecure = cfg->n_insecure;
	}
	return ret;
}

void ctrl_registry_release(struct ctrl_registry *r)
{
	size_t i;

	free(r->auth_file);
	json_decref(r->auths);
	for (i = 0; i < r->n_insecure; i++)
		free(r->insecure[i]);
	free(r->insecure);
	for (i = 0; i < r->n_map; i++) {
		free(r->map[i].pattern);
		free(r->map[i].image);
	}
	free(r->map);
	memset(r, 0, sizeof(*r));
}

const char *ctrl_registry_mapped(const struct ctrl_registry *r,
				 const char *image)
{
	size_t i;

	for (i = 0; i < r->n_map; i++)
		if (!fnmatch(r->map[i].pattern, image, 0))
			return r->map[i].image;
	return NULL;
}

int ctrl_registry_insecure(const struct ctrl_registry *r, const char *registry)
{
	size_t i;

	for (i = 0; i < r->n_insecure; i++)
		if (!strcmp(r->insecure[i], registry))
			return 1;
	return 0;
}

char *ctrl_registry_auth_for(const struct ctrl_registry *r,
			     const char *registry)
{
	json_t *entry, *out, *auths;
	char *text;

	if (!r->auths)
		return NULL;
	entry = json_object_get(r->auths, registry);
	if (!entry)
		return NULL;
	out = json_object();
	auths = json_object();
	json_object_set(auths, registry, entry);
	json_object_set_new(out, "auths", auths);
	text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	return text;
}

/* --- pinning ------------------------------------------------------------- */

/*
 * The registry's side of a pin is one GET of the image's manifest (the
 * distribution API, /v2/<repo>/manifests/<tag or digest>), made here with
 * libcurl: a helper process (skopeo) cost 40 ms of every job's start.
 * Credentials go as Basic; a registry that wants a token says so with a
 * Bearer challenge (WWW-Authenticate), and the token comes from its realm
 * with the same credentials.
 */
#define ACCEPT                                                        \
	"Accept: application/vnd.oci.image.index.v1+json, "           \
	"application/vnd.oci.image.manifest.v1+json, "                \
	"application/vnd.docker.distribution.manifest.list.v2+json, " \
	"application/vnd.docker.distribution.manifest.v2+json"
#define TOKEN_MAX (64u << 10)

struct fetch {
	struct buf body;
	struct buf challenge; /* WWW-Authenticate */
	size_t max;
	long status;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;

	if (f->body.len + size * n > f->max)
		return 0; /* too big: the transfer fails */
	(void)buf_add(&f->body, p, size * n);
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t len = size * n;

	if (len > 17 && !strncasecmp(p, "WWW-Authenticate:", 17) &&
	    len < 4096) {
		buf_reset(&f->challenge);
		(void)buf_add(&f->challenge, p + 17, len - 17);
	}
	return len;
}

/* GET url; 0 with f filled (any HTTP status), or ERR_IO with err. */
static int http_get(const char *url, const char *auth, int verify,
		    struct fetch *f, struct buf *err)
{
	struct curl_slist *h = curl_slist_append(NULL, ACCEPT);
	CURL *c = curl_easy_init();
	char ebuf[CURL_ERROR_SIZE] = "";
	CURLcode rc;

	if (!c) {
		curl_slist_free_all(h);
		(void)buf_adds(err, "cannot start an HTTP request");
		return ERR_IO;
	}
	if (auth)
		h = curl_slist_append(h, auth);
	buf_reset(&f->body);
	buf_reset(&f->challenge);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)PIN_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
	} else {
		long os_errno = 0;

		(void)buf_addf(err, "%s",
			       *ebuf ? ebuf : curl_easy_strerror(rc));
		/* "Couldn't connect to server" says less than the errno. */
		if (rc == CURLE_COULDNT_CONNECT &&
		    !curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno) &&
		    os_errno)
			(void)buf_addf(err, " (%s)", strerror((int)os_errno));
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return rc == CURLE_OK ? 0 : rc == CURLE_SSL_CONNECT_ERROR ? 1 : ERR_IO;
}

/* "Authorization: Basic ..." from an auth.json entry, or NULL. */
static char *basic_auth(const struct ctrl_registry *r, const char *registry)
{
	json_t *e = r->auths ? json_object_get(r->auths, registry) : NULL;
	const char *auth = json_string_value(json_object_get(e, "auth"));
	const char *user = json_string_value(json_object_get(e, "username"));
	const char *pass = json_string_value(json_object_get(e, "password"));
	struct buf b = BUF_INIT, up = BUF_INIT;

	if (auth && *auth) {
		(void)buf_addf(&b, "Authorization: Basic %s", auth);
	} else if (user && pass) {
		unsigned char *enc;

		(void)buf_addf(&up, "%s:%s", user, pass);
		enc = xcalloc(4 * ((up.len + 2) / 3) + 1, 1);
		(void)EVP_EncodeBlock(enc, (const unsigned char *)up.data,
				      (int)up.len);
		(void)buf_addf(&b, "Authorization: Basic %s", (char *)enc);
		OPENSSL_cleanse(up.data, up.len);
		free(enc);
	}
	buf_release(&up);
	return b.len ? buf_detach(&b, NULL) : NULL;
}

/* A parameter of a challenge (Bearer realm="...",service="..."). */
static char *challenge_param(const char *c, const char *key)
{
	size_t k = strlen(key);
	const char *p = c;

	while ((p = strstr(p, key))) {
		if ((p == c || p[-1] == ' ' || p[-1] == ',') && p[k] == '=' &&
		    p[k + 1] == '"') {
			const char *v = p + k + 2, *e = strchr(v, '"');

			return e ? xstrndup(v, (size_t)(e - v)) : NULL;
		}
		p += k;
	}
	return NULL;
}

/* The Bearer token a challenge asks for, as an Authorization header. */
static char *bearer(const char *challenge, const char *basic, int verify,
		    struct buf *err)
{
	char *realm = challenge_param(challenge, "realm");
	char *service = challenge_param(challenge, "service");
	char *scope = challenge_param(challenge, "scope");
	struct fetch f = { BUF_INIT, BUF_INIT, TOKEN_MAX, 0 };
	struct buf url = BUF_INIT, b = BUF_INIT;
	json_t *root = NULL;
	const char *tok;
	CURL *c = curl_easy_init();
	char *ret = NULL;

	if (!realm || !c) {
		(void)buf_adds(err, "the registry asked for a token but named "
				    "no realm to get it from");
		goto out;
	}
	(void)buf_addf(&url, "%s%s", realm, strchr(realm, '?') ? "&" : "?");
	if (service) {
		char *e = curl_easy_escape(c, service, 0);

		(void)buf_addf(&url, "service=%s&", e);
		curl_free(e);
	}
	if (scope) {
		char *e = curl_easy_escape(c, scope, 0);

		(void)buf_addf(&url, "scope=%s", e);
		curl_free(e);
	}
	if (http_get(url.data, basic, verify, &f, err))
		goto out;
	root = json_loadb(f.body.data ? f.body.data : "", f.body.len, 0, NULL);
	tok = json_string_value(json_object_get(root, "token"));
	if (!tok)
		tok = json_string_value(json_object_get(root, "access_token"));
	if (f.status != 200 || !tok) {
		(void)buf_addf(err, "the token service answered HTTP %ld",
			       f.status);
		goto out;
	}
	(void)buf_addf(&b, "Authorization: Bearer %s", tok);
	ret = buf_detach(&b, NULL);
out:
	if (c)
		curl_easy_cleanup(c);
	json_decref(root);
	free(realm);
	free(service);
	free(scope);
	buf_release(&url);
	buf_release(&f.body);
	buf_release(&f.challenge);
	return ret;
}

/* A registry's error body: "code: message" of its first error. */
static void registry_error(const struct fetch *f, struct buf *out)
{
	json_t *root = json_loadb(f->body.data ? f->body.data : "", f->body.len,
				  0, NULL);
	json_t *e = json_array_get(json_object_get(root, "errors"), 0);
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	size_t i, start = out->len;

	if (code || msg) {
		(void)buf_addf(out, "%s%s%s", code ? code : "",
			       code && msg ? ": " : "", msg ? msg : "");
		for (i = start; code && i < start + strlen(code); i++)
			out->data[i] =
				(char)tolower((unsigned char)out->data[i]);
		for (i = start; i < out->len; i++)
			if (out->data[i] == '_')
				out->data[i] = ' ';
	} else {
		(void)buf_addf(out, "HTTP %ld", f->status);
	}
	json_decref(root);
}

static void sha256_hex(const struct buf *b, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	int i;

	(void)EVP_Digest(b->data ? b->data : "", b->len, md, &n, EVP_sha256(),
			 NULL);
	for (i = 0; i < 32; i++)
		(void)snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The manifest (into f) over https, or http for an insecure registry
 * that does not speak TLS. */
static int get_manifest(const struct ctrl_image_ref *ref, int insecure,
			const char *auth, struct fetch *f, struct buf *err)
{
	const char *host = strcmp(ref->registry, "docker.io") ?
				   ref->registry :
				   "registry-1.docker.io";
	struct buf url = BUF_INIT;
	int ret;

	(void)buf_addf(&url, "https://%s/v2/%s/manifests/%s", host, ref->repo,
		       ref->digest ? ref->digest : ref->tag);
	ret = http_get(url.data, auth, !insecure, f, err);
	if (ret > 0 && insecure) {
		buf_reset(err);
		buf_reset(&url);
		(void)buf_addf(&url, "http://%s/v2/%s/manifests/%s", host,
			       ref->repo, ref->digest ? ref->digest : ref->tag);
		ret = http_get(url.data, auth, 0, f, err);
	}
	buf_release(&url);
	return ret ? ERR_IO : 0;
}

int ctrl_registry_pin(const struct ctrl_registry *r, const char *image,
		      char **pinned, struct buf *err)
{
	struct fetch f = { BUF_INIT, BUF_INIT, MANIFEST_MAX, 0 };
	struct ctrl_image_ref ref;
	struct buf why = BUF_INIT, b = BUF_INIT;
	char *basic = NULL, *token = NULL;
	int insecure, ret;
	char hex[65];

	*pinned = NULL;
	ret = ctrl_image_ref_parse(image, &ref, err);
	if (ret)
		return ret;
	insecure = ctrl_registry_insecure(r, ref.registry);
	basic = basic_auth(r, ref.registry);
	ret = get_manifest(&ref, insecure, basic, &f, &why);
	if (!ret && f.status == 401 && f.challenge.len &&
	    strstr(f.challenge.data, "Bearer")) {
		token = bearer(f.challenge.data, basic, !insecure, &why);
		ret = token ? get_manifest(&ref, insecure, token, &f, &why) :
			      ERR_AUTH;
	}
	if (!ret && f.status == 200) {
		sha256_hex(&f.body, hex);
		if (ref.digest && strcmp(ref.digest + 7, hex)) {
			(void)buf_addf(err,
				       "image '%s': the registry's manifest "
				       "has digest sha256:%s",
				       image, hex);
			ret = ERR_INVALID;
		} else {
			(void)buf_addf(&b, "%s/%s@sha256:%s", ref.registry,
				       ref.repo, hex);
			*pinned = buf_detach(&b, NULL);
		}
	} else {
		if (!ret) {
			registry_error(&f, &why);
			ret = f.status == 401 || f.status == 403 ? ERR_AUTH :
			      f.status == 404 ? ERR_NOTFOUND :
						ERR_IO;
		}
		(void)buf_addf(err, "cannot pull image '%s' from %s: %s", image,
			       ref.registry, why.data);
	}
	if (basic)
		OPENSSL_cleanse(basic, strlen(basic));
	if (token)
		OPENSSL_cleanse(token, strlen(token));
	free(basic);
	free(token);
	buf_release(&f.body);
	buf_release(&f.challenge);
	buf_release(&why);
	buf_release(&b);
	ctrl_image_ref_release(&ref);
	return ret;
}
