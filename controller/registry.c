#define LOG_TAG "ctrl"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "controller/ctrl.h"
#include "controller/registry.h"
#include "common/err.h"
#include "common/spawn.h"
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

/* Lines "PATTERN IMAGE"; '#' starts a comment. */
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
		if (ctrl_image_ref_parse(image, &ref, err)) {
			(void)buf_addf(err, " (--image-map %s line %d)", path,
				       lineno);
			ret = ERR_INVALID;
			break;
		}
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
	const char *skopeo = getenv("TRAINCTL_SKOPEO");
	size_t i;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	r->skopeo = xstrdup(skopeo && *skopeo ? skopeo : "skopeo");
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
	free(r->skopeo);
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

/* skopeo's last line is `time=... level=fatal msg="..."`: the message. */
static void registry_answer(const struct spawn_result *res, struct buf *out)
{
	struct buf line = BUF_INIT;
	const char *m;
	size_t i;

	spawn_last_line(res, &line);
	m = strstr(line.data, "msg=\"");
	if (!m) {
		(void)buf_add(out, line.data, line.len);
		buf_release(&line);
		return;
	}
	for (i = 5; m[i] && m[i] != '"'; i++) {
		if (m[i] == '\\' && m[i + 1])
			i++;
		(void)buf_add(out, m + i, 1);
	}
	buf_release(&line);
}

static int classify(const char *msg)
{
	if (strstr(msg, "manifest unknown") || strstr(msg, "name unknown") ||
	    strstr(msg, "not found"))
		return ERR_NOTFOUND;
	if (strstr(msg, "unauthorized") || strstr(msg, "authentication") ||
	    strstr(msg, "denied"))
		return ERR_AUTH;
	return ERR_IO;
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

int ctrl_registry_pin(const struct ctrl_registry *r, const char *image,
		      char **pinned, struct buf *err)
{
	struct spawn_result res = SPAWN_RESULT_INIT;
	struct ctrl_image_ref ref;
	struct buf target = BUF_INIT, answer = BUF_INIT, b = BUF_INIT;
	const char *argv[12];
	char hex[65];
	int ret, k = 0;

	*pinned = NULL;
	ret = ctrl_image_ref_parse(image, &ref, err);
	if (ret)
		return ret;
	(void)buf_addf(&target, "docker://%s/%s%s%s%s%s", ref.registry,
		       ref.repo, ref.tag ? ":" : "", ref.tag ? ref.tag : "",
		       ref.digest ? "@" : "", ref.digest ? ref.digest : "");
	argv[k++] = r->skopeo;
	argv[k++] = "inspect";
	argv[k++] = "--raw";
	argv[k++] = "--command-timeout";
	argv[k++] = "30s";
	if (ctrl_registry_insecure(r, ref.registry))
		argv[k++] = "--tls-verify=false";
	if (r->auths && json_object_get(r->auths, ref.registry)) {
		argv[k++] = "--authfile";
		argv[k++] = r->auth_file;
	} else {
		argv[k++] = "--no-creds";
	}
	argv[k++] = target.data;
	argv[k] = NULL;
	ret = spawn_capture((char *const *)argv, NULL, PIN_TIMEOUT_MS,
			    MANIFEST_MAX, &res);
	if (ret) {
		(void)buf_addf(err, "cannot inspect image '%s': %s", image,
			       res.err.data);
	} else if (!spawn_ok(&res) || !res.out.len) {
		registry_answer(&res, &answer);
		ret = res.timed_out ? ERR_IO : classify(answer.data);
		(void)buf_addf(err, "cannot pull image '%s' from %s: %s", image,
			       ref.registry,
			       res.timed_out ? "no answer in 40 s" :
					       answer.data);
	} else {
		sha256_hex(&res.out, hex);
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
	}
	spawn_result_release(&res);
	ctrl_image_ref_release(&ref);
	buf_release(&target);
	buf_release(&answer);
	buf_release(&b);
	return ret;
}
