#ifndef S3D_BUCKET_H
#define S3D_BUCKET_H

/* S3 operations on buckets (bucket.c). Internal to storage/s3d/. */
#include "storage/s3d/request.h"

void s3d__op_list_buckets(struct s3d *s, struct s3d_reply *r);
void s3d__op_create_bucket(struct s3d *s, struct s3d_reply *r);
void s3d__op_head_bucket(struct s3d *s, struct s3d_reply *r);
void s3d__op_delete_bucket(struct s3d *s, struct s3d_reply *r);
void s3d__op_bucket_location(struct s3d *s, struct s3d_reply *r);
void s3d__op_bucket_versioning(struct s3d *s, struct s3d_reply *r);
void s3d__op_delete_objects(struct s3d *s, struct s3d_reply *r);

#endif
