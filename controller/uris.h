#ifndef CTRL_URIS_H
#define CTRL_URIS_H

/*
 * Which locations a request may name (docs/security.md): the one check of
 * every URI of a training job (api_job_spec_uris() lists them), for the
 * caller that sends it and for the owner of a job created on a user's
 * behalf (a tuning job's training jobs), and of the blob requests an
 * agent makes for a job.
 */
#include "common/buf.h"

struct ctrl_ctx;
struct ctrl_caller;
struct api_job_spec;
struct api_assignment;

/*
 * Whether who may name every URI of spec: a file:// one lies under the
 * controller's --allow-file-root folders, an s3:// one within the S3
 * prefixes of who's key (a caller without a key, as for the jobs a tuning
 * job creates: those of its owner's keys). Returns 0, or ERR_INVALID with
 * err naming the member and the URI.
 */
int ctrl_uris_check(struct ctrl_ctx *ctx, const struct ctrl_caller *who,
		    const struct api_job_spec *spec, struct buf *err);

/*
 * Whether a job owner may reach "bucket/key" (a listing: "bucket/prefix"):
 * a key of the owner's is admin or has a prefix of it. Always when the
 * controller has no credentials or the job no owner.
 */
int ctrl_uris_owner_allows(const struct ctrl_ctx *ctx, const char *owner,
			   const char *bucket_key);

/*
 * The locations a job of owner may name, for its assignments (the agent
 * checks the URIs it stages against them, a manifest's objects included):
 * every s3:// URI when the controller has no credentials, the job no owner
 * or the owner an admin key, else the S3 prefixes of the owner's keys;
 * every file:// path when the controller has neither credentials nor
 * --allow-file-root, else those folders.
 */
void ctrl_uris_owner_locations(const struct ctrl_ctx *ctx, const char *owner,
			       struct api_assignment *a);

#endif
