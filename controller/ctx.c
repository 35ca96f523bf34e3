#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctrl.h"
#include "controller/hosts.h"
#include "controller/jobrt.h"
#include "controller/rendezvous.h"
#include "controller/sched/pass.h"
#include "controller/stragwatch.h"
#include "controller/tuning.h"
#include "common/bug.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/banned.h"

static void dcache_free(struct ctrl_dcache *dc)
{
	size_t i;

	if (!dc)
		return;
	for (i = 0; i < CTRL_DCACHE_SLOTS; i++) {
		free(dc->slots[i].name);
		free(dc->slots[i].owner);
		free(dc->slots[i].body);
	}
	for (i = 0; i < CTRL_DCACHE_STRIPES; i++)
		pthread_mutex_destroy(&dc->lock[i]);
	free(dc);
}

void ctrl_ctx_init(struct ctrl_ctx *ctx)
{
	size_t i;

	memset(ctx, 0, sizeof(*ctx));
	ctx->tuning.dirty = 1;
	ctrl_config_init(&ctx->cfg);
	pthread_mutex_init(&ctx->lock, NULL);
	/* The reconciler's sleeps are timed on the monotonic clock. */
	if (time_cond_init_mono(&ctx->wake))
		BUG("cannot initialize the reconciler's condition");
	pthread_mutex_init(&ctx->hosts_lock, NULL);
	pthread_cond_init(&ctx->prov_done, NULL);
	pthread_mutex_init(&ctx->jobs_lock, NULL);
	ctx->dcache = xcalloc(1, sizeof(*ctx->dcache));
	for (i = 0; i < CTRL_DCACHE_STRIPES; i++)
		pthread_mutex_init(&ctx->dcache->lock[i], NULL);
	ctx->strag = ctrl_stragwatch_new();
}

void ctrl_ctx_release(struct ctrl_ctx *ctx)
{
	ctrl_jobrt_release_all(ctx);
	ctrl_hosts_release(ctx);
	ctrl_rdzv_release(ctx);
	ctrl_tuning_release(ctx);
	ctrl_sched_mem_free(ctx->sched);
	ctx->sched = NULL;
	dcache_free(ctx->dcache);
	ctx->dcache = NULL;
	ctrl_stragwatch_free(ctx->strag);
	ctx->strag = NULL;
	api_credentials_release(&ctx->creds);
	ctrl_registry_release(&ctx->registry);
	if (ctx->tls_key_pem) {
		OPENSSL_cleanse(ctx->tls_key_pem, strlen(ctx->tls_key_pem));
		free(ctx->tls_key_pem);
	}
	free(ctx->tls_cert_pem);
	free(ctx->tls_ca_pem);
	free(ctx->tls_ca_path);
	free(ctx->blob_root);
	free(ctx->s3_uploads);
	ctrl_config_release(&ctx->cfg);
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->wake);
	pthread_mutex_destroy(&ctx->hosts_lock);
	pthread_cond_destroy(&ctx->prov_done);
	pthread_mutex_destroy(&ctx->jobs_lock);
}
