#ifndef STORAGE_STORAGE_H
#define STORAGE_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/*
 * Object storage for channels, model artifacts, output and checkpoints.
 *
 * One interface, three backends, chosen per URI (docs/storage.md):
 *
 *   file:///abs/path/...  a plain directory (or a shared filesystem);
 *   s3://bucket/key       with s3_endpoint set: a real S3-compatible store
 *                         over libcurl (SigV4, path-style addressing);
 *                         without it: the embedded store, the folder
 *                         <state_dir>/s3/<bucket>/<key> when state_dir is
 *                         set (the controller's machine), else the same
 *                         store through the controller's blob endpoint
 *                         (blob_url + blob_token).
 *
 * Every write is atomic: a reader sees the whole old object or the whole
 * new one, never a part (temp file + fsync + rename, or a completed S3
 * multipart upload). Functions return 0 or a negative ERR_* code and write
 * the reason, naming the URI, into err.
 */

/*
 * Configuration, built as servconf.c does: stor_config_init() marks every
 * field unset, stor_config_from_env() and the caller fill fields in, and
 * stor_config_fill_defaults() supplies defaults where still unset. Strings
 * are owned by the struct (malloc'ed); stor_config_release() frees them.
 */
struct stor_config {
	char *state_dir;  /* embedded store at <state_dir>/s3; NULL: remote */
	char *blob_url;	  /* controller base URL ("http://host:port") */
	char *blob_token; /* bearer token for the blob endpoint */

	char *s3_endpoint;   /* "http://host:port"; NULL: embedded store */
	char *s3_region;     /* signing region, default us-east-1 */
	char *access_key;    /* AWS_ACCESS_KEY_ID */
	char *secret_key;    /* AWS_SECRET_ACCESS_KEY */
	char *session_token; /* AWS_SESSION_TOKEN, may stay NULL */
	char *ca_file; /* TRAINCTL_CA_FILE / AWS_CA_BUNDLE: CAs for https */
	char *fence;   /* blob PUTs: X-Trainctl-Fence "job/uid/attempt" */
	/* Blob requests with a token: X-Trainctl-Job, the job they are for
	 * (the controller allows what the job's owner may reach). */
	char *job;

	int64_t multipart_threshold; /* bytes: larger puts are multipart */
	int64_t part_size;	     /* bytes per part (and per ranged get) */
	int parallel;		     /* parts in flight at once */
	int max_attempts;	     /* per request, 5xx and throttling only */
	int retry_base_ms;	     /* first backoff; doubles, with jitter */
	int timeout_s;		     /* no progress for this long: fail */

	int64_t unpack_max_bytes; /* archive extraction caps */
	int64_t unpack_max_entries;

	char *amz_date; /* tests only: a fixed X-Amz-Date ("20240101T...Z") */
};

void stor_config_init(struct stor_config *cfg);

/*
 * Fills unset fields from the environment: TRAINCTL_S3_ENDPOINT or
 * AWS_ENDPOINT_URL_S3 (endpoint), AWS_REGION / AWS_DEFAULT_REGION,
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 * TRAINCTL_STATE_DIR (use the embedded store's folder directly),
 * TRAINCTL_BLOB_TOKEN or TRAINCTL_TOKEN, and TRAINCTL_S3_PART_SIZE /
 * TRAINCTL_S3_MULTIPART_THRESHOLD (bytes). Returns 0, or ERR_INVALID when
 * a number is malformed (err says which variable).
 */
int stor_config_from_env(struct stor_config *cfg, struct buf *err);

void stor_config_fill_defaults(struct stor_config *cfg);

/* Frees the strings and marks every field unset again. */
void stor_config_release(struct stor_config *cfg);

/* Sets *field to a copy of value (NULL clears it), freeing the old one. */
void stor_config_set(char **field, const char *value);

/*
 * One object (or file) as listed: key is the full key within its bucket
 * (for file:// the absolute path without its leading '/'). etag is S3's
 * ETag without quotes ("" when unknown; "<md5>-<n>" after a multipart
 * upload), md5 and sha256 are lower-case hex or "" when not computed.
 */
struct stor_object {
	char *key;
	int64_t size;
	int64_t mtime_ms;
	char etag[80];
	char md5[33];
	char sha256[65];
};

void stor_object_release(struct stor_object *obj);

/* A growable array of objects, sorted by key (byte order, as S3 does). */
struct stor_list {
	struct stor_object *v;
	size_t n;
	size_t alloc;
};

#define STOR_LIST_INIT     \
	{                  \
		NULL, 0, 0 \
	}

/* Appends a copy of key with size and mtime; returns the new entry. */
struct stor_object *stor_list_push(struct stor_list *l, const char *key,
				   int64_t size, int64_t mtime_ms);
void stor_list_sort(struct stor_list *l);
void stor_list_release(struct stor_list *l);

/* Counters of one directory transfer. */
struct stor_sync_stats {
	size_t files;	/* transferred */
	size_t skipped; /* unchanged (STOR_SYNC_CHANGED) */
	int64_t bytes;
};

/* stor_put_dir() flags. */
enum stor_sync_flag {
	/* Skip files whose remote copy has the same size and is not older. */
	STOR_SYNC_CHANGED = 1,
	/*
	 * A checkpoint folder (docs/checkpoints.md): files under a folder
	 * named ".tmp-*" (a save in progress) are left out, and every
	 * MANIFEST.json goes after all other files, so a checkpoint's
	 * manifest is never stored before its data.
	 */
	STOR_SYNC_CHECKPOINT = 2
};

/* A storage session: configuration plus reusable connections. */
struct stor;

/*
 * Opens a session with a copy of cfg (defaults filled in). Never fails
 * for lack of configuration: an s3:// URI that no backend can serve fails
 * when used. Returns 0, or ERR_IO when libcurl cannot start. The caller
 * frees it with stor_close(). curl_global_init() must have been called.
 */
int stor_open(const struct stor_config *cfg, struct stor **out,
	      struct buf *err);
void stor_close(struct stor *s);

/* The effective configuration of s (borrowed). */
const struct stor_config *stor_config_of(const struct stor *s);

/*
 * Lists every object whose key starts with uri's key (recursively, S3
 * prefix semantics; a file:// URI naming a directory lists its tree, one
 * naming a file lists that file). A prefix that matches nothing gives an
 * empty list. out must be empty (STOR_LIST_INIT); the caller releases it,
 * also on failure.
 */
int stor_list(struct stor *s, const char *uri, struct stor_list *out,
	      struct buf *err);

/*
 * Size, mtime and ETag of one object. Returns ERR_NOTFOUND when there is
 * none. The caller releases out (on success only).
 */
int stor_stat(struct stor *s, const char *uri, struct stor_object *out,
	      struct buf *err);

/*
 * Downloads uri into the local file path, atomically (a temp file beside
 * path, renamed over it when complete and checked: the size always, the
 * MD5 against a single-part ETag). info, when not NULL, receives what was
 * learnt (the caller releases it on success). ERR_NOTFOUND: no object.
 */
int stor_get(struct stor *s, const char *uri, const char *path,
	     struct stor_object *info, struct buf *err);

/*
 * Uploads the local file path to uri, atomically: a single PUT up to
 * multipart_threshold, a multipart upload above it (aborted on failure).
 * info, when not NULL, receives size and checksums.
 */
int stor_put(struct stor *s, const char *path, const char *uri,
	     struct stor_object *info, struct buf *err);

/*
 * Receives the next n bytes of a streamed object. Returns 0 to go on;
 * anything else stops the transfer, and stor_get_stream() returns it.
 */
typedef int stor_stream_fn(void *arg, const char *data, size_t n);

/*
 * Streams the object uri to fn, in order, as it arrives: nothing is kept
 * but one buffer of it (at most STOR_STREAM_CHUNK bytes from a file, what
 * libcurl hands over from the network). Answers that say "try again" are
 * retried as by stor_get(); a transfer that breaks after some bytes went
 * to fn goes on from there (a Range request, If-Match on S3's ETag; a
 * server that sends the whole object again has its start skipped), so fn
 * sees every byte once. There is no low-speed limit: fn may block as long
 * as its reader takes (a server that drops the idle connection meanwhile
 * is asked for the rest). *size, when not NULL, gets the bytes delivered.
 * ERR_NOTFOUND: no object.
 */
#define STOR_STREAM_CHUNK (1u << 20)
int stor_get_stream(struct stor *s, const char *uri, stor_stream_fn *fn,
		    void *arg, int64_t *size, struct buf *err);

/* Deletes one object. A missing object is not an error (as in S3). */
int stor_delete(struct stor *s, const char *uri, struct buf *err);

/*
 * Downloads every object under uri (a prefix) into dir, at its key
 * relative to the prefix ("s3://b/data/train" + "data/train/a/x.csv" ->
 * dir/a/x.csv), creating folders as needed. Keys that would land outside
 * dir are refused. stats may be NULL.
 */
int stor_get_prefix(struct stor *s, const char *uri, const char *dir,
		    struct stor_sync_stats *stats, struct buf *err);

/*
 * Uploads every regular file under dir to uri + '/' + its relative path
 * (symlinks and special files are skipped). flags: enum stor_sync_flag.
 */
int stor_put_dir(struct stor *s, const char *dir, const char *uri,
		 unsigned flags, struct stor_sync_stats *stats,
		 struct buf *err);

/*
 * The checkpoint mirror: stor_put_dir(STOR_SYNC_CHANGED |
 * STOR_SYNC_CHECKPOINT) of the files written since since_ms (wall clock
 * ms: when this host's program started; what it restored is older), and
 * the stored libtrainer checkpoints that program pruned are deleted.
 * A file outside a libtrainer checkpoint goes once it is complete: listed
 * in complete (key relative to dir, with the size and mtime it had when
 * it was closed after writing or renamed into place; sorted, may be
 * NULL), or final (the program has ended: every file is), or unwritten
 * for 2 s.
 */
struct stor_ckpt_sync {
	int64_t since_ms;
	const struct stor_list *complete;
	int final;
};

int stor_sync_checkpoints(struct stor *s, const char *dir, const char *uri,
			  const struct stor_ckpt_sync *opt,
			  struct stor_sync_stats *stats, struct buf *err);

/* --- archive.c: tar.gz with libarchive ------------------------------- */

/*
 * Packs the trees of dirs[0..ndirs) into one gzip'ed tar at out_path
 * (atomically), names relative to each dir, as SageMaker merges every
 * host's /opt/ml/model into one model.tar.gz. When two dirs hold the same
 * name the later one's entry comes later and wins on extraction. Regular
 * files, folders and symlinks are stored; sockets and devices skipped.
 */
int stor_archive_pack(const char *const *dirs, size_t ndirs,
		      const char *out_path, struct buf *err);

/*
 * Default caps of one extraction. Models above 8 GiB need a larger
 * unpack_max_bytes; a header that claims more than the free space of the
 * target's filesystem is refused whatever the cap.
 */
#define STOR_UNPACK_MAX_BYTES (8LL << 30)
#define STOR_UNPACK_MAX_ENTRIES 1000000

/* Limits of one extraction; 0 takes the defaults above. */
struct stor_unpack_limits {
	int64_t max_bytes;
	int64_t max_entries;
};

/*
 * Extracts the gzip'ed (or plain) tar at archive_path into dir (created
 * if missing). Refuses, with an error naming the entry, absolute names,
 * '..' components, symlinks whose target leaves dir, hard links to names
 * outside dir, names that pass through a symlink, devices and fifos, and
 * archives that claim (in any header) or hold more than the limits.
 * Nothing is ever written outside dir; on failure what was extracted
 * before the bad entry stays inside dir.
 */
int stor_archive_unpack(const char *archive_path, const char *dir,
			const struct stor_unpack_limits *lim, struct buf *err);

/* --- uri.c ------------------------------------------------------------ */

enum stor_scheme { STOR_SCHEME_FILE = 1, STOR_SCHEME_S3 };

/* A parsed URI; strings owned by the struct. */
struct stor_uri {
	enum stor_scheme scheme;
	char *bucket; /* s3: the bucket; file: NULL */
	char *key;    /* s3: the key ("" for the bucket); file: the path
		       * without its leading '/' */
};

/*
 * Parses "file:///abs/path" or "s3://bucket[/key]". Checks the bucket name
 * (S3 rules) and the key (stor_key_check(), allowing "" and a trailing '/'
 * for prefixes). Returns 0 or ERR_INVALID; the caller releases out on
 * success only.
 */
int stor_uri_parse(const char *uri, struct stor_uri *out, struct buf *err);
void stor_uri_release(struct stor_uri *u);

/*
 * Checks that key can name a file under a root folder without leaving it:
 * at most 1024 bytes, not starting with '/', no empty, "." or ".."
 * components, no control characters, no component starting with the
 * temp-file prefix. is_prefix allows "" and a trailing '/'. Returns 0 or
 * ERR_INVALID with err saying why.
 */
int stor_key_check(const char *key, int is_prefix, struct buf *err);

/* Checks an S3 bucket name (3-63 of [a-z0-9.-], alnum at both ends). */
int stor_bucket_check(const char *bucket, struct buf *err);

/* Lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void stor_hex(const unsigned char *in, size_t n, char *out);

/*
 * Appends s percent-encoded as SigV4 and S3 want: unreserved characters
 * (A-Z a-z 0-9 - . _ ~) as they are, '/' too when keep_slash, everything
 * else as %XX (upper case).
 */
void stor_uri_encode(struct buf *out, const char *s, int keep_slash);

#endif
