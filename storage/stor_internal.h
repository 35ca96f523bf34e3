#ifndef STORAGE_STOR_INTERNAL_H
#define STORAGE_STOR_INTERNAL_H

/*
 * Internals shared by the storage/ files; nothing outside storage/ (but
 * its tests) includes this header.
 */
#include <stdint.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "common/buf.h"
#include "storage/storage.h"

/*
 * Names of in-progress temp files start with this. Keys may not use it,
 * and listings skip it, so a half-written file is never an object.
 */
#define STOR_TMP_PREFIX ".trainctl-tmp."

/* Caps on what is kept in memory from a response. */
#define STOR_MAX_BODY (8u * 1024 * 1024)
#define STOR_MAX_ERROR_BODY (64u * 1024)

/* I/O chunk for read/write loops and curl's buffers. */
#define STOR_IO_CHUNK (4u * 1024 * 1024)

struct stor {
	struct stor_config cfg;
	CURL *curl; /* reused for every sequential request */
};

struct stor_target;

/*
 * One backend: the object calls of storage.h for a resolved URI. Each
 * explains a failure in err without the URI (store.c prefixes it).
 * stor__resolve() picks the backend; adding one is a new table in its own
 * file and a line there.
 */
struct stor_backend {
	const char *name;
	int (*list)(struct stor *s, const struct stor_target *t,
		    struct stor_list *out, struct buf *err);
	int (*stat)(struct stor *s, const struct stor_target *t,
		    struct stor_object *out, struct buf *err);
	int (*get)(struct stor *s, const struct stor_target *t,
		   const char *path, struct stor_object *info, struct buf *err);
	int (*get_stream)(struct stor *s, const struct stor_target *t,
			  stor_stream_fn *fn, void *arg, int64_t *size,
			  struct buf *err);
	int (*put)(struct stor *s, const struct stor_target *t,
		   const char *path, struct stor_object *info, struct buf *err);
	int (*delete_object)(struct stor *s, const struct stor_target *t,
			     struct buf *err);
};

/* file:// and the local embedded store (fs.c) */
extern const struct stor_backend stor__fs_backend;
/* a real S3-compatible endpoint (s3.c) */
extern const struct stor_backend stor__s3_backend;
/* the embedded store through the controller (blob_client.c) */
extern const struct stor_backend stor__blob_backend;

struct stor_target {
	const struct stor_backend *be;
	struct stor_uri uri;
	char *root; /* stor__fs_backend: the folder keys are relative to */
};

/*
 * Parses uri and picks its backend from s's configuration. Returns 0, or
 * ERR_INVALID (bad URI, or s3:// with no backend configured). The caller
 * releases t on success.
 */
int stor__resolve(struct stor *s, const char *uri, struct stor_target *t,
		  struct buf *err);
void stor__target_release(struct stor_target *t);

/* list.c: the object of a sorted list (stor_list_sort()) with key, or NULL. */
const struct stor_object *stor__list_find(const struct stor_list *l,
					  const char *key);

/* --- digest.c --------------------------------------------------------- */

/* MD5 and SHA-256 of a stream, either of them optional. */
struct stor_digest {
	EVP_MD_CTX *md5;
	EVP_MD_CTX *sha256;
};

void stor_digest_init(struct stor_digest *d, int md5, int sha256);
void stor_digest_reset(struct stor_digest *d);
void stor_digest_update(struct stor_digest *d, const void *p, size_t n);
/* Writes hex digests ("" for one not computed) and frees the contexts. */
void stor_digest_final(struct stor_digest *d, char md5[33], char sha256[65]);
void stor_digest_release(struct stor_digest *d);

/*
 * Digests len bytes of fd from off (pread, so the offset is untouched).
 * md5_raw receives the 16 raw bytes when not NULL. Returns 0 or ERR_IO.
 */
int stor_digest_fd(int fd, int64_t off, int64_t len, char md5[33],
		   unsigned char md5_raw[16], char sha256[65], struct buf *err);

/* Base64 of n bytes. */
void stor__base64(const unsigned char *in, size_t n, struct buf *out);

/* --- http.c: one HTTP exchange with retries ---------------------------- */

struct stor_http_req {
	const char *method; /* GET PUT POST DELETE HEAD */
	const char *url;
	struct curl_slist *headers; /* borrowed */
	int sign;		    /* SigV4 "aws:amz:<region>:s3" */

	/* Request body: in_fd >= 0 (in_len bytes from in_off) or in_mem. */
	int in_fd;
	int64_t in_off;
	int64_t in_len;
	const char *in_mem;
	size_t in_mem_len;

	/*
	 * Response body of a 2xx answer: out_fd >= 0 writes it at out_off
	 * (pwrite); otherwise it goes into resp->body (capped).
	 */
	int out_fd;
	int64_t out_off;
	/*
	 * Or, with out_fn set, the body of a 2xx answer goes to out_fn as it
	 * arrives (storage.h's stor_get_stream()); no retry here once a byte
	 * went there (stor_http_get_stream() resumes), no low-speed limit.
	 */
	stor_stream_fn *out_fn;
	void *out_arg;
	int out_ret; /* what out_fn returned when it stopped the transfer */
	int64_t out_skip; /* a 200 answer's first bytes not for out_fn (a
			   * resumed stream whose server ignored Range) */

	/* Digests of the bytes sent (upload) or received into out_fd. */
	int want_md5;
	int want_sha256;
};

struct stor_http_resp {
	long status;
	char etag[80];		/* without quotes */
	int64_t content_length; /* -1 when absent */
	int64_t last_modified_ms;
	int64_t received; /* body bytes written to out_fd */
	struct buf body;
	char md5[33];
	char sha256[65];
	int attempts;
};

void stor_http_req_init(struct stor_http_req *req, const char *method,
			const char *url);
void stor_http_resp_init(struct stor_http_resp *resp);
void stor_http_resp_release(struct stor_http_resp *resp);

/*
 * Performs req on the easy handle c (s->curl or a worker's own), retrying
 * with exponential backoff and jitter on 500/502/503/504, 429 and S3's
 * throttling codes, and on transport errors that may be transient (reset
 * or dropped connections, timeouts). Returns 0 once an answer arrived,
 * whatever its status (resp holds it), or ERR_IO when none did.
 */
int stor_http_do(struct stor *s, CURL *c, struct stor_http_req *req,
		 struct stor_http_resp *resp, struct buf *err);

/*
 * A GET streamed to fn (stor_get_stream()) that resumes where it broke:
 * after a transfer failed mid-way it asks again for the rest, with a
 * Range (and If-Match on the first answer's ETag when if_match), up to
 * max_attempts times in a row without progress. A server that answers the
 * Range with the whole object (200) has its first bytes skipped, provided
 * the size did not change.
 */
struct stor_http_stream {
	const char *url;
	const struct curl_slist *headers; /* borrowed; Range is added */
	int sign;
	int if_match;
	stor_stream_fn *fn;
	void *arg;
	int64_t delivered; /* bytes given to fn */
	int64_t total;	   /* the object's size, -1 until known */
	char etag[80];
};

/*
 * Returns what fn returned when it stopped the stream, or 0 once an answer
 * came (resp holds the last one: a non-2xx is the caller's to describe),
 * or ERR_IO when the stream could not be completed.
 */
int stor_http_get_stream(struct stor *s, struct stor_http_stream *g,
			 struct stor_http_resp *resp, struct buf *err);

/*
 * An object service over HTTP (S3, the controller's blob endpoint) as the
 * listing, stat and delete calls below see it: how to name an object and
 * a listing page, send a bodyless request and describe a non-2xx answer.
 */
struct stor_http_service {
	const char *list_op, *stat_op, *delete_op; /* for messages */
	int stat_etag; /* a HEAD answer's ETag is the object's */
	void (*object_url)(const struct stor *s, struct buf *url,
			   const char *bucket, const char *key);
	/* A listing page of prefix, after token (NULL for the first). */
	void (*list_url)(const struct stor *s, struct buf *url,
			 const char *bucket, const char *prefix,
			 const char *token);
	int (*simple)(struct stor *s, const char *method, const char *url,
		      struct stor_http_resp *resp, struct buf *err);
	int (*error)(const struct stor_http_resp *resp, const char *what,
		     struct buf *err);
	/* Appends one page's objects to out; *next: the token or NULL. */
	int (*list_page)(const char *body, size_t len, struct stor_list *out,
			 char **next, struct buf *err);
};

/* Lists prefix page by page into out, sorted. */
int stor__http_list(struct stor *s, const struct stor_http_service *svc,
		    const char *bucket, const char *prefix,
		    struct stor_list *out, struct buf *err);
/* HEAD of one object; 200 fills out (key, size, mtime, ETag). */
int stor__http_stat(struct stor *s, const struct stor_http_service *svc,
		    const char *bucket, const char *key,
		    struct stor_object *out, struct buf *err);
/* DELETE of one object; a missing one is not an error. */
int stor__http_delete(struct stor *s, const struct stor_http_service *svc,
		      const char *bucket, const char *key, struct buf *err);

/*
 * Opens the file an upload sends: *fd (read-only) and *st. Returns 0, or
 * ERR_NOTFOUND / ERR_IO (cannot open) or ERR_INVALID (not a regular
 * file) with err saying so and nothing left open.
 */
int stor__http_open_upload(const char *path, int *fd, struct stat *st,
			   struct buf *err);

/* Sets the options every handle needs (buffers, timeouts). */
void stor_http_setup(struct stor *s, CURL *c);

/* Is this status (and S3 error code, may be NULL) worth retrying? */
int stor_http_retryable(long status, const char *code);

/* s3_xml.c: S3's XML bodies, parsed with libxml2. */

/*
 * Parses a ListBucketResult, appending its objects to out. *next gets the
 * NextContinuationToken (malloc'ed) when IsTruncated, else NULL.
 */
int stor__s3_xml_list(const char *xml, size_t len, struct stor_list *out,
		      char **next, struct buf *err);
/* Parses InitiateMultipartUploadResult; *upload_id is malloc'ed. */
int stor__s3_xml_upload_id(const char *xml, size_t len, char **upload_id,
			   struct buf *err);
/*
 * Parses an <Error> body into code and message (malloc'ed, "" when the
 * body is not one). Returns 1 when the body is an <Error>, else 0.
 */
int stor__s3_xml_error(const char *xml, size_t len, char **code,
		       char **message);
/* Parses CompleteMultipartUploadResult's ETag (which may be an Error). */
int stor__s3_xml_complete(const char *xml, size_t len, char *etag,
			  size_t etag_size, struct buf *err);

/* Parses an RFC 3339 ("2024-01-01T00:00:00.000Z") or RFC 1123 date. */
int64_t stor__parse_time(const char *s);

#endif
