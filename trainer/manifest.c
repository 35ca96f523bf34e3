/*
 * The files of one checkpoint directory and its MANIFEST.json, the
 * record that makes the directory complete (docs/checkpoints.md). The
 * agent reads the same manifest to decide what it may mirror or restore,
 * so the reader here is strict: anything unexpected is a torn checkpoint.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "trainer/internal.h"
#include "common/banned.h"

/* Largest manifest we read; an entry takes about 150 bytes. */
#define MANIFEST_MAX (16 * 1024 * 1024)
#define READ_CHUNK (1024 * 1024)

int trainer__name_valid(const char *name)
{
	size_t n = 0;
	const char *p;

	if (!name)
		return 0;
	for (p = name; *p; p++, n++) {
		char c = *p;

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	if (n == 0 || n > TRAINER__NAME_MAX)
		return 0;
	return strcmp(name, ".") && strcmp(name, "..") &&
	       strcmp(name, TRAINER__MANIFEST);
}

char *trainer__path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (!p)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

void trainer__sha256_hex(const unsigned char digest[32], char out[65])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[64] = '\0';
}

static int write_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len > 0) {
		w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int trainer__file_write(struct trainer *t, const char *dir, const char *name,
			const void *data, size_t len, char *hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *path;
	int fd, err;

	if (hex) {
		if (!EVP_Digest(data ? data : "", len, md, &mdlen, EVP_sha256(),
				NULL) ||
		    mdlen != 32)
			return trainer__err(t, TRAINER_EIO,
					    "sha256 of '%s' failed", name);
		trainer__sha256_hex(md, hex);
	}
	path = trainer__path_join(dir, name);
	if (!path)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = trainer__err(t, TRAINER_EIO, "create %s: %s", path,
				   strerror(errno));
		free(path);
		return err;
	}
	if (write_all(fd, data, len) || fsync(fd)) {
		err = trainer__err(t, TRAINER_EIO, "write %s: %s", path,
				   strerror(errno));
		(void)close(fd);
		free(path);
		return err;
	}
	if (close(fd)) {
		err = trainer__err(t, TRAINER_EIO, "close %s: %s", path,
				   strerror(errno));
		free(path);
		return err;
	}
	free(path);
	return 0;
}

int trainer__dir_fsync(struct trainer *t, const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return trainer__err(t, TRAINER_EIO, "open %s: %s", dir,
				    strerror(errno));
	/* Some file systems cannot fsync a directory; that is no error. */
	if (fsync(fd) && errno != EINVAL && errno != EROFS)
		ret = trainer__err(t, TRAINER_EIO, "fsync %s: %s", dir,
				   strerror(errno));
	(void)close(fd);
	return ret;
}

int trainer__manifest_write(struct trainer *t, const char *dir,
			    const struct trainer__manifest *m)
{
	json_t *root = NULL, *files, *f;
	char *text = NULL;
	size_t i;
	int ret;

	root = json_object();
	files = json_array();
	if (!root || !files ||
	    json_object_set_new(root, "format", json_string(TRAINER__FORMAT)) ||
	    json_object_set_new(root, "step", json_integer(m->step)) ||
	    json_object_set_new(root, "rank", json_integer(m->rank)) ||
	    json_object_set_new(root, "world_size",
				json_integer(m->world_size))) {
		json_decref(files);
		goto nomem;
	}
	if (json_object_set_new(root, "files", files))
		goto nomem;
	for (i = 0; i < m->n; i++) {
		f = json_object();
		if (!f || json_array_append_new(files, f) ||
		    json_object_set_new(f, "name",
					json_string(m->files[i].name)) ||
		    json_object_set_new(
			    f, "size",
			    json_integer((json_int_t)m->files[i].size)) ||
		    json_object_set_new(f, "sha256",
					json_string(m->files[i].sha256)))
			goto nomem;
	}
	text = json_dumps(root, JSON_INDENT(2));
	if (!text)
		goto nomem;
	json_decref(root);
	ret = trainer__file_write(t, dir, TRAINER__MANIFEST, text, strlen(text),
				  NULL);
	free(text);
	return ret;
nomem:
	json_decref(root);
	return trainer__err(t, TRAINER_ENOMEM, "out of memory");
}

void trainer__manifest_release(struct trainer__manifest *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->files[i].name);
	free(m->files);
	m->files = NULL;
	m->n = 0;
}

static int is_hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

static int parse_manifest(struct trainer *t, const char *path, json_t *root,
			  struct trainer__manifest *m)
{
	json_t *files, *f, *name, *size, *sha;
	size_t i, j;

	files = json_object_get(root, "files");
	if (!json_is_object(root) ||
	    !json_is_string(json_object_get(root, "format")) ||
	    strcmp(json_string_value(json_object_get(root, "format")),
		   TRAINER__FORMAT) ||
	    !json_is_integer(json_object_get(root, "step")) ||
	    !json_is_integer(json_object_get(root, "rank")) ||
	    !json_is_integer(json_object_get(root, "world_size")) ||
	    !json_is_array(files))
		return trainer__err(t, TRAINER_EIO, "%s is not a %s manifest",
				    path, TRAINER__FORMAT);
	m->step = (int64_t)json_integer_value(json_object_get(root, "step"));
	m->rank = (int)json_integer_value(json_object_get(root, "rank"));
	m->world_size =
		(int)json_integer_value(json_object_get(root, "world_size"));
	m->n = 0;
	m->files = calloc(json_array_size(files) + 1, sizeof(*m->files));
	if (!m->files)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	json_array_foreach(files, i, f)
	{
		name = json_object_get(f, "name");
		size = json_object_get(f, "size");
		sha = json_object_get(f, "sha256");
		if (!json_is_string(name) ||
		    !trainer__name_valid(json_string_value(name)) ||
		    !json_is_integer(size) || json_integer_value(size) < 0 ||
		    !json_is_string(sha) || !is_hex64(json_string_value(sha)))
			return trainer__err(t, TRAINER_EIO,
					    "%s: files[%zu] is not a valid "
					    "entry",
					    path, i);
		for (j = 0; j < m->n; j++)
			if (!strcmp(m->files[j].name, json_string_value(name)))
				return trainer__err(t, TRAINER_EIO,
						    "%s: file '%s' listed "
						    "twice",
						    path,
						    json_string_value(name));
		m->files[m->n].name = trainer__strdup(json_string_value(name));
		if (!m->files[m->n].name)
			return trainer__err(t, TRAINER_ENOMEM, "out of memory");
		m->files[m->n].size = (uint64_t)json_integer_value(size);
		memcpy(m->files[m->n].sha256, json_string_value(sha), 65);
		m->n++;
	}
	return 0;
}

int trainer__manifest_read(struct trainer *t, const char *dir,
			   struct trainer__manifest *m)
{
	json_error_t jerr;
	struct stat st;
	json_t *root;
	char *path;
	int ret;

	memset(m, 0, sizeof(*m));
	path = trainer__path_join(dir, TRAINER__MANIFEST);
	if (!path)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	if (stat(path, &st)) {
		ret = errno == ENOENT || errno == ENOTDIR ?
			      trainer__err(t, TRAINER_ENOTFOUND,
					   "%s does not exist", path) :
			      trainer__err(t, TRAINER_EIO, "stat %s: %s", path,
					   strerror(errno));
		free(path);
		return ret;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		ret = trainer__err(t, TRAINER_EIO, "%s is not a manifest file",
				   path);
		free(path);
		return ret;
	}
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		ret = trainer__err(t, TRAINER_EIO, "%s: %s", path, jerr.text);
		free(path);
		return ret;
	}
	ret = parse_manifest(t, path, root, m);
	json_decref(root);
	free(path);
	if (ret)
		trainer__manifest_release(m);
	return ret;
}

static int read_all(int fd, unsigned char *buf, size_t len, size_t *got)
{
	ssize_t r;

	*got = 0;
	while (*got < len) {
		r = read(fd, buf + *got, len - *got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

/* Opens path into *fd: a regular file of the size the manifest says. */
static int open_sized(struct trainer *t, const char *path,
		      const struct trainer__mfile *f, int *fd)
{
	struct stat st;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st))
		return trainer__err(t, TRAINER_EIO, "open %s: %s", path,
				    strerror(errno));
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size)
		return trainer__err(t, TRAINER_EIO,
				    "%s has %lld bytes, the manifest says %llu",
				    path, (long long)st.st_size,
				    (unsigned long long)f->size);
	return 0;
}

/*
 * Reads the size bytes of fd (path), into out whole or else through buf a
 * READ_CHUNK at a time, and writes their sha256 to hex.
 */
static int sha256_fd(struct trainer *t, int fd, const char *path, uint64_t size,
		     unsigned char *out, unsigned char *buf, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	uint64_t total = 0;
	size_t got, want;
	int ret = 0;

	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		ret = trainer__err(t, TRAINER_ENOMEM, "sha256 init failed");
		goto out;
	}
	while (total < size) {
		unsigned char *p = out ? out + total : buf;

		want = size - total < READ_CHUNK ? (size_t)(size - total) :
						   READ_CHUNK;
		if (read_all(fd, p, want, &got) || got != want) {
			ret = trainer__err(t, TRAINER_EIO, "read %s: %s", path,
					   got != want ? "short read" :
							 strerror(errno));
			goto out;
		}
		if (!EVP_DigestUpdate(ctx, p, got)) {
			ret = trainer__err(t, TRAINER_EIO, "sha256 failed");
			goto out;
		}
		total += got;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != 32) {
		ret = trainer__err(t, TRAINER_EIO, "sha256 failed");
		goto out;
	}
	trainer__sha256_hex(md, hex);
out:
	EVP_MD_CTX_free(ctx);
	return ret;
}

int trainer__file_verify(struct trainer *t, const char *dir,
			 const struct trainer__mfile *f, int hash, void **data)
{
	unsigned char *buf = NULL, *out = NULL;
	char hex[65], *path;
	int fd = -1, ret = 0;

	if (data)
		*data = NULL;
	path = trainer__path_join(dir, f->name);
	if (!path)
		return trainer__err(t, TRAINER_ENOMEM, "out of memory");
	ret = open_sized(t, path, f, &fd);
	if (ret)
		goto out;
	if (!hash && !data)
		goto out;
	if (f->size > SIZE_MAX - 1) {
		ret = trainer__err(t, TRAINER_ENOMEM, "%s is too big", path);
		goto out;
	}
	if (data) {
		out = malloc(f->size ? (size_t)f->size : 1);
		if (!out) {
			ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
			goto out;
		}
	} else {
		buf = malloc(READ_CHUNK);
		if (!buf) {
			ret = trainer__err(t, TRAINER_ENOMEM, "out of memory");
			goto out;
		}
	}
	ret = sha256_fd(t, fd, path, f->size, out, buf, hex);
	if (ret)
		goto out;
	if (strcmp(hex, f->sha256)) {
		ret = trainer__err(t, TRAINER_EIO,
				   "%s: sha256 %s, the manifest says %s", path,
				   hex, f->sha256);
		goto out;
	}
	if (data) {
		*data = out;
		out = NULL;
	}
out:
	free(out);
	free(buf);
	if (fd >= 0)
		(void)close(fd);
	free(path);
	return ret;
}
