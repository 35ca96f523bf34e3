#ifndef S3D_MULTIPART_H
#define S3D_MULTIPART_H

/* S3's multipart uploads (multipart.c). Internal to storage/s3d/. */
#include "storage/s3d/request.h"

/* <uploads>/<id>: the folder of upload id. */
void s3d__upload_dir(const struct s3d *s, const char *id, struct buf *out);

/* The checks the headers allow before the body comes: 0 or -1. */
int s3d__begin_create_upload(struct s3d *s);
int s3d__begin_upload_part(struct s3d *s);

void s3d__op_create_upload(struct s3d *s, struct s3d_reply *r);
void s3d__op_upload_part(struct s3d *s, struct s3d_reply *r);
void s3d__op_complete_upload(struct s3d *s, struct s3d_reply *r);
void s3d__op_abort_upload(struct s3d *s, struct s3d_reply *r);
void s3d__op_list_parts(struct s3d *s, struct s3d_reply *r);

#endif
