/*
 * The client side of checkpoint copies on other hosts (agent/peerckpt.h):
 * the holders a restore asks, and the push of new copies to the next host
 * of the job. Both run in forked workers, so a blocking libcurl easy
 * handle per request is enough.
 */
#define _GNU_SOURCE
#define LOG_TAG "agent"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/memckpt.h"
#include "agent/peerckpt.h"
#include "api/agent_proto.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/strvec.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define MANIFEST "MANIFEST.json"
/* Lists and manifests are small; a file is bounded by its listed size. */
#define TEXT_MAX (1 << 20)
#define CONNECT_MS 1000L
/* A transfer slower than 64 KiB/s for 10 s is given up. */
#define LOW_SPEED 65536L
#define LOW_SPEED_S 10L
/* Fewer, larger writes of a fetched file. */
#define RECV_BUFFER (512L * 1024)
/* A holder that refuses is asked again this often, this long apart. */
#define LIST_TRIES 10
#define LIST_WAIT_MS 100

/* --- pure parts ------------------------------------------------------- */

static int uid_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > AGENT_PEERCKPT_UID_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789-_",
			    s[i]) ||
		    !s[i])
			return 0;
	return 1;
}

/* The next segment of *s (up to '/' or the end) into out (cap bytes). */
static int segment(const char **s, char *out, size_t cap)
{
	const char *e = strchr(*s, '/');
	size_t n = e ? (size_t)(e - *s) : strlen(*s);

	if (!n || n >= cap)
		return ERR_INVALID;
	memcpy(out, *s, n);
	out[n] = '\0';
	*s += n + (e ? 1 : 0);
	return e && !**s ? ERR_INVALID : 0; /* no trailing '/' */
}

int agent_peerckpt_path(const char *url, struct agent_peerckpt_path *p)
{
	const char *s = url;
	long long step;
	long rank;

	memset(p, 0, sizeof(*p));
	if (strncmp(s, "/checkpoints/", 13))
		return ERR_INVALID;
	s += 13;
	if (segment(&s, p->uid, sizeof(p->uid)) ||
	    !uid_ok(p->uid, strlen(p->uid)))
		return ERR_INVALID;
	if (!*s)
		return 0;
	if (segment(&s, p->folder, sizeof(p->folder)) ||
	    !agent_memckpt_name(p->folder, strlen(p->folder), 1, &step, &rank))
		return ERR_INVALID;
	if (!*s)
		return 0;
	if (segment(&s, p->file, sizeof(p->file)) || *s ||
	    !agent_memckpt_file_ok(p->file))
		return ERR_INVALID;
	return 0;
}

size_t agent_peerckpt_order(size_t i, size_t n, size_t *order)
{
	size_t k;

	if (n < 2 || i >= n)
		return 0;
	for (k = 1; k < n; k++)
		order[k - 1] = (i + k) % n;
	return n - 1;
}

/* --- requests --------------------------------------------------------- */

struct sink {
	struct buf *text; /* or */
	int fd;
	int64_t left; /* bytes still allowed */
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sink *k = arg;
	size_t n = size * nmemb;

	if ((int64_t)n > k->left)
		return 0;
	k->left -= (int64_t)n;
	if (k->text)
		return buf_add(k->text, data, n) ? 0 : n;
	return fs_write_all(k->fd, data, n) ? 0 : n;
}

/* A handle for url with the job's token; headers to free after. */
static CURL *easy_for(const char *url, const char *token,
		      struct curl_slist **headers, char *errbuf)
{
	struct buf h = BUF_INIT;
	CURL *e = curl_easy_init();

	if (!e)
		return NULL;
	(void)buf_addf(&h, "Authorization: Bearer %s", token);
	*headers = curl_slist_append(NULL, h.data);
	buf_release(&h);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, *headers);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_S);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, RECV_BUFFER);
	return e;
}

/*
 * Runs e: 0 on a 2xx answer, ERR_NOTFOUND on 404, ERR_AUTH on 403 (the
 * holder does not know this attempt yet), ERR_IO (with *unreachable set
 * when no connection was made) otherwise.
 */
static int perform(CURL *e, const char *url, const char *errbuf,
		   int *unreachable, struct buf *err)
{
	CURLcode c = curl_easy_perform(e);
	long status = 0;

	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (c == CURLE_OK && status >= 200 && status < 300)
		return 0;
	if (c == CURLE_OK && status == 404)
		return ERR_NOTFOUND;
	if (c == CURLE_OK && status == 403)
		return ERR_AUTH;
	if (unreachable &&
	    (c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT))
		*unreachable = 1;
	(void)buf_addf(err, "%s: %s", url,
		       c != CURLE_OK ?
			       (*errbuf ? errbuf : curl_easy_strerror(c)) :
			       "refused");
	if (c == CURLE_OK)
		(void)buf_addf(err, " (HTTP %ld)", status);
	return ERR_IO;
}

/* GET url into k. */
static int get(const char *url, const char *token, struct sink *k,
	       int *unreachable, struct buf *err)
{
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *e = easy_for(url, token, &headers, errbuf);
	int ret;

	if (!e)
		return ERR_NOMEM;
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
	ret = perform(e, url, errbuf, unreachable, err);
	curl_easy_cleanup(e);
	curl_slist_free_all(headers);
	return ret;
}

static int get_text(const char *url, const char *token, struct buf *out,
		    int *unreachable, struct buf *err)
{
	struct sink k = { out, -1, TEXT_MAX };

	buf_reset(out);
	return get(url, token, &k, unreachable, err);
}

/* "http://<address>:<port>/checkpoints/<uid>" (IPv6 in brackets). */
static void base_url(struct buf *b, const char *address, long port,
		     const char *uid)
{
	int v6 = strchr(address, ':') != NULL;

	(void)buf_addf(b, "http://%s%s%s:%ld/checkpoints/%s", v6 ? "[" : "",
		       address, v6 ? "]" : "", port, uid);
}

/* Lines of text into v. */
static void lines(const struct buf *text, struct strvec *v)
{
	const char *s = text->data, *e;

	while (s && *s) {
		e = strchr(s, '\n');
		if (!e)
			e = s + strlen(s);
		if (e > s)
			strvec_pushf(v, "%.*s", (int)(e - s), s);
		s = *e ? e + 1 : e;
	}
}

/* --- holders (restore) ------------------------------------------------ */

struct holders {
	const struct api_assignment *s;
	long port;
	size_t *order; /* host indexes */
	char *down;    /* [n]: unreachable, not asked again */
};

static void holder_url(const struct holders *h, size_t i, struct buf *b)
{
	size_t k = h->order[i];

	base_url(b, h->s->addresses[k], h->port, h->s->job_uid);
}

static int h_list(void *arg, size_t i, struct strvec *names)
{
	struct holders *h = arg;
	struct buf url = BUF_INIT, text = BUF_INIT, e = BUF_INIT;
	int unreachable = 0, ret = ERR_IO, tries;

	if (h->down[i])
		return ERR_IO;
	holder_url(h, i, &url);
	/* The holder learns of the new attempt from its own work, which may
	 * reach it a moment after ours reached us. */
	for (tries = 0; tries < LIST_TRIES; tries++) {
		ret = get_text(url.data, h->s->peer_token, &text, &unreachable,
			       &e);
		if (ret != ERR_AUTH)
			break;
		(void)usleep(LIST_WAIT_MS * 1000);
	}
	h->down[i] = (char)unreachable;
	if (!ret)
		lines(&text, names);
	buf_release(&url);
	buf_release(&text);
	buf_release(&e);
	return ret;
}

static int h_manifest(void *arg, size_t i, const char *name, struct buf *out)
{
	struct holders *h = arg;
	struct buf url = BUF_INIT, e = BUF_INIT;
	int ret;

	if (h->down[i])
		return ERR_IO;
	holder_url(h, i, &url);
	(void)buf_addf(&url, "/%s/" MANIFEST, name);
	ret = get_text(url.data, h->s->peer_token, out, NULL, &e);
	buf_release(&url);
	buf_release(&e);
	return ret;
}

/* One listed file ("name size") of folder url into dir. */
static int fetch_file(const char *url, const char *token, const char *line,
		      const char *dir, int64_t *bytes, struct buf *err)
{
	struct buf u = BUF_INIT, p = BUF_INIT;
	const char *sp = strchr(line, ' ');
	struct sink k = { NULL, -1, 0 };
	char *end;
	int ret = ERR_INVALID;

	if (!sp)
		goto out;
	(void)buf_addf(&p, "%.*s", (int)(sp - line), line);
	k.left = strtoll(sp + 1, &end, 10);
	if (*end || k.left < 0 || !agent_memckpt_file_ok(p.data))
		goto out;
	(void)buf_addf(&u, "%s/%s", url, p.data);
	buf_reset(&p);
	(void)buf_addf(&p, "%s/%.*s", dir, (int)(sp - line), line);
	k.fd = open(p.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (k.fd < 0) {
		(void)buf_addf(err, "%s: %s", p.data, strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	*bytes += k.left;
	ret = get(u.data, token, &k, NULL, err);
	if (close(k.fd) && !ret)
		ret = ERR_IO;
	if (!ret && k.left) {
		(void)buf_addf(err, "%s: short by %lld bytes", u.data,
			       (long long)k.left);
		ret = ERR_IO;
	}
	*bytes -= k.left;
out:
	if (ret == ERR_INVALID)
		(void)buf_addf(err, "bad line in a file list: '%s'", line);
	buf_release(&u);
	buf_release(&p);
	return ret;
}

static int h_fetch(void *arg, size_t i, const char *name, const char *dst,
		   int64_t *bytes, struct buf *err)
{
	struct holders *h = arg;
	struct buf url = BUF_INIT, text = BUF_INIT;
	struct strvec files = STRVEC_INIT;
	size_t k;
	int ret;

	if (h->down[i])
		return ERR_IO;
	holder_url(h, i, &url);
	(void)buf_addf(&url, "/%s", name);
	ret = get_text(url.data, h->s->peer_token, &text, NULL, err);
	if (!ret && mkdir(dst, 0755)) {
		(void)buf_addf(err, "%s: %s", dst, strerror(errno));
		ret = ERR_IO;
	}
	if (!ret)
		lines(&text, &files);
	for (k = 0; !ret && k < files.n; k++)
		ret = fetch_file(url.data, h->s->peer_token, files.v[k], dst,
				 bytes, err);
	strvec_release(&files);
	buf_release(&url);
	buf_release(&text);
	return ret;
}

static const char *h_label(void *arg, size_t i)
{
	struct holders *h = arg;

	if (h->order[i] == (size_t)h->s->host_index)
		return NULL;
	return h->s->hosts[h->order[i]];
}

void agent_peerckpt_holders(const struct agent_config *cfg,
			    const struct api_assignment *s,
			    struct agent_memckpt_peers *pe)
{
	struct holders *h;

	memset(pe, 0, sizeof(*pe));
	if (cfg->peer_port <= 0 || !s->peer_token || !s->job_uid ||
	    s->n_hosts < 2 || !s->addresses || s->host_index < 0 ||
	    (size_t)s->host_index >= s->n_hosts)
		return;
	h = xcalloc(1, sizeof(*h));
	h->s = s;
	h->port = cfg->peer_port;
	h->order = xcalloc(s->n_hosts, sizeof(*h->order));
	h->down = xcalloc(s->n_hosts, 1);
	/* First this host's own server: the copies pushed here. */
	h->order[0] = (size_t)s->host_index;
	pe->n = 1 + agent_peerckpt_order((size_t)s->host_index, s->n_hosts,
					 h->order + 1);
	pe->list = h_list;
	pe->manifest = h_manifest;
	pe->fetch = h_fetch;
	pe->label = h_label;
	pe->arg = h;
}

void agent_peerckpt_holders_release(struct agent_memckpt_peers *pe)
{
	struct holders *h = pe->arg;

	if (h) {
		free(h->order);
		free(h->down);
		free(h);
	}
	memset(pe, 0, sizeof(*pe));
}

/* --- push ------------------------------------------------------------- */

/* PUT path's file to url. */
static int put_file(const char *url, const char *token, const char *path,
		    int64_t *bytes, struct buf *err)
{
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct buf sink = BUF_INIT;
	struct sink k = { &sink, -1, TEXT_MAX };
	struct stat sb;
	CURL *e;
	FILE *f;
	int ret;

	f = fopen(path, "rbe");
	if (!f || fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
		(void)buf_addf(err, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return ERR_IO;
	}
	e = easy_for(url, token, &headers, errbuf);
	if (!e) {
		fclose(f);
		return ERR_NOMEM;
	}
	curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(e, CURLOPT_READDATA, f);
	curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)sb.st_size);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
	ret = perform(e, url, errbuf, NULL, err);
	if (!ret)
		*bytes += sb.st_size;
	curl_easy_cleanup(e);
	curl_slist_free_all(headers);
	fclose(f);
	buf_release(&sink);
	return ret;
}

/* The plain files of dir into v; 0 or -1 (errno). */
static int list_files(const char *dir, struct strvec *v)
{
	struct buf p = BUF_INIT;
	struct dirent *e;
	struct stat sb;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		buf_reset(&p);
		(void)buf_addf(&p, "%s/%s", dir, e->d_name);
		if (!lstat(p.data, &sb) && S_ISREG(sb.st_mode))
			strvec_push(v, e->d_name);
	}
	closedir(d);
	buf_release(&p);
	return 0;
}

/* The files of dir, MANIFEST.json last (it completes the folder). */
static int push_folder(const char *url, const char *token, const char *dir,
		       int64_t *bytes, struct buf *err)
{
	struct buf a = BUF_INIT, b = BUF_INIT, text = BUF_INIT;
	struct strvec files = STRVEC_INIT;
	size_t i;
	int ret = 0;

	if (agent_memckpt_manifest(dir, &text))
		return ERR_NOTFOUND;
	buf_reset(&text);
	if (list_files(dir, &files)) {
		(void)buf_addf(err, "%s: %s", dir, strerror(errno));
		ret = ERR_IO;
	}
	strvec_push(&files, MANIFEST);
	for (i = 0; !ret && i < files.n; i++) {
		if (!agent_memckpt_file_ok(files.v[i]) ||
		    (i + 1 < files.n && !strcmp(files.v[i], MANIFEST)))
			continue;
		buf_reset(&a);
		buf_reset(&b);
		(void)buf_addf(&a, "%s/%s", url, files.v[i]);
		(void)buf_addf(&b, "%s/%s", dir, files.v[i]);
		ret = put_file(a.data, token, b.data, bytes, err);
	}
	strvec_release(&files);
	buf_release(&a);
	buf_release(&b);
	buf_release(&text);
	return ret;
}

/* Whether the target already has name, or the same step and rank with
 * the same manifest as dir's. */
static int target_has(const char *url, const char *token,
		      const struct strvec *theirs, const char *name,
		      const char *dir)
{
	struct buf mine = BUF_INIT, have = BUF_INIT, u = BUF_INIT, e = BUF_INIT;
	const char *dot = strrchr(name, '.');
	size_t i, fl = dot ? (size_t)(dot - name) : 0;
	int hit = 0;

	for (i = 0; i < theirs->n && !hit; i++)
		hit = !strcmp(theirs->v[i], name);
	if (hit || agent_memckpt_manifest(dir, &mine))
		goto out;
	for (i = 0; i < theirs->n && !hit; i++) {
		if (strncmp(theirs->v[i], name, fl + 1))
			continue;
		buf_reset(&u);
		(void)buf_addf(&u, "%s/%s/" MANIFEST, url, theirs->v[i]);
		hit = !get_text(u.data, token, &have, NULL, &e) &&
		      have.len == mine.len &&
		      !memcmp(have.data, mine.data, mine.len);
	}
out:
	buf_release(&mine);
	buf_release(&have);
	buf_release(&u);
	buf_release(&e);
	return hit;
}

int agent_peerckpt_push(const struct agent_config *cfg,
			const struct api_assignment *s, const char *root,
			struct agent_peerckpt_push *out, struct buf *err)
{
	struct strvec mine = STRVEC_INIT, theirs = STRVEC_INIT;
	struct buf url = BUF_INIT, u = BUF_INIT, dir = BUF_INIT;
	struct buf text = BUF_INIT;
	size_t next, i;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (cfg->peer_port <= 0 || !s->peer_token || !s->job_uid ||
	    s->n_hosts < 2 || !s->addresses ||
	    agent_memckpt_list(root, s->job_uid, &mine))
		goto out;
	next = ((size_t)s->host_index + 1) % s->n_hosts;
	out->to = s->hosts[next];
	base_url(&url, s->addresses[next], cfg->peer_port, s->job_uid);
	ret = get_text(url.data, s->peer_token, &text, NULL, err);
	if (!ret)
		lines(&text, &theirs);
	for (i = 0; !ret && i < mine.n; i++) {
		buf_reset(&dir);
		(void)buf_addf(&dir, "%s/%s/%s", root, s->job_uid, mine.v[i]);
		if (target_has(url.data, s->peer_token, &theirs, mine.v[i],
			       dir.data))
			continue;
		buf_reset(&u);
		(void)buf_addf(&u, "%s/%s", url.data, mine.v[i]);
		ret = push_folder(u.data, s->peer_token, dir.data, &out->bytes,
				  err);
		if (ret == ERR_NOTFOUND) /* replaced meanwhile */
			ret = 0;
		else
			out->folders += !ret;
	}
out:
	strvec_release(&mine);
	strvec_release(&theirs);
	buf_release(&url);
	buf_release(&u);
	buf_release(&dir);
	buf_release(&text);
	return ret;
}
