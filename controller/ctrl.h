#ifndef CTRL_CTRL_H
#define CTRL_CTRL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "api/sigv4.h"
#include "common/buf.h"

struct db;
struct MHD_Daemon;

/* Effective configuration (controller/config.c). */
struct ctrl_config {
	char *listen; /* "HOST:PORT" */
	char *state_dir;
	char *credentials_file; /* NULL: requests are not authenticated */
	char *region;
	char *account_id;
	int threads;   /* HTTP worker threads */
	long body_max; /* bytes */
	int verbose;
	int check_only;
};

/* Everything the controller owns; passed first to every function. */
struct ctrl_ctx {
	struct ctrl_config cfg;
	struct db *db;
	struct MHD_Daemon *httpd;
	struct api_credentials creds;
	int auth_enabled;

	/* The reconciler: one thread, woken when a fact changes. */
	pthread_t reconciler;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int dirty;
	int stopping;
};

/* config.c */
void ctrl_config_init(struct ctrl_config *cfg);
int ctrl_config_parse_args(struct ctrl_config *cfg, int argc, char **argv,
			   struct buf *err);
void ctrl_config_fill_defaults(struct ctrl_config *cfg);
int ctrl_config_check(const struct ctrl_config *cfg, struct buf *err);
void ctrl_config_print(const struct ctrl_config *cfg);
void ctrl_config_release(struct ctrl_config *cfg);
void ctrl_usage(void);

/* http.c */
int ctrl_http_start(struct ctrl_ctx *ctx, struct buf *err);
void ctrl_http_stop(struct ctrl_ctx *ctx);

/* reconciler.c */
int ctrl_reconciler_start(struct ctrl_ctx *ctx);
void ctrl_reconciler_stop(struct ctrl_ctx *ctx);
/* Records that something changed; the reconciler looks again soon. */
void ctrl_reconciler_wake(struct ctrl_ctx *ctx);

/* The ARN of a training job (owned by the caller). */
char *ctrl_job_arn(const struct ctrl_ctx *ctx, const char *name);

#endif
