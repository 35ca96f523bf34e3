#ifndef CTRL_LOGVIEW_H
#define CTRL_LOGVIEW_H

/*
 * The log views of a job (controller/obs/logview.c, docs/web.md), for a name
 * the caller may see:
 *   GET /v1/training-jobs/NAME/logs/streams    the streams, labelled
 *       "attempt K · algo-N", with their start and size;
 *   GET /v1/training-jobs/NAME/logs/search     matching lines with their
 *       context (q, regex=1, host, attempt, level=stderr|error, context,
 *       limit; first_error=1: the line to jump to when a rank failed);
 *   GET /v1/training-jobs/NAME/logs/download   the log as text, every
 *       stream merged by time (or ?stream=S), as an attachment.
 */
#include "controller/request.h"

struct ctrl_ctx;
struct ctrl_response;
struct MHD_Connection;
struct ctrl_logsearch;

void ctrl_logview_streams(struct ctrl_ctx *ctx, const char *job,
			  struct ctrl_response *resp);

/*
 * The search runs on an I/O worker with conn suspended: the first call
 * checks the query, hands it over and answers CTRL_ROUTE_SUSPENDED (or
 * fills resp: a bad query, 429 when SEARCH_SLOTS searches run already);
 * the call after conn is resumed fills resp from *state. *state is the
 * request's, NULL at first; ctrl_logsearch_free() frees it when the
 * request ends.
 */
enum ctrl_route_result ctrl_logview_search(struct ctrl_ctx *ctx,
					   struct MHD_Connection *conn,
					   const char *job,
					   struct ctrl_logsearch **state,
					   struct ctrl_response *resp);
void ctrl_logsearch_free(struct ctrl_logsearch *s);
void ctrl_logview_download(struct ctrl_ctx *ctx, struct MHD_Connection *conn,
			   const char *job, struct ctrl_response *resp);

#endif
