/*
 * What test_sigv4.c and test_sigv4_forms.c share: the vector files, the
 * HTTP messages they hold, and the verification outcome the tests check.
 * Each program loads the fixtures once (group_setup).
 */
#ifndef TESTS_API_SIGV4_FIXTURE_H
#define TESTS_API_SIGV4_FIXTURE_H

#define AWS_NOW_MS 1440938160000LL  /* 2015-08-30T12:36:00Z */
#define BOTO_NOW_MS 1738324800000LL /* 2025-01-31T12:00:00Z */
#define BOTO_DATE "20250131T120000Z"
#define MIN_MS 60000LL
#define MAX_HDRS 64
#define MAX_VECTORS 256

static const char AWS_CREDS[] =
	"[example]\n"
	"aws_access_key_id = AKIDEXAMPLE\n"
	"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n";
static const char AWS_SECRET[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/* The shared fixtures, loaded once by group_setup(). */
static struct api_credentials aws_creds;
static struct api_credentials boto_creds;
static char *create_text; /* clients/botocore-create-training-job.sreq */
static size_t create_len;

/* ---- files ---- */

static __attribute__((unused)) const char *data_root(void)
{
	const char *r = getenv("SIGV4_TESTDATA");

	return r && r[0] ? r : "tests/api/sigv4";
}

static __attribute__((unused)) char *data_path(const char *a, const char *b,
					       const char *c)
{
	struct buf p = BUF_INIT;

	if (buf_addf(&p, "%s/%s%s%s", data_root(), a, b ? b : "", c ? c : ""))
		return NULL;
	return buf_detach(&p, NULL);
}

/* Reads a whole file; NULL when it cannot. The caller frees. */
static __attribute__((unused)) char *slurp(const char *path, size_t *len)
{
	struct buf b = BUF_INIT_MAX(1 << 20);
	char chunk[4096];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf_add(&b, chunk, n)) {
			fclose(f);
			buf_release(&b);
			return NULL;
		}
	}
	fclose(f);
	return buf_detach(&b, len);
}

/* ---- HTTP messages as in the .req / .sreq files ---- */

struct msg {
	char *text; /* our copy, cut into the pieces below */
	const char *method;
	const char *uri;
	struct api_header h[MAX_HDRS];
	size_t n;
	char *body;
	size_t body_len;
	char *owned[MAX_HDRS]; /* values set by the tests */
	size_t n_owned;
};

/*
 * "METHOD URI HTTP/1.1", "Name:value" lines, a blank line, the body. The
 * URI may hold spaces (AWS's get-space), so it runs to the last space.
 * A line starting with white space continues the previous header: it is
 * passed on as one more header of that name, which gives the comma-joined
 * value AWS's get-header-value-multiline expects.
 */
static __attribute__((unused)) int msg_parse(struct msg *m, const char *text,
					     size_t len)
{
	char *p, *end, *line, *nl, *sp;
	int first = 1;

	memset(m, 0, sizeof(*m));
	m->text = xmalloc(len + 1);
	memcpy(m->text, text, len);
	m->text[len] = '\0';
	p = m->text;
	end = m->text + len;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		line = p;
		p = nl ? nl + 1 : end;
		if (nl) {
			*nl = '\0';
			if (nl > line && nl[-1] == '\r')
				nl[-1] = '\0';
		}
		if (first) {
			first = 0;
			sp = strchr(line, ' ');
			if (!sp)
				return -1;
			*sp = '\0';
			m->method = line;
			m->uri = sp + 1;
			sp = strrchr(sp + 1, ' ');
			if (!sp)
				return -1;
			*sp = '\0';
			continue;
		}
		if (line[0] == '\0') {
			m->body = p;
			m->body_len = (size_t)(end - p);
			return 0;
		}
		if (m->n == MAX_HDRS)
			return -1;
		if (line[0] == ' ' || line[0] == '\t') {
			if (m->n == 0)
				return -1;
			m->h[m->n].name = m->h[m->n - 1].name;
			m->h[m->n].value = line;
			m->n++;
			continue;
		}
		sp = strchr(line, ':');
		if (!sp)
			return -1;
		*sp = '\0';
		m->h[m->n].name = line;
		m->h[m->n].value = sp + 1;
		m->n++;
	}
	m->body = end;
	m->body_len = 0;
	return first ? -1 : 0;
}

static __attribute__((unused)) void msg_free(struct msg *m)
{
	size_t i;

	for (i = 0; i < m->n_owned; i++)
		free(m->owned[i]);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

static __attribute__((unused)) const char *own(struct msg *m, const char *s)
{
	assert_true(m->n_owned < MAX_HDRS);
	m->owned[m->n_owned] = xstrdup(s);
	return m->owned[m->n_owned++];
}

static __attribute__((unused)) void msg_add(struct msg *m, const char *name,
					    const char *value)
{
	assert_true(m->n < MAX_HDRS);
	m->h[m->n].name = own(m, name);
	m->h[m->n].value = own(m, value);
	m->n++;
}

static __attribute__((unused)) void msg_del(struct msg *m, const char *name)
{
	size_t i = 0;

	while (i < m->n) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			memmove(&m->h[i], &m->h[i + 1],
				(m->n - i - 1) * sizeof(m->h[0]));
			m->n--;
		} else {
			i++;
		}
	}
}

/* Replaces the value of header name (which must exist). */
static __attribute__((unused)) void msg_set(struct msg *m, const char *name,
					    const char *value)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			m->h[i].value = own(m, value);
			return;
		}
	}
	fail_msg("no header %s", name);
}

static __attribute__((unused)) const char *msg_get(const struct msg *m,
						   const char *name)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (strcasecmp(m->h[i].name, name) == 0) {
			const char *v = m->h[i].value;

			while (*v == ' ')
				v++;
			return v;
		}
	}
	return NULL;
}

static __attribute__((unused)) struct api_sigv4_request
msg_req(const struct msg *m)
{
	struct api_sigv4_request r;

	r.method = m->method;
	r.raw_uri = m->uri;
	r.headers = m->h;
	r.n_headers = m->n;
	r.body = m->body;
	r.body_len = m->body_len;
	return r;
}

/* Copies the value after "key=" up to ',', '&', space or end. */
static __attribute__((unused)) int param_of(const char *s, const char *key,
					    char *out, size_t cap)
{
	size_t kl = strlen(key), n = 0;
	const char *p = s;

	while ((p = strstr(p, key)) != NULL) {
		if ((p == s || strchr(" ,&?", p[-1])) && p[kl] == '=')
			break;
		p += kl;
	}
	if (!p)
		return -1;
	p += kl + 1;
	while (p[n] && !strchr(", &", p[n]))
		n++;
	if (n >= cap)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

struct outcome {
	int rc;
	const char *type;
	int status;
	char msg[512];
};

static __attribute__((unused)) struct outcome
run_verify(const struct msg *m, const struct api_credentials *c,
	   const char *service, int64_t now)
{
	struct api_sigv4_request r = msg_req(m);
	struct buf err = BUF_INIT_MAX(4096);
	struct outcome o;

	o.type = "unset";
	o.status = -1;
	o.rc = api_sigv4_verify(&r, c, service, now, &o.type, &o.status, &err);
	snprintf(o.msg, sizeof(o.msg), "%s", err.data);
	buf_release(&err);
	return o;
}

static __attribute__((unused)) void expect_ok(const struct outcome *o)
{
	if (o->rc != 0)
		print_message("# verify: %s %d %s\n", o->type ? o->type : "-",
			      o->status, o->msg);
	assert_int_equal(o->rc, 0);
	assert_null(o->type);
}

static __attribute__((unused)) void expect_fail(const struct outcome *o,
						const char *type, int status)
{
	assert_int_equal(o->rc, ERR_AUTH);
	assert_non_null(o->type);
	assert_string_equal(o->type, type);
	assert_int_equal(o->status, status);
	assert_true(o->msg[0] != '\0');
}

static __attribute__((unused)) void load_create(struct msg *m)
{
	assert_non_null(create_text);
	assert_int_equal(msg_parse(m, create_text, create_len), 0);
}

static __attribute__((unused)) struct msg load_boto(const char *name)
{
	struct msg m;
	char *path = data_path("clients/botocore-", name, ".sreq");
	size_t len;
	char *text = slurp(path, &len);

	free(path);
	assert_non_null(text);
	assert_int_equal(msg_parse(&m, text, len), 0);
	free(text);
	return m;
}

static __attribute__((unused)) int group_setup(void **state)
{
	struct buf err = BUF_INIT;
	char *path, *text;
	size_t len;

	(void)state;
	if (api_credentials_parse(AWS_CREDS, &aws_creds, &err))
		return -1;
	path = data_path("clients/credentials", NULL, NULL);
	text = slurp(path, &len);
	free(path);
	if (!text || api_credentials_parse(text, &boto_creds, &err)) {
		print_message("# clients/credentials: %s\n",
			      text ? err.data : "cannot read");
		free(text);
		/* Tests that need it fail on their own. */
		buf_release(&err);
		return 0;
	}
	free(text);
	path = data_path("clients/botocore-create-training-job.sreq", NULL,
			 NULL);
	create_text = slurp(path, &create_len);
	free(path);
	buf_release(&err);
	return 0;
}

static __attribute__((unused)) int group_teardown(void **state)
{
	(void)state;
	api_credentials_release(&aws_creds);
	api_credentials_release(&boto_creds);
	free(create_text);
	return 0;
}

#endif
