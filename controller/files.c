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

char *ctrl_host_token(struct ctrl_ctx *ctx, const char *name, int *existed)
{
	struct buf p = BUF_INIT;
	char *tok;

	/* Searchable, not readable: a local host's work folder lies below,
	 * and its jobs' users must reach their folders; the token is 0600. */
	(void)buf_addf(&p, "%s/hosts", ctx->cfg.state_dir);
	mkdir(p.data, 0711);
	(void)chmod(p.data, 0711);
	(void)buf_addf(&p, "/%s", name);
	mkdir(p.data, 0711);
	(void)chmod(p.data, 0711);
	(void)buf_adds(&p, "/token");
	tok = ctrl_read_line(p.data);
	*existed = tok != NULL;
	if (!tok) {
		unsigned char raw[24];
		char hex[49];
		int i;

		if (RAND_bytes(raw, sizeof(raw)) != 1)
			BUG("no randomness for agent tokens");
		for (i = 0; i < 24; i++)
			snprintf(hex + 2 * i, 3, "%02x", raw[i]);
		tok = xstrdup(hex);
		if (ctrl_write_small(p.data, tok))
			log_warn("host '%s': cannot save its token in '%s': %s",
				 name, p.data, strerror(errno));
	}
	buf_release(&p);
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
