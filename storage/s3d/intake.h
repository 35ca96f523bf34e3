#ifndef S3D_INTAKE_H
#define S3D_INTAKE_H

/*
 * The body of an S3 request (intake.c): where its bytes go, the checks
 * when it ends, the headers an object keeps and the commit of a finished
 * temp file. Internal to storage/s3d/.
 */
#include <jansson.h>

#include "storage/s3d/meta.h"
#include "storage/s3d/request.h"

/* Sets up the request's body: the temp file beside path or the XML
 * buffer. Returns 0 or -1 (refusal remembered). */
int s3d__intake_file(struct s3d *s, const char *path, int64_t limit);
int s3d__intake_xml(struct s3d *s);

/* Flushes and checks the body; 0 when it may be committed. */
int s3d__intake_end(struct s3d *s);

/* The kept headers of a PUT or a multipart start (JSON object, may be
 * NULL); remembers a refusal for headers that cannot be honoured. */
int s3d__kept_headers(struct s3d *s, json_t **out);

/*
 * Makes the temp file s->tmp the file s->path: o's metadata on the
 * inode, then (flushed when flush) renamed into place. Returns 0, or -1
 * with the refusal remembered (a key that is also a folder of others,
 * a write that failed). The temp file is gone either way.
 */
int s3d__commit(struct s3d *s, const struct s3d_obj *o, int flush);

#endif
