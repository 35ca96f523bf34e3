#define LOG_TAG "ctrl"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "controller/ctrl.h"
#include "controller/files.h"
#include "db/secrets.h"
#include "common/bug.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

int ctrl_read_file(const char *path, size_t max, struct buf *out,
		   struct buf *err)
{
	char chunk[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		(void)buf_addf(err, "cannot open '%s': %s", path,
			       strerror(errno));
		return ERR_IO;
	}
	out->max = max;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (buf_add(out, chunk, (size_t)n)) {
			(void)buf_addf(err, "'%s' is larger than %zu bytes",
				       path, max);
			close(fd);
			return ERR_TOOBIG;
		}
	}
	close(fd);
	if (n < 0) {
		(void)buf_addf(err, "cannot read '%s': %s", path,
			       strerror(errno));
		return ERR_IO;
	}
	return 0;
}

char *ctrl_read_line(const char *path)
{
	char data[256];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	n = read(fd, data, sizeof(data) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	data[n] = '\0';
	data[strcspn(data, "\n")] = '\0';
	return data[0] ? xstrdup(data) : NULL;
}

int ctrl_write_small(const char *path, const char *text)
{
	return fs_write_atomic(path, text, strlen(text), 0600, FS_WRITE_SYNC,
			       NULL) ?
		       -1 :
		       0;
}

/* Whether s is 2 * n hex digits. */
static int hex_of(const char *s, size_t n)
{
	return s && strlen(s) == 2 * n &&
	       strspn(s, "0123456789abcdef") == 2 * n;
}

/* n random bytes as hex. */
static char *random_hex(size_t n)
{
	unsigned char raw[64];
	char *hex = xmalloc(2 * n + 1);
	size_t i;

	if (n > sizeof(raw))
		BUG("secret of %zu bytes", n);
	if (RAND_bytes(raw, (int)n) != 1)
		BUG("no randomness for secrets");
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	OPENSSL_cleanse(raw, sizeof(raw));
	return hex;
}

static void free_secret(char *s)
{
	if (s)
		OPENSSL_cleanse(s, strlen(s));
	free(s);
}

char *ctrl_secret(struct ctrl_ctx *ctx, const char *name, const char *legacy,
		  size_t n, int *existed)
{
	struct buf err = BUF_INIT;
	char *have = NULL, *cand;
	int r = db_secret_get(ctx->db, name, &have, &err);

	*existed = r == 0;
	if (r != ERR_NOTFOUND)
		goto out;
	/* An older controller kept it in a file: agents left running
	 * keep working across the upgrade. */
	cand = legacy ? ctrl_read_line(legacy) : NULL;
	*existed = hex_of(cand, n);
	if (!*existed) {
		free_secret(cand);
		cand = random_hex(n);
	}
	r = db_secret_get_or_put(ctx->db, name, cand, &have, &err);
	free_secret(cand);
out:
	if (!r && !hex_of(have, n)) {
		buf_reset(&err);
		(void)buf_adds(&err, "not what was stored");
		r = ERR_DB;
	}
	if (r) {
		/* The name is no secret; its value never reaches the log. */
		log_error("secret '%s': %s", name, err.data);
		free_secret(have);
		have = NULL;
		*existed = 0;
	}
	buf_release(&err);
	return have;
}

char *ctrl_host_token(struct ctrl_ctx *ctx, const char *name, int *existed)
{
	struct buf p = BUF_INIT, key = BUF_INIT;
	char *tok;

	/* Searchable, not readable: a local host's work folder lies below,
	 * and its jobs' users must reach their folders. */
	(void)buf_addf(&p, "%s/hosts", ctx->cfg.state_dir);
	mkdir(p.data, 0711);
	(void)chmod(p.data, 0711);
	(void)buf_addf(&p, "/%s", name);
	mkdir(p.data, 0711);
	(void)chmod(p.data, 0711);
	(void)buf_adds(&p, "/token");
	(void)buf_addf(&key, "host-token/%s", name);
	tok = ctrl_secret(ctx, key.data, p.data, 24, existed);
	if (!tok) {
		/* The store refused (said above): this run's token, which
		 * the next start replaces (the host is provisioned again). */
		tok = random_hex(24);
		*existed = 0;
	}
	buf_release(&p);
	buf_release(&key);
	return tok;
}

int ctrl_file_path_allowed(const struct ctrl_ctx *ctx, const char *path,
			   struct buf *err)
{
	const struct ctrl_config *cfg = &ctx->cfg;

	if (!cfg->n_file_roots && !cfg->credentials_file)
		return 0;
	if (!cfg->n_file_roots) {
		(void)buf_adds(err, "file:// URIs are not allowed on this "
				    "controller (its operator may allow "
				    "folders with trainctld "
				    "--allow-file-root DIR)");
		return ERR_INVALID;
	}
	if (fs_path_under(path, cfg->file_roots, cfg->n_file_roots))
		return 0;
	(void)buf_addf(err,
		       "'%.200s' is outside the folders this controller "
		       "allows for file:// URIs",
		       path);
	return ERR_INVALID;
}
