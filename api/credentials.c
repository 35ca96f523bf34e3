/*
 * The AWS shared-credentials file, parsed with libinih:
 *
 *   [default]
 *   aws_access_key_id = AKIDEXAMPLE
 *   aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
 *
 * trainctl's own keys give the key a user and a role (docs/security.md):
 *
 *   trainctl_user = alice     ranks run as this Unix user on the hosts
 *   trainctl_role = user      admin (every job) or user (its own jobs)
 *   trainctl_s3_prefixes = b/p, ...       what a user key may name in S3
 *   trainctl_batch_queues = q1, q2        the job queues it may submit to
 *
 * Other keys (aws_session_token, region, ...) are allowed and ignored, as
 * the AWS CLI ignores keys it does not use (and ignores ours).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>
#include <openssl/crypto.h>

#include "api/sigv4.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define CRED_MAX_PROFILES 1024
#define CRED_MAX_KEY_ID 128
#define CRED_MAX_SECRET 256
#define CRED_MAX_PROFILE_NAME 256

/* Lines as libinih reads them, plus what it cannot tell the handler. */
struct cred_reader {
	const char *pos;
	int line;      /* number of the line last handed to libinih */
	int truncated; /* that line was longer than libinih's buffer */
};

struct cred_parse {
	struct cred_reader rd;
	struct api_credentials *creds;
	int *first_line;	 /* per profile: line of its first key */
	size_t first_line_alloc; /* allocated count of first_line */
	struct buf msg;		 /* the first error */
	int failed;
	int fail_line; /* its line, or 0 */
};

static void cred_fail(struct cred_parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records an error; only the first is reported, later ones follow it. */
static void cred_fail(struct cred_parse *p, int line, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (p->failed)
		return;
	p->failed = 1;
	p->fail_line = line;
	if (line) {
		r = buf_addf(&p->msg, "line %d: ", line);
		(void)r;
	}
	va_start(ap, fmt);
	r = buf_vaddf(&p->msg, fmt, ap);
	va_end(ap);
	(void)r; /* a message cut short by the cap is still a message */
}

/*
 * An ini_reader over a string. ini_parse_string() would do, except that a
 * line longer than libinih's fixed buffer (200 bytes in Debian's build)
 * comes back as several lines, which misnumbers every later line and
 * turns a long aws_session_token into a syntax error. This reader hands
 * over the start of such a line, drops the rest and remembers that it did.
 */
static char *cred_read_line(char *str, int num, void *stream)
{
	struct cred_reader *rd = stream;
	const char *s = rd->pos, *nl;
	size_t len, room;

	if (!s || *s == '\0' || num < 2)
		return NULL;
	nl = strchr(s, '\n');
	len = nl ? (size_t)(nl - s) : strlen(s);
	room = (size_t)num - 1;
	rd->truncated = len > room;
	memcpy(str, s, rd->truncated ? room : len);
	str[rd->truncated ? room : len] = '\0';
	rd->pos = nl ? nl + 1 : s + len;
	rd->line++;
	return str;
}

static int key_is(const char *name, const char *want)
{
	size_t i;

	for (i = 0; name[i] && want[i]; i++) {
		char c = name[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != want[i])
			return 0;
	}
	return name[i] == want[i];
}

static int valid_key_id(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > CRED_MAX_KEY_ID)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_' || s[i] == '.'))
			return 0;
	return 1;
}

static int valid_secret(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > CRED_MAX_SECRET)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/* The profile called section, created when it is new. NULL on error. */
static struct api_credential *cred_profile(struct cred_parse *p,
					   const char *section)
{
	struct api_credentials *c = p->creds;
	struct api_credential *cur;
	size_t i;

	if (c->n && strcmp(c->items[c->n - 1].profile, section) == 0)
		return &c->items[c->n - 1];
	for (i = 0; i + 1 < c->n; i++) {
		if (strcmp(c->items[i].profile, section) == 0) {
			cred_fail(p, p->rd.line,
				  "profile '%s' appears more than once",
				  section);
			return NULL;
		}
	}
	if (c->n == CRED_MAX_PROFILES) {
		cred_fail(p, p->rd.line, "more than %d profiles",
			  CRED_MAX_PROFILES);
		return NULL;
	}
	if (strlen(section) > CRED_MAX_PROFILE_NAME) {
		cred_fail(p, p->rd.line, "profile name too long");
		return NULL;
	}
	ALLOC_GROW(c->items, c->n + 1, c->alloc);
	ALLOC_GROW(p->first_line, c->n + 1, p->first_line_alloc);
	cur = &c->items[c->n];
	cur->profile = xstrdup(section);
	cur->access_key_id = NULL;
	cur->secret_access_key = NULL;
	cur->user = NULL;
	cur->admin = 0;
	cur->role_set = 0;
	cur->s3_prefixes = NULL;
	cur->n_s3_prefixes = 0;
	cur->batch_queues = NULL;
	cur->n_batch_queues = 0;
	p->first_line[c->n] = p->rd.line;
	c->n++;
	return cur;
}

/* A portable Unix user name (POSIX, as useradd accepts by default). */
static int valid_user(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 32 || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-' || s[i] == '.' ||
		      (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

#define CRED_MAX_PREFIXES 64

/* The profile a key line belongs to; NULL (and the error) outside one. */
static struct api_credential *key_profile(struct cred_parse *p,
					  const char *section, const char *name)
{
	if (section[0] == '\0') {
		cred_fail(p, p->rd.line, "'%s' outside a [profile] section",
			  name);
		return NULL;
	}
	return cred_profile(p, section);
}

/* "bucket[/prefix]" entries separated by commas or spaces. */
static int cred_prefixes(struct cred_parse *p, struct api_credential *cur,
			 const char *section, const char *value)
{
	const char *s = value;

	if (cur->s3_prefixes) {
		cred_fail(p, p->rd.line,
			  "'trainctl_s3_prefixes' given twice in profile '%s'",
			  section);
		return 0;
	}
	cur->s3_prefixes = xcalloc(CRED_MAX_PREFIXES + 1, sizeof(char *));
	while (*s) {
		const char *tok;
		size_t n, b, i;
		char *e;

		s += strspn(s, ", \t");
		n = strcspn(s, ", \t");
		if (!n)
			break;
		tok = s;
		s += n;
		if (n > 5 && !strncmp(tok, "s3://", 5)) {
			tok += 5;
			n -= 5;
		}
		b = strcspn(tok, "/");
		if (b > n)
			b = n;
		for (i = 0; i < b; i++)
			if (!((tok[i] >= 'a' && tok[i] <= 'z') ||
			      (tok[i] >= '0' && tok[i] <= '9') ||
			      tok[i] == '.' || tok[i] == '-'))
				break;
		if (b < 3 || b > 63 || i < b ||
		    cur->n_s3_prefixes == CRED_MAX_PREFIXES) {
			cred_fail(
				p, p->rd.line,
				"trainctl_s3_prefixes in profile '%s': '%.*s' "
				"is not bucket[/prefix] (at most %d)",
				section, (int)(n > 80 ? 80 : n), tok,
				CRED_MAX_PREFIXES);
			return 0;
		}
		/* A bucket alone is every key in it: "bucket/". */
		e = xmalloc(n + 2);
		memcpy(e, tok, n);
		e[n] = b == n ? '/' : '\0';
		e[n + 1] = '\0';
		cur->s3_prefixes[cur->n_s3_prefixes++] = e;
	}
	return 1;
}

/* Job queue names separated by commas or spaces (AWS Batch's rule). */
static int cred_queues(struct cred_parse *p, struct api_credential *cur,
		       const char *section, const char *value)
{
	const char *s = value;

	if (cur->batch_queues) {
		cred_fail(p, p->rd.line,
			  "'trainctl_batch_queues' given twice in profile "
			  "'%s'",
			  section);
		return 0;
	}
	cur->batch_queues = xcalloc(CRED_MAX_PREFIXES + 1, sizeof(char *));
	while (*s) {
		size_t n, i;

		s += strspn(s, ", \t");
		n = strcspn(s, ", \t");
		if (!n)
			break;
		for (i = 0; i < n; i++)
			if (!((s[i] >= 'a' && s[i] <= 'z') ||
			      (s[i] >= 'A' && s[i] <= 'Z') ||
			      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
			      s[i] == '_'))
				break;
		if (n > 128 || i < n ||
		    cur->n_batch_queues == CRED_MAX_PREFIXES) {
			cred_fail(p, p->rd.line,
				  "trainctl_batch_queues in profile '%s': "
				  "'%.*s' is not a job queue name (letters, "
				  "digits, '-', '_'; at most %d names)",
				  section, (int)(n > 80 ? 80 : n), s,
				  CRED_MAX_PREFIXES);
			return 0;
		}
		cur->batch_queues[cur->n_batch_queues++] = xstrndup(s, n);
		s += n;
	}
	return 1;
}

int api_credential_queue_allowed(const struct api_credential *c,
				 const char *queue)
{
	size_t i;

	if (c->admin || !c->batch_queues)
		return 1;
	for (i = 0; i < c->n_batch_queues; i++)
		if (queue && !strcmp(c->batch_queues[i], queue))
			return 1;
	return 0;
}

int api_s3_prefixes_allow(char *const *prefixes, size_t n,
			  const char *bucket_key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(bucket_key, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int api_credential_s3_allowed(const struct api_credential *c,
			      const char *bucket_key)
{
	return c->admin || api_s3_prefixes_allow(c->s3_prefixes,
						 c->n_s3_prefixes, bucket_key);
}

/* trainctl_user / trainctl_role of the profile being read. */
static int cred_trainctl_key(struct cred_parse *p, const char *section,
			     const char *name, const char *value)
{
	struct api_credential *cur;
	int is_user = key_is(name, "trainctl_user");

	cur = key_profile(p, section, name);
	if (!cur)
		return 0;
	if (key_is(name, "trainctl_s3_prefixes"))
		return cred_prefixes(p, cur, section, value);
	if (key_is(name, "trainctl_batch_queues"))
		return cred_queues(p, cur, section, value);
	if (is_user ? cur->user != NULL : cur->role_set) {
		cred_fail(p, p->rd.line, "'%s' given twice in profile '%s'",
			  name, section);
		return 0;
	}
	if (is_user) {
		if (!valid_user(value)) {
			cred_fail(p, p->rd.line,
				  "trainctl_user '%.64s' in profile '%s' is "
				  "not a valid Unix user name",
				  value, section);
			return 0;
		}
		cur->user = xstrdup(value);
		return 1;
	}
	if (strcmp(value, "admin") && strcmp(value, "user")) {
		cred_fail(p, p->rd.line,
			  "trainctl_role in profile '%s' must be 'admin' or "
			  "'user', not '%.64s'",
			  section, value);
		return 0;
	}
	cur->role_set = 1;
	cur->admin = !strcmp(value, "admin");
	return 1;
}

static int cred_handler(void *user, const char *section, const char *name,
			const char *value)
{
	struct cred_parse *p = user;
	struct api_credential *cur;
	char **slot;
	int is_id;

	if (p->failed)
		return 1; /* keep libinih quiet: the first error is reported */
	if (key_is(name, "trainctl_user") || key_is(name, "trainctl_role") ||
	    key_is(name, "trainctl_s3_prefixes") ||
	    key_is(name, "trainctl_batch_queues"))
		return cred_trainctl_key(p, section, name, value);
	is_id = key_is(name, "aws_access_key_id");
	if (!is_id && !key_is(name, "aws_secret_access_key"))
		return 1; /* aws_session_token, region, ...: not ours */
	cur = key_profile(p, section, name);
	if (!cur)
		return 0;
	if (p->rd.truncated) {
		cred_fail(p, p->rd.line,
			  "value of '%s' in profile '%s' is too long", name,
			  section);
		return 0;
	}
	slot = is_id ? &cur->access_key_id : &cur->secret_access_key;
	if (*slot) {
		cred_fail(p, p->rd.line, "'%s' given twice in profile '%s'",
			  name, section);
		return 0;
	}
	if (is_id ? !valid_key_id(value) : !valid_secret(value)) {
		cred_fail(p, p->rd.line,
			  "'%s' in profile '%s' is empty or has characters "
			  "a key cannot have",
			  name, section);
		return 0;
	}
	*slot = xstrdup(value);
	return 1;
}

/* Every profile must have both keys; one key id must mean one secret. */
static void cred_check(struct cred_parse *p)
{
	struct api_credentials *c = p->creds;
	size_t i, j;

	if (c->n == 0) {
		cred_fail(p, 0,
			  "no profile with aws_access_key_id and "
			  "aws_secret_access_key");
		return;
	}
	for (i = 0; i < c->n && !p->failed; i++) {
		const struct api_credential *a = &c->items[i];

		if (!a->access_key_id)
			cred_fail(p, 0,
				  "profile '%s' (line %d) has no "
				  "aws_access_key_id",
				  a->profile, p->first_line[i]);
		else if (!a->secret_access_key)
			cred_fail(p, 0,
				  "profile '%s' (line %d) has no "
				  "aws_secret_access_key",
				  a->profile, p->first_line[i]);
	}
	for (i = 0; i < c->n && !p->failed; i++) {
		struct api_credential *a = &c->items[i];

		if (!a->role_set)
			a->admin = a->user == NULL;
		if (!a->admin && !a->user)
			cred_fail(p, 0,
				  "profile '%s' (line %d) has trainctl_role "
				  "user but no trainctl_user to run its jobs "
				  "as",
				  a->profile, p->first_line[i]);
	}
	for (i = 0; i < c->n && !p->failed; i++)
		for (j = i + 1; j < c->n && !p->failed; j++) {
			const struct api_credential *a = &c->items[i];
			const struct api_credential *b = &c->items[j];

			if (strcmp(a->access_key_id, b->access_key_id))
				continue;
			if (strcmp(a->secret_access_key, b->secret_access_key))
				cred_fail(p, 0,
					  "profiles '%s' and '%s' give "
					  "different secrets for one "
					  "aws_access_key_id",
					  a->profile, b->profile);
			else if (a->admin != b->admin ||
				 (a->user ?
					  !b->user || strcmp(a->user, b->user) :
					  b->user != NULL))
				cred_fail(p, 0,
					  "profiles '%s' and '%s' give one "
					  "aws_access_key_id different users "
					  "or roles",
					  a->profile, b->profile);
		}
}

int api_credentials_parse(const char *text, struct api_credentials *creds,
			  struct buf *err)
{
	struct cred_parse p;
	int line;

	creds->items = NULL;
	creds->n = 0;
	creds->alloc = 0;
	memset(&p, 0, sizeof(p));
	buf_init(&p.msg, 1024);
	p.rd.pos = text;
	p.creds = creds;
	if (!text) {
		cred_fail(&p, 0, "no credentials text");
	} else {
		line = ini_parse_stream(cred_read_line, &p.rd, cred_handler,
					&p);
		/*
		 * libinih returns the first line it could not parse, which
		 * may come before a line the handler refused: "[default" on
		 * line 1 leaves line 2's key outside any section.
		 */
		if (line > 0 && (!p.failed || line < p.fail_line)) {
			buf_reset(&p.msg);
			p.failed = 0;
			cred_fail(&p, line,
				  "expected '[profile]' or 'name = value'");
		} else if (line < 0) {
			cred_fail(&p, 0, "credentials parser failed (%d)",
				  line);
		}
		if (!p.failed)
			cred_check(&p);
	}
	free(p.first_line);
	if (p.failed) {
		if (err) {
			/* Cut short by err's cap, it is still useful. */
			int r = buf_add(err, p.msg.data, p.msg.len);

			(void)r;
		}
		buf_release(&p.msg);
		api_credentials_release(creds);
		return ERR_INVALID;
	}
	buf_release(&p.msg);
	return 0;
}

void api_credentials_release(struct api_credentials *creds)
{
	size_t i;

	if (!creds)
		return;
	for (i = 0; i < creds->n; i++) {
		struct api_credential *c = &creds->items[i];

		free(c->profile);
		free(c->access_key_id);
		free(c->user);
		while (c->n_s3_prefixes)
			free(c->s3_prefixes[--c->n_s3_prefixes]);
		free(c->s3_prefixes);
		while (c->n_batch_queues)
			free(c->batch_queues[--c->n_batch_queues]);
		free(c->batch_queues);
		if (c->secret_access_key) {
			/* Secrets do not linger in freed memory. */
			OPENSSL_cleanse(c->secret_access_key,
					strlen(c->secret_access_key));
			free(c->secret_access_key);
		}
	}
	free(creds->items);
	creds->items = NULL;
	creds->n = 0;
	creds->alloc = 0;
}
