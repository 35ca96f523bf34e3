#ifndef TESTS_STORAGE_HELPERS_H
#define TESTS_STORAGE_HELPERS_H

/*
 * Helpers shared by the tests/storage/ programs: temp folders, files of
 * known bytes, and a private s3rver (tests/storage/s3rver.sh). All static
 * inline so that each test uses what it needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"

/* A new empty folder under $TMPDIR; caller frees. */
static inline char *th_mkdtemp(const char *tag)
{
	const char *t = getenv("TMPDIR");
	struct buf b = BUF_INIT;

	(void)buf_addf(&b, "%s/%s.XXXXXX", t && *t ? t : "/tmp", tag);
	if (!mkdtemp(b.data)) {
		perror("mkdtemp");
		exit(1);
	}
	return buf_detach(&b, NULL);
}

static inline void th_rm_rf(const char *dir)
{
	struct buf cmd = BUF_INIT;

	if (!dir)
		return;
	(void)buf_addf(&cmd, "rm -rf '%s'", dir);
	if (system(cmd.data))
		fprintf(stderr, "# cannot remove %s\n", dir);
	buf_release(&cmd);
}

/* The byte at offset i of every test file with this seed. */
static inline unsigned char th_byte(uint64_t i, unsigned seed)
{
	uint64_t x = (i / 8 + 1) * 0x9e3779b97f4a7c15ULL ^ seed;

	x ^= x >> 29;
	return (unsigned char)(x >> (8 * (i % 8)));
}

/* Writes size bytes of pattern `seed` to path. */
static inline void th_write_file(const char *path, uint64_t size, unsigned seed)
{
	static unsigned char b[1 << 20];
	FILE *f = fopen(path, "wb");
	uint64_t off = 0;

	if (!f) {
		perror(path);
		exit(1);
	}
	while (off < size) {
		size_t n = size - off < sizeof(b) ? (size_t)(size - off) :
						    sizeof(b);
		size_t i;

		for (i = 0; i < n; i++)
			b[i] = th_byte(off + i, seed);
		fwrite(b, 1, n, f);
		off += n;
	}
	fclose(f);
}

/* 1 when path holds exactly size bytes of pattern seed. */
static inline int th_check_file(const char *path, uint64_t size, unsigned seed)
{
	static unsigned char b[1 << 20];
	FILE *f = fopen(path, "rb");
	uint64_t off = 0;
	size_t n, i;

	if (!f)
		return 0;
	while ((n = fread(b, 1, sizeof(b), f)) > 0) {
		for (i = 0; i < n; i++)
			if (b[i] != th_byte(off + i, seed)) {
				fclose(f);
				return 0;
			}
		off += n;
	}
	fclose(f);
	return off == size;
}

/* Writes a small text file. */
static inline void th_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* Reads a small text file into out (reset first); 0 or -1. */
static inline int th_read_text(const char *path, struct buf *out)
{
	char b[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	buf_reset(out);
	if (!f)
		return -1;
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		(void)buf_add(out, b, n);
	fclose(f);
	return 0;
}

static inline int th_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Counts entries under dir whose name contains needle (recursively). */
static inline int th_count_names(const char *dir, const char *needle)
{
	struct buf cmd = BUF_INIT, out = BUF_INIT;
	char tmpl[] = "/tmp/th_count.XXXXXX";
	int fd = mkstemp(tmpl), n;

	close(fd);
	(void)buf_addf(&cmd, "find '%s' -name '*%s*' | wc -l > %s", dir, needle,
		       tmpl);
	n = system(cmd.data);
	n = th_read_text(tmpl, &out) ? -1 : atoi(out.data);
	unlink(tmpl);
	buf_release(&cmd);
	buf_release(&out);
	return n;
}

/*
 * Starts a private s3rver with the buckets in `buckets` (space
 * separated). Returns its port, or 0 when it cannot run here (the caller
 * skips). dir is the folder for its data, pid and log.
 */
static inline int th_s3rver_start(const char *dir, const char *buckets)
{
	struct buf cmd = BUF_INIT, out = BUF_INIT;
	int rc;

	(void)buf_addf(&cmd,
		       "S3RVER_BUCKETS='%s' sh tests/storage/s3rver.sh start "
		       "'%s' >/dev/null",
		       buckets, dir);
	rc = system(cmd.data);
	buf_reset(&cmd);
	(void)buf_addf(&cmd, "%s/port", dir);
	if (rc != 0 || th_read_text(cmd.data, &out)) {
		buf_release(&cmd);
		buf_release(&out);
		return 0;
	}
	rc = atoi(out.data);
	buf_release(&cmd);
	buf_release(&out);
	return rc;
}

static inline void th_s3rver_stop(const char *dir)
{
	struct buf cmd = BUF_INIT;

	(void)buf_addf(&cmd, "sh tests/storage/s3rver.sh stop '%s'", dir);
	if (system(cmd.data))
		fprintf(stderr, "# s3rver stop failed\n");
	buf_release(&cmd);
}

/* A stor_get_stream() receiver that checks pattern seed as it goes. */
struct th_stream {
	unsigned seed;
	uint64_t off;	  /* bytes received */
	int bad;	  /* a byte differed */
	uint64_t stop_at; /* not 0: answer 42 once this many arrived */
	int calls;
};

static inline int th_stream_check(void *arg, const char *data, size_t n)
{
	struct th_stream *t = arg;
	size_t i;

	t->calls++;
	for (i = 0; i < n; i++)
		if ((unsigned char)data[i] != th_byte(t->off + i, t->seed))
			t->bad = 1;
	t->off += n;
	return t->stop_at && t->off >= t->stop_at ? 42 : 0;
}

#endif
