#ifndef CTRL_LOGVIEW_H
#define CTRL_LOGVIEW_H

/*
 * The log views of a job (controller/logview.c, docs/web.md), for a name
 * the caller may see:
 *   GET /v1/training-jobs/NAME/logs/streams    the streams, labelled
 *       "attempt K · algo-N", with their start and size;
 *   GET /v1/training-jobs/NAME/logs/search     matching lines with their
 *       context (q, regex=1, host, attempt, level=stderr|error, context,
 *       limit; first_error=1: the line to jump to when a rank failed);
 *   GET /v1/training-jobs/NAME/logs/download   the log as text, every
 *       stream merged by time (or ?stream=S), as an attachment.
 */
struct ctrl_ctx;
struct ctrl_response;
struct MHD_Connection;

void ctrl_logview_streams(struct ctrl_ctx *ctx, const char *job,
			  struct ctrl_response *resp);
void ctrl_logview_search(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			 const char *job, struct ctrl_response *resp);
void ctrl_logview_download(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			   const char *job, struct ctrl_response *resp);

#endif
