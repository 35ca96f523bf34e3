#ifndef S3D_LISTING_H
#define S3D_LISTING_H

/* S3's listings of a bucket (listing.c). Internal to storage/s3d/. */
#include "storage/s3d/request.h"

/* ListObjects, or ListObjectsV2 when v2. */
void s3d__op_list_objects(struct s3d *s, struct s3d_reply *r, int v2);
void s3d__op_list_uploads(struct s3d *s, struct s3d_reply *r);

#endif
