#ifndef AGENT_UPLOAD_H
#define AGENT_UPLOAD_H

/* Packing, artifact upload and the checkpoint mirror (agent/upload.c). */
#include <stdint.h>

#include "agent/http.h"
#include "common/buf.h"

struct agent_ctx;
struct agent_assign;

enum agent_upload_result {
	AGENT_UPLOAD_WAIT,  /* nothing more to do this turn */
	AGENT_UPLOAD_DONE,  /* both artifacts are with the controller */
	AGENT_UPLOAD_FAILED /* err says why */
};
/*
 * Packs, then PUTs the artifacts, one step per call. A PUT calls
 * put_done when it ends, which hands the request to
 * agent_upload_put_done().
 */
enum agent_upload_result agent_upload_step(struct agent_ctx *ctx,
					   struct agent_assign *a, int64_t now,
					   agent_req_fn *put_done,
					   struct buf *err);
enum agent_put_result {
	AGENT_PUT_UPLOADED, /* the next step may go on */
	AGENT_PUT_RETRY,    /* to be tried again later: msg says why */
	AGENT_PUT_FAILED    /* refused, or too many tries: msg says why */
};
/*
 * Takes the outcome of an artifact PUT. *lost: the controller no longer
 * knows this agent (register again).
 */
enum agent_put_result agent_upload_put_done(struct agent_assign *a,
					    const struct agent_req *req,
					    int *lost, struct buf *msg);
void agent_upload_cancel(struct agent_ctx *ctx, struct agent_assign *a);
/* final: the ranks have ended, so every file is complete. */
int agent_ckpt_sync_start(struct agent_ctx *ctx, struct agent_assign *a,
			  int final, struct buf *err);
/* A finished sync worker: logs a failure and frees the task slot. */
void agent_ckpt_sync_done(struct agent_ctx *ctx, struct agent_assign *a);

#endif
