#ifndef S3D_OBJECT_H
#define S3D_OBJECT_H

/* S3 operations on one object (object.c). Internal to storage/s3d/. */
#include "storage/s3d/request.h"

/* PutObject's checks on its headers, and its temp file opened. 0 or -1
 * (refusal remembered). */
int s3d__begin_put_object(struct s3d *s);

void s3d__op_put_object(struct s3d *s, struct s3d_reply *r);
/* GetObject, or HeadObject when head. */
void s3d__op_get_object(struct s3d *s, struct s3d_reply *r, int head);
void s3d__op_delete_object(struct s3d *s, struct s3d_reply *r);
void s3d__op_copy_object(struct s3d *s, struct s3d_reply *r);

#endif
