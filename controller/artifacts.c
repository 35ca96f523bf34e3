#define LOG_TAG "ctrl"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "controller/artifacts.h"
#include "controller/replicate.h"
#include "controller/ctrl.h"
#include "controller/work.h"
#include "db/run.h"
#include "storage/storage.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define COPY_BLOCK (1 << 20)

/*
 * The files the hosts' parts held so far, to tell when a later host's
 * file replaces an earlier one's of the same name: SageMaker merges the
 * hosts' /opt/ml/model the same way, last one wins, and says nothing;
 * here the job's transitions and log say it.
 */
struct seen_file {
	char *name;
	int host; /* host_index of the last part that held it */
};

struct seen {
	struct seen_file *files;
	size_t n, alloc;
	struct buf *warn; /* NULL: not watched */
	size_t n_clash;
};

#define CLASH_NAMED 5

static void seen_release(struct seen *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->files[i].name);
	free(s->files);
	memset(s, 0, sizeof(*s));
}

/* The name an entry has once extracted: without "./" in front. */
static const char *entry_name(const char *name)
{
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	return name;
}

/* Notes that host's part holds file name, and a clash with another's. */
static void seen_add(struct seen *s, const char *name, int host)
{
	size_t i;

	if (!s->warn)
		return;
	name = entry_name(name);
	for (i = 0; i < s->n; i++) {
		if (strcmp(s->files[i].name, name))
			continue;
		if (s->files[i].host != host) {
			if (s->n_clash < CLASH_NAMED)
				(void)buf_addf(s->warn,
					       "%s%s (algo-%d over algo-%d)",
					       s->n_clash ? ", " : "", name,
					       host + 1, s->files[i].host + 1);
			s->n_clash++;
		}
		s->files[i].host = host;
		return;
	}
	ALLOC_GROW(s->files, s->n + 1, s->alloc);
	s->files[s->n].name = xstrdup(name);
	s->files[s->n].host = host;
	s->n++;
}

/* The warning, once every part was seen: why, then the names. */
static void seen_finish(struct seen *s, const char *file)
{
	struct buf w = BUF_INIT;

	if (!s->warn || !s->n_clash)
		return;
	(void)buf_addf(&w,
		       "%zu file%s of the hosts' %s had the same name on "
		       "several hosts; the last host's was kept: %s%s",
		       s->n_clash, s->n_clash == 1 ? "" : "s", file,
		       s->warn->data, s->n_clash > CLASH_NAMED ? ", ..." : "");
	buf_reset(s->warn);
	(void)buf_add(s->warn, w.data, w.len);
	buf_release(&w);
}

/* Appends every entry of the tar.gz at path (host's part) to w. */
static int copy_entries(struct archive *w, const char *path, int host,
			struct seen *seen, struct buf *err)
{
	struct archive *r = archive_read_new();
	struct archive_entry *e;
	char *block = NULL;
	int ret = 0;
	int rc;

	archive_read_support_filter_gzip(r);
	archive_read_support_format_tar(r);
	if (archive_read_open_filename(r, path, COPY_BLOCK) != ARCHIVE_OK) {
		(void)buf_addf(err, "cannot read '%s': %s", path,
			       archive_error_string(r));
		archive_read_free(r);
		return ERR_IO;
	}
	block = xmalloc(COPY_BLOCK);
	while ((rc = archive_read_next_header(r, &e)) == ARCHIVE_OK) {
		la_ssize_t n;

		if (archive_entry_filetype(e) != AE_IFDIR)
			seen_add(seen, archive_entry_pathname(e), host);
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			(void)buf_addf(err, "cannot write entry: %s",
				       archive_error_string(w));
			ret = ERR_IO;
			break;
		}
		while ((n = archive_read_data(r, block, COPY_BLOCK)) > 0) {
			if (archive_write_data(w, block, (size_t)n) != n) {
				ret = ERR_IO;
				break;
			}
		}
		if (n < 0 || ret) {
			(void)buf_addf(err, "cannot copy from '%s': %s", path,
				       archive_error_string(r));
			ret = ERR_IO;
			break;
		}
	}
	if (!ret && rc != ARCHIVE_EOF) {
		(void)buf_addf(err, "'%s' is not a valid tar.gz: %s", path,
			       archive_error_string(r));
		ret = ERR_INVALID;
	}
	free(block);
	archive_read_free(r);
	return ret;
}

/* Notes the names of the files in the tar.gz at path (host's part). */
static int list_names(const char *path, int host, struct seen *seen,
		      struct buf *err)
{
	struct archive *r = archive_read_new();
	struct archive_entry *e;
	int ret = 0, rc;

	archive_read_support_filter_gzip(r);
	archive_read_support_format_tar(r);
	if (archive_read_open_filename(r, path, COPY_BLOCK) != ARCHIVE_OK) {
		(void)buf_addf(err, "cannot read '%s': %s", path,
			       archive_error_string(r));
		archive_read_free(r);
		return ERR_IO;
	}
	while ((rc = archive_read_next_header(r, &e)) == ARCHIVE_OK)
		if (archive_entry_filetype(e) != AE_IFDIR)
			seen_add(seen, archive_entry_pathname(e), host);
	if (rc != ARCHIVE_EOF) {
		(void)buf_addf(err, "'%s' is not a valid tar.gz: %s", path,
			       archive_error_string(r));
		ret = ERR_INVALID;
	}
	archive_read_free(r);
	return ret;
}

/* A store as the controller's own uploads use it. */
static int open_store(struct ctrl_ctx *ctx, struct stor **st, struct buf *err)
{
	struct stor_config cfg;
	int ret;

	stor_config_init(&cfg);
	stor_config_set(&cfg.state_dir, ctx->cfg.state_dir);
	/* --s3-endpoint first; the environment fills the rest. */
	stor_config_set(&cfg.s3_endpoint, ctx->cfg.s3_endpoint);
	ret = stor_config_from_env(&cfg, err);
	stor_config_fill_defaults(&cfg);
	if (!ret)
		ret = stor_open(&cfg, st, err);
	stor_config_release(&cfg);
	return ret;
}

/*
 * A replicated controller: every object under uri (one object, or a
 * prefix ending in '/') just written to the embedded store goes to a
 * second member before the job is said done with it (controller/
 * replicate.c). Nothing to do with another store.
 */
static int replicate(struct stor *st, const char *uri, struct buf *err)
{
	struct stor_list l = STOR_LIST_INIT;
	struct stor_uri u;
	size_t i;
	int ret;

	if (!ctrl_repl_on() || stor_uri_parse(uri, &u, err))
		return 0;
	ret = stor_list(st, uri, &l, err);
	for (i = 0; !ret && i < l.n; i++)
		ret = ctrl_repl_object(u.bucket, l.v[i].key, err);
	stor_list_release(&l);
	stor_uri_release(&u);
	return ret;
}

int ctrl_artifacts_store_files(struct ctrl_ctx *ctx, const char *job,
			       int attempt, const struct db_assignment *as,
			       size_t n, const char *output_path,
			       char **uri_out, struct buf *warn,
			       struct buf *err)
{
	struct buf dir = BUF_INIT, part = BUF_INIT, uri = BUF_INIT;
	struct seen seen = { .warn = warn };
	struct stor_sync_stats stats;
	struct stor *st = NULL;
	size_t i, len = strlen(output_path);
	int ret;

	if (uri_out)
		*uri_out = NULL;
	(void)buf_addf(&dir, "%s/artifacts/%s/%d", ctx->cfg.state_dir, job,
		       attempt);
	ret = fs_mkdir_p(dir.data, 0700, err);
	if (ret)
		goto out;
	(void)buf_addf(&dir, "/model-files.XXXXXX");
	if (!mkdtemp(dir.data)) {
		(void)buf_addf(err, "cannot create '%s': %s", dir.data,
			       strerror(errno));
		ret = ERR_IO;
		goto out;
	}
	/*
	 * Every host's model/ in host order, as in the merged model.tar.gz:
	 * a later host's file replaces an earlier one's of the same name.
	 * The unpack refuses names that would leave the folder.
	 */
	for (i = 0; !ret && i < n; i++) {
		if (!(as[i].artifacts & 1))
			continue;
		buf_reset(&part);
		(void)ctrl_artifact_path(ctx, job, attempt, as[i].host_index,
					 "model.tar.gz", &part);
		if (warn)
			ret = list_names(part.data, as[i].host_index, &seen,
					 err);
		if (!ret)
			ret = stor_archive_unpack(part.data, dir.data, NULL,
						  err);
	}
	seen_finish(&seen, "model files");
	(void)buf_addf(&uri, "%s%s%s/output/model", output_path,
		       len && output_path[len - 1] == '/' ? "" : "/", job);
	if (!ret)
		ret = open_store(ctx, &st, err);
	memset(&stats, 0, sizeof(stats));
	if (!ret)
		ret = stor_put_dir(st, dir.data, uri.data, 0, &stats, err);
	if (!ret) {
		struct buf tree = BUF_INIT;

		(void)buf_addf(&tree, "%s/", uri.data);
		ret = replicate(st, tree.data, err);
		buf_release(&tree);
	}
	stor_close(st);
	(void)fs_remove_tree(dir.data);
	if (!ret) {
		log_info("job '%s': %zu model files (%lld bytes) stored under "
			 "%s/",
			 job, stats.files, (long long)stats.bytes, uri.data);
		(void)buf_addch(&uri, '/');
		if (uri_out)
			*uri_out = buf_detach(&uri, NULL);
	}
out:
	seen_release(&seen);
	buf_release(&dir);
	buf_release(&part);
	buf_release(&uri);
	return ret;
}

/* The mkstemp() template of the merged file beside the parts. */
static void merged_template(const struct ctrl_ctx *ctx, const char *job,
			    int attempt, const char *file, struct buf *tmp)
{
	buf_reset(tmp);
	(void)buf_addf(tmp, "%s/artifacts/%s/%d/merged-%s.XXXXXX",
		       ctx->cfg.state_dir, job, attempt, file);
}

int ctrl_artifacts_collect(struct ctrl_ctx *ctx, const char *job, int attempt,
			   const struct db_assignment *as, size_t n,
			   const char *output_path, const char *file,
			   char **uri_out, struct buf *warn, struct buf *err)
{
	struct seen seen = { .warn = warn };
	struct buf tmp = BUF_INIT;
	struct buf part = BUF_INIT;
	struct buf uri = BUF_INIT;
	struct stor *st = NULL;
	struct archive *w;
	int bit = !strcmp(file, "model.tar.gz") ? 1 : 2;
	int ret = 0;
	size_t i;
	int fd;

	if (uri_out)
		*uri_out = NULL;
	merged_template(ctx, job, attempt, file, &tmp);
	fd = mkstemp(tmp.data);
	if (fd < 0) {
		/* The directory exists only once a part arrived. */
		struct buf dir = BUF_INIT;

		(void)buf_addf(&dir, "%s/artifacts", ctx->cfg.state_dir);
		mkdir(dir.data, 0700);
		(void)buf_addf(&dir, "/%s", job);
		mkdir(dir.data, 0700);
		(void)buf_addf(&dir, "/%d", attempt);
		mkdir(dir.data, 0700);
		buf_release(&dir);
		/* A failed mkstemp() leaves its last name in the template. */
		merged_template(ctx, job, attempt, file, &tmp);
		fd = mkstemp(tmp.data);
	}
	if (fd < 0) {
		(void)buf_addf(err, "cannot create '%s': %s", tmp.data,
			       strerror(errno));
		buf_release(&tmp);
		return ERR_IO;
	}
	w = archive_write_new();
	archive_write_add_filter_gzip(w);
	archive_write_set_format_pax_restricted(w);
	if (archive_write_open_fd(w, fd) != ARCHIVE_OK) {
		(void)buf_addf(err, "cannot write archive: %s",
			       archive_error_string(w));
		ret = ERR_IO;
	}
	for (i = 0; !ret && i < n; i++) {
		if (!(as[i].artifacts & bit))
			continue;
		buf_reset(&part);
		(void)ctrl_artifact_path(ctx, job, attempt, as[i].host_index,
					 file, &part);
		ret = copy_entries(w, part.data, as[i].host_index, &seen, err);
	}
	seen_finish(&seen, bit == 1 ? "model files" : "output files");
	if (archive_write_close(w) != ARCHIVE_OK && !ret) {
		(void)buf_addf(err, "cannot finish archive: %s",
			       archive_error_string(w));
		ret = ERR_IO;
	}
	archive_write_free(w);
	close(fd);
	if (!ret) {
		size_t len = strlen(output_path);

		(void)buf_addf(&uri, "%s%s%s/output/%s", output_path,
			       len && output_path[len - 1] == '/' ? "" : "/",
			       job, file);
		ret = open_store(ctx, &st, err);
		if (!ret)
			ret = stor_put(st, tmp.data, uri.data, NULL, err);
		if (!ret)
			ret = replicate(st, uri.data, err);
		stor_close(st);
	}
	unlink(tmp.data);
	if (!ret && uri_out)
		*uri_out = buf_detach(&uri, NULL);
	seen_release(&seen);
	buf_release(&tmp);
	buf_release(&part);
	buf_release(&uri);
	return ret;
}
